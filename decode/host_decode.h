// The decode on the host: one loop over a batch, channel plane by channel plane, that makes every
// output element from decode/element.h's functions. The CPU backend's input (a Cnhw float32 plan)
// and the library loader's host decode (pipeline/output/batch_decode.h) are both this loop.
//
// Memory: every array is host memory the caller owns, at any alignment; `in` and `out` do not
// overlap. Nothing is allocated. Thread safety: no state; any thread may call it.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/augment.h"
#include "core/dtype.h"
#include "decode/dtypes.h"
#include "decode/element.h"
#include "decode/plan.h"

namespace rf::decode {

// Decodes n samples at `in` (n * channels * height * width elements of plan.stored) into `out`
// (n * out_channels * height * width elements of plan.output), each sample through its transform
// where `augment` (host memory) has augmentation on; plan.stats in host memory. False, writing
// nothing, where VisitPlan knows no such decode.
bool DecodeOnHost(const Plan& plan, const void* in, uint32_t n, void* out,
                  const AugmentBatch& augment = AugmentBatch{});

// Element i of an array of T at any alignment (a memcpy the compiler turns into a plain load).
template <typename T>
T LoadAt(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

// Calls f(i, label) (label an int64_t: decode/element.h's LabelValue) for the n labels at `labels`
// (any alignment) of integer dtype `dtype` (decode/dtypes.h's IntegerDTypes), in order; false,
// calling nothing, for another dtype.
template <typename F>
bool ForEachLabel(DType dtype, const void* labels, uint32_t n, F&& f) {
  return VisitDType(IntegerDTypes{}, dtype, [&](auto e) {
    using E = decltype(e);
    for (uint32_t i = 0; i < n; ++i) f(i, LabelValue<E>(LoadAt<typename E::Type>(labels, i)));
  });
}

}  // namespace rf::decode
