// The dtypes the decode (decode/element.h) reads and writes: each an entry holding its element's
// C++ type and its exact conversions to and from float, on the host and on the GPU; the lists of
// them; and the one dispatcher from a run-time DType to an entry. Every decode of the project
// (the CPU and CUDA backends' inputs, the library loader's host and GPU decodes) reaches its dtype
// through VisitDType below, so a dtype is added here, in one place, and every decode has it.
//
// Host and device code alike (nvcc reads it too): nothing that allocates.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/host_device.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace rf::decode {

// What a NaN becomes on the GPU. The host's conversions and arithmetic keep a NaN's sign and
// payload (quieting it); the GPU's instructions return their canonical NaN instead.
//   kHost       the GPU spells out the host's result: the loader's decode, whose host and GPU
//               results agree bit for bit for every input (on an H100, leaving out any of the
//               three places that do it, Float16::Load, element.h's Normalize and the Store of
//               the 16-bit floats, makes tests/pipeline/cuda_batch_decode_test fail on NaNs);
//   kGpuNative  the instructions' own result: the CUDA backend's inputs, as they always were (a
//               NaN input fails its training step as a non-finite loss either way).
// Every other value is the same under both. The host has only kHost.
enum class NanBits { kHost, kGpuNative };

RF_HOST_DEVICE inline bool IsNanBits(uint32_t float_bits) {
  return (float_bits & 0x7fffffffu) > 0x7f800000u;
}

// Each entry: kDType, Type (how an element is stored), Load<kNan>(Type) -> float, exact; the float
// dtypes also Store<kNan>(float) -> Type, rounded to nearest even.

// An integer dtype: read as static_cast<float>(value) (exact up to 2^24, rounded to nearest even
// beyond, as core/dtype.h's LoadAsFloat; on the GPU cvt.rn, the same rounding), and as a label
// static_cast<int64_t>(value). Written only as itself (decode/element.h's AsStored).
template <DType D, typename T>
struct IntegerDType {
  static constexpr DType kDType = D;
  using Type = T;
  template <NanBits kNan>
  RF_HOST_DEVICE static float Load(T v) {
    return static_cast<float>(v);
  }
};

struct Float16 {
  static constexpr DType kDType = DType::kFloat16;
  using Type = uint16_t;
  // core/dtype.h's HalfToFloat.
  template <NanBits kNan>
  RF_HOST_DEVICE static float Load(uint16_t v) {
#if defined(__CUDA_ARCH__)
    const uint32_t h = v;
    if (kNan == NanBits::kHost && (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {
      return __uint_as_float(((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13));
    }
    return __half2float(__ushort_as_half(v));
#else
    return HalfToFloat(v);
#endif
  }
  // core/dtype.h's FloatToHalf: a NaN stays a NaN, quieted; saturates to inf.
  template <NanBits kNan>
  RF_HOST_DEVICE static uint16_t Store(float x) {
#if defined(__CUDA_ARCH__)
    const uint32_t u = __float_as_uint(x);
    if (kNan == NanBits::kHost && IsNanBits(u)) {
      return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u);
    }
    return __half_as_ushort(__float2half_rn(x));
#else
    return FloatToHalf(x);
#endif
  }
};

struct BFloat16 {
  static constexpr DType kDType = DType::kBFloat16;
  using Type = uint16_t;
  // The top half of a float: exact (core/dtype.h's BFloat16ToFloat).
  template <NanBits kNan>
  RF_HOST_DEVICE static float Load(uint16_t v) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(static_cast<uint32_t>(v) << 16);
#else
    return BFloat16ToFloat(v);
#endif
  }
  // core/dtype.h's FloatToBFloat16: a NaN keeps its top half, quieted.
  template <NanBits kNan>
  RF_HOST_DEVICE static uint16_t Store(float x) {
#if defined(__CUDA_ARCH__)
    const uint32_t u = __float_as_uint(x);
    if (kNan == NanBits::kHost && IsNanBits(u)) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
#else
    return FloatToBFloat16(x);
#endif
  }
};

struct Float32 {
  static constexpr DType kDType = DType::kFloat32;
  using Type = float;
  template <NanBits kNan>
  RF_HOST_DEVICE static float Load(float v) {
    return v;
  }
  template <NanBits kNan>
  RF_HOST_DEVICE static float Store(float x) {
    return x;
  }
};

using UInt8 = IntegerDType<DType::kUInt8, uint8_t>;
using UInt16 = IntegerDType<DType::kUInt16, uint16_t>;
using Int32 = IntegerDType<DType::kInt32, int32_t>;
using Int64 = IntegerDType<DType::kInt64, int64_t>;

template <typename... Entries>
struct DTypeList {};

// Stored samples and labels of these dtypes are decoded; an output of one of them is only ever
// the stored dtype itself, passed through unchanged. A new integer dtype is one more entry here.
using IntegerDTypes = DTypeList<UInt8, UInt16, Int32, Int64>;
// Stored samples of these dtypes are decoded, and every decode may write one of them. A new float
// dtype is one more entry here, with its Load and Store above.
using FloatDTypes = DTypeList<Float16, BFloat16, Float32>;

template <typename Entry>
inline constexpr bool kIsInteger = false;
template <DType D, typename T>
inline constexpr bool kIsInteger<IntegerDType<D, T>> = true;

// Calls f(Entry{}) for the entry of `list` whose dtype is d and returns true; false where none is.
template <typename F, typename... Entries>
bool VisitDType(DTypeList<Entries...> /*list*/, DType d, F&& f) {
  return ((d == Entries::kDType ? (f(Entries{}), true) : false) || ...);
}

// The same over every dtype a stored sample may have: the integers, then the floats.
template <typename F>
bool VisitSampleDType(DType d, F&& f) {
  return VisitDType(IntegerDTypes{}, d, f) || VisitDType(FloatDTypes{}, d, f);
}

// The same over the sample dtypes the model reads (core/dtype.h's IsImageDType): what the training
// backends decode. Only those are instantiated.
template <typename F>
bool VisitImageDType(DType d, F&& f) {
  return IsImageDType(d) && VisitSampleDType(d, [&](auto e) {
           if constexpr (IsImageDType(decltype(e)::kDType)) f(e);
         });
}

}  // namespace rf::decode
