#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "pipeline/cuda_decode.cuh"
#include "pipeline/decode_dtypes.h"

namespace rf::cuda {
namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to fill every SM of an H100 many times over; a larger batch (they are a few MB)
// makes each thread loop. With this bound and n * channels * plane < 2^31 (the launchers'
// contract), a thread's index plus the grid's stride never wraps a uint32_t.
constexpr uint32_t kMaxBlocks = 4096;

unsigned Blocks(uint32_t count) {
  return std::min<uint32_t>((count + kThreads - 1) / kThreads, kMaxBlocks);
}

__device__ inline bool IsNan(uint32_t float_bits) {
  return (float_bits & 0x7fffffffu) > 0x7f800000u;
}

// The conversions below equal the host's (core/dtype.h, batch_decode.cc) bit for bit for every
// input. Where IEEE rounding leaves no choice the GPU's own instructions give the same bits; NaNs
// are where instructions and host code differ (the GPU's arithmetic and conversions return the
// canonical NaN, the host's keep sign and payload), so they are spelled out as the host makes them
// (on an H100, leaving out any one of the three makes the GPU test fail on NaN inputs).

// A stored value as float: core/dtype.h's LoadAsFloat.
template <typename E>
__device__ inline float ReadFloat(typename E::Type v) {
  if constexpr (decode::kIsInteger<E>) {
    return static_cast<float>(v);  // cvt.rn: round to nearest even, as the host's conversion
  } else if constexpr (E::kDType == DType::kFloat16) {
    const uint32_t h = v;
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {  // HalfToFloat: sign and payload kept
      return __uint_as_float(((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13));
    }
    return __half2float(__ushort_as_half(v));
  } else if constexpr (E::kDType == DType::kBFloat16) {
    return __uint_as_float(static_cast<uint32_t>(v) << 16);  // exact: BFloat16ToFloat
  } else {
    static_assert(E::kDType == DType::kFloat32);
    return v;
  }
}

// CpuBackend::LoadBatch's (x - mean) / divisor, each operation correctly rounded whatever flags
// this file is built with (no fast math here in any case). A NaN x comes out as the host's
// SSE (or NEON) arithmetic leaves it: x quieted. mean and divisor are finite (Validate), so no
// other NaN arises.
__device__ inline float Normalize(float x, float mean, float divisor) {
  const uint32_t u = __float_as_uint(x);
  if (IsNan(u)) return __uint_as_float(u | 0x00400000u);
  return __fdiv_rn(__fsub_rn(x, mean), divisor);
}

// A float rounded to nearest even into a float dtype: FloatToBFloat16, FloatToHalf.
template <typename E>
__device__ inline typename E::Type WriteFloat(float x) {
  if constexpr (E::kDType == DType::kFloat32) {
    return x;
  } else {
    const uint32_t u = __float_as_uint(x);
    if constexpr (E::kDType == DType::kBFloat16) {
      if (IsNan(u)) return static_cast<uint16_t>((u >> 16) | 0x40u);  // the top half, quieted
      return __bfloat16_as_ushort(__float2bfloat16_rn(x));
    } else {
      static_assert(E::kDType == DType::kFloat16);
      if (IsNan(u)) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u);
      return __half_as_ushort(__float2half_rn(x));
    }
  }
}

// Where element o of a channels-last batch comes from in the stored (channels-first) batch, and
// its channel.
__device__ inline uint32_t ChannelsFirstIndex(uint32_t o, uint32_t channels, uint32_t plane,
                                              uint32_t* channel) {
  const uint32_t c = o % channels, pixel = o / channels, img = pixel / plane;
  *channel = c;
  return (img * channels + c) * plane + (pixel - img * plane);
}

// Under augmentation, where element `from` of the stored batch (channels first; channel c) is
// read from instead: true with *from the element the sample's transform says, false where the
// output is 0. Without augmentation, true and *from unchanged.
__device__ inline bool AugmentSource(const AugmentBatch& a, uint32_t channels, uint32_t plane,
                                     uint32_t height, uint32_t width, uint32_t c, uint32_t* from) {
  if (!a.params.enabled()) return true;
  uint64_t src = 0;
  if (!AugmentedElement(a, channels, height, width, *from / plane / channels, c, *from % plane,
                        &src)) {
    return false;
  }
  *from = static_cast<uint32_t>(src);
  return true;
}

// One thread per output element, consecutive threads on consecutive output elements: the writes
// (the larger side: a float32 is four uint8s) coalesce in both layouts. NHWC's reads then fall in
// `channels` runs per warp, one in each channel plane; a batch of a few MB stays in L2, so every
// sector is still fetched from memory once.
template <typename In, typename Out, bool kChannelsLast, bool kNormalize>
__global__ void __launch_bounds__(kThreads)
    DecodeKernel(const typename In::Type* __restrict__ in, uint32_t total, uint32_t channels,
                 uint32_t plane, uint32_t height, uint32_t width, const float* __restrict__ mean,
                 const float* __restrict__ divisor, AugmentBatch augment,
                 typename Out::Type* __restrict__ out) {
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t o = blockIdx.x * kThreads + threadIdx.x; o < total; o += stride) {
    uint32_t from = o, c = 0;
    if constexpr (kChannelsLast) {
      from = ChannelsFirstIndex(o, channels, plane, &c);
    } else {
      c = (o / plane) % channels;
    }
    // The host's 0.f where the transform reads nothing (not normalized: 0 in normalized space).
    float x = 0.f;
    if (AugmentSource(augment, channels, plane, height, width, c, &from)) {
      x = ReadFloat<In>(in[from]);
      if constexpr (kNormalize) x = Normalize(x, mean[c], divisor[c]);
    }
    out[o] = WriteFloat<Out>(x);
  }
}

