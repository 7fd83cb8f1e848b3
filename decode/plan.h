// Plan: one decode chosen at run time (the stored and output dtypes, normalization, layout,
// shape, statistics), and VisitPlan, the one dispatcher from a Plan to the compile-time
// conversion and layout of decode/element.h that the host loop (decode/host_decode.h) and the GPU
// kernel (decode/gpu_decode.cuh) are instantiated for.
//
// Plain data and a host-only template; no CUDA header.
#pragma once

#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"
#include "decode/dtypes.h"
#include "decode/element.h"

namespace rf::decode {

struct Plan {
  DType stored = DType::kUInt8;    // any sample dtype (decode/dtypes.h)
  DType output = DType::kFloat32;  // a float dtype, or `stored` itself without normalize: its bits
  bool normalize = false;          // (x - mean[c]) / Divisor(stddev[c]) (decode/element.h)
  Layout layout = Layout::kNCHW;
  uint32_t channels = 1;      // stored, per sample
  uint32_t out_channels = 1;  // written, per sample: channels, or more (all 0)
  uint32_t height = 1, width = 1;
  Statistics stats;  // read only where normalize is set

  BatchShape Shape(uint32_t n) const { return {n, channels, out_channels, height, width}; }
  // The decode is the stored bytes themselves: a copy, whatever the dtype.
  bool IsCopy(const AugmentBatch& augment) const {
    return output == stored && !normalize && layout == Layout::kNCHW && out_channels == channels &&
           !augment.params.enabled();
  }
};

// Calls f(Conv{}, L{}) for the conversion (ToFloat or AsStored, NaNs as kNan says) and the layout
// tag the plan asks for and returns true; false, calling nothing, where no conversion decodes
// plan.stored into plan.output (an unknown dtype, normalize into the stored dtype, an integer
// output other than the stored dtype) or the layout is unknown.
template <NanBits kNan, typename F>
bool VisitPlan(const Plan& plan, F&& f) {
  bool known = false;
  VisitSampleDType(plan.stored, [&](auto in) {
    using In = decltype(in);
    if (plan.output == plan.stored && !plan.normalize) {
      known = VisitLayout(plan.layout, [&](auto layout) { f(AsStoredOf<In>{}, layout); });
      return;
    }
    VisitDType(FloatDTypes{}, plan.output, [&](auto out) {
      using Out = decltype(out);
      known = VisitLayout(plan.layout, [&](auto layout) {
        if (plan.normalize) {
          f(ToFloat<In, Out, true, kNan>{}, layout);
        } else {
          f(ToFloat<In, Out, false, kNan>{}, layout);
        }
      });
    });
  });
  return known;
}

}  // namespace rf::decode
