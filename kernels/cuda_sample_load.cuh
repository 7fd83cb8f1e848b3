// How the CUDA kernels read stored sample values, shared by the float32 decode
// (kernels/cuda_kernels.cu) and the bf16 one (kernels/cuda_bf16_kernels.cu): LoadSample<D> reads
// element i as float, and WithSampleDType calls a launcher with the dtype as a compile-time
// constant. Device code and a host helper; include from .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace rf::cuda {

template <DType D>
__device__ inline float LoadSample(const void* base, size_t i) {
  if constexpr (D == DType::kUInt8) {
    return static_cast<float>(static_cast<const uint8_t*>(base)[i]);
  } else if constexpr (D == DType::kFloat16) {
    return __half2float(__ushort_as_half(static_cast<const unsigned short*>(base)[i]));
  } else if constexpr (D == DType::kBFloat16) {
    // bfloat16 is the top half of a float: exact, as core/dtype.h's BFloat16ToFloat.
    return __uint_as_float(static_cast<unsigned>(static_cast<const unsigned short*>(base)[i])
                           << 16);
  } else {
    return static_cast<const float*>(base)[i];
  }
}

// launch(std::integral_constant<DType, D>{}) for a sample dtype D; cudaErrorInvalidValue for
// another (the backends check the dtype before it gets here), else the launch's status.
template <typename Launch>
cudaError_t WithSampleDType(DType dtype, Launch&& launch) {
  switch (dtype) {
    case DType::kUInt8:
      launch(std::integral_constant<DType, DType::kUInt8>{});
      break;
    case DType::kFloat16:
      launch(std::integral_constant<DType, DType::kFloat16>{});
      break;
    case DType::kBFloat16:
      launch(std::integral_constant<DType, DType::kBFloat16>{});
      break;
    case DType::kFloat32:
      launch(std::integral_constant<DType, DType::kFloat32>{});
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace rf::cuda