// Elements of T unchanged (the stored dtype without normalize): NCHW -> NHWC, and under
// augmentation each from where its transform says, all bits zero (0 in every dtype) where it says
// none, in either layout.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    PassThroughKernel(const T* __restrict__ in, uint32_t total, uint32_t channels, uint32_t plane,
                      uint32_t height, uint32_t width, bool channels_last, AugmentBatch augment,
                      T* __restrict__ out) {
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t o = blockIdx.x * kThreads + threadIdx.x; o < total; o += stride) {
    uint32_t from = o, c = (o / plane) % channels;
    if (channels_last) from = ChannelsFirstIndex(o, channels, plane, &c);
    out[o] = AugmentSource(augment, channels, plane, height, width, c, &from) ? in[from] : T{0};
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    LabelKernel(const T* __restrict__ in, uint32_t n, int64_t* __restrict__ out) {
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<int64_t>(in[i]);
  }
}

template <typename In, typename Out>
void LaunchDecode(const DecodeArgs& a, const void* in, uint32_t total, void* out,
                  cudaStream_t stream) {
  const auto launch = [&](auto kernel) {
    kernel<<<Blocks(total), kThreads, 0, stream>>>(
        static_cast<const typename In::Type*>(in), total, a.channels, a.plane, a.height, a.width,
        a.mean, a.divisor, a.augment, static_cast<typename Out::Type*>(out));
  };
  if (a.channels_last) {
    if (a.normalize) {
      launch(DecodeKernel<In, Out, true, true>);
    } else {
      launch(DecodeKernel<In, Out, true, false>);
    }
  } else {
    if (a.normalize) {
      launch(DecodeKernel<In, Out, false, true>);
    } else {
      launch(DecodeKernel<In, Out, false, false>);
    }
  }
}

template <typename T>
void LaunchPassThrough(const DecodeArgs& a, const void* in, uint32_t total, void* out,
                       cudaStream_t stream) {
  PassThroughKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
      static_cast<const T*>(in), total, a.channels, a.plane, a.height, a.width, a.channels_last,
      a.augment, static_cast<T*>(out));
}

}  // namespace

cudaError_t DecodeSamples(const DecodeArgs& a, const void* in, uint32_t n, void* out,
                          cudaStream_t stream) {
  const uint32_t total = n * a.channels * a.plane;
  if (total == 0) return cudaSuccess;
  if (a.output == a.stored && !a.normalize) {
    const size_t size = DTypeSize(a.stored);
    if (!a.channels_last && !a.augment.params.enabled()) {
      return cudaMemcpyAsync(out, in, total * size, cudaMemcpyDeviceToDevice, stream);
    }
    switch (size) {
      case 1:
        LaunchPassThrough<uint8_t>(a, in, total, out, stream);
        break;
      case 2:
        LaunchPassThrough<uint16_t>(a, in, total, out, stream);
        break;
      case 4:
        LaunchPassThrough<uint32_t>(a, in, total, out, stream);
        break;
      case 8:
        LaunchPassThrough<uint64_t>(a, in, total, out, stream);
        break;
      default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
  }
  bool launched = false;
  decode::VisitSampleDType(a.stored, [&](auto in_dtype) {
    launched = decode::VisitDType(decode::FloatDTypes{}, a.output, [&](auto out_dtype) {
      LaunchDecode<decltype(in_dtype), decltype(out_dtype)>(a, in, total, out, stream);
    });
  });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t DecodeLabels(DType dtype, const void* in, uint32_t n, int64_t* out,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const bool launched = decode::VisitDType(decode::IntegerDTypes{}, dtype, [&](auto label_dtype) {
    using T = typename decltype(label_dtype)::Type;
    LabelKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(in), n, out);
  });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace rf::cuda
