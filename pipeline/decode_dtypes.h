// The dtypes the batch decode (pipeline/batch_decode.h) reads and writes, each with the C++ type
// its elements are stored as, in two lists that the host decode (batch_decode.cc) and the GPU's
// (cuda_decode.cu) both expand at compile time: a dtype added to a list is decoded, passed
// through and (for integers) taken as a label by both, with no other change.
//
// Host and device code alike (nvcc reads it too): no CUDA header, nothing that allocates.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace rf::decode {

// An integer dtype: read as static_cast<float>(value) (exact up to 2^24, rounded to nearest even
// beyond, as core/dtype.h's LoadAsFloat), and as a label static_cast<int64_t>(value).
template <DType D, typename T>
struct IntegerDType {
  static constexpr DType kDType = D;
  using Type = T;
};

// A floating-point dtype, stored as `Bits`; each side converts it with its own exact conversions.
template <DType D, typename Bits>
struct FloatDType {
  static constexpr DType kDType = D;
  using Type = Bits;
};

template <typename... Entries>
struct DTypeList {};

// Stored samples and labels of these dtypes are decoded; an output of one of them is only ever
// the stored dtype itself, passed through unchanged. A new integer dtype is one more line here.
using IntegerDTypes = DTypeList<IntegerDType<DType::kUInt8, uint8_t>,    //
                                IntegerDType<DType::kUInt16, uint16_t>,  //
                                IntegerDType<DType::kInt32, int32_t>,    //
                                IntegerDType<DType::kInt64, int64_t>>;

// Stored samples of these dtypes are decoded, and every decode may write one of them.
using FloatDTypes = DTypeList<FloatDType<DType::kFloat16, uint16_t>,   //
                              FloatDType<DType::kBFloat16, uint16_t>,  //
                              FloatDType<DType::kFloat32, float>>;

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

}  // namespace rf::decode
