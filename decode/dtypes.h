// The dtypes the decode (decode/element.h) reads and writes, each with the C++ type its elements
// are stored as, and the one dispatcher from a run-time DType to them: every decode of the
// project (the CPU and CUDA backends' inputs, the library loader's host and GPU decodes) reaches
// its dtype through VisitDType below, so a dtype added to a list is decoded by all of them.
//
// Host and device code alike (nvcc reads it too): no CUDA header, nothing that allocates.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace rf::decode {

// An integer dtype: read as static_cast<float>(value) (exact up to 2^24, rounded to nearest even
// beyond, as core/dtype.h's LoadAsFloat), and as a label static_cast<int64_t>(value).
template <DType D, typename T>
struct IntegerDType {
  static constexpr DType kDType = D;
  using Type = T;
};

// A floating-point dtype, stored as `Bits` (decode/element.h converts it exactly).
template <DType D, typename Bits>
struct FloatDType {
  static constexpr DType kDType = D;
  using Type = Bits;
};

template <typename... Entries>
struct DTypeList {};

using UInt8 = IntegerDType<DType::kUInt8, uint8_t>;
using UInt16 = IntegerDType<DType::kUInt16, uint16_t>;
using Int32 = IntegerDType<DType::kInt32, int32_t>;
using Int64 = IntegerDType<DType::kInt64, int64_t>;
using Float16 = FloatDType<DType::kFloat16, uint16_t>;
using BFloat16 = FloatDType<DType::kBFloat16, uint16_t>;
using Float32 = FloatDType<DType::kFloat32, float>;

// Stored samples and labels of these dtypes are decoded; an output of one of them is only ever
// the stored dtype itself, passed through unchanged. A new integer dtype is one more entry here.
using IntegerDTypes = DTypeList<UInt8, UInt16, Int32, Int64>;
// Stored samples of these dtypes are decoded, and every decode may write one of them.
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
