#include "decode/host_decode.h"

namespace rf::decode {
namespace {

template <typename T>
void StoreAt(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

// Each channel plane is read contiguously and written at the layout's step (a constant 1 for
// Nchw and Cnhw, so that loop vectorizes); a sample's transform is drawn once, a channel's
// statistics read once.
template <typename Conv, typename L, bool kAugment>
void DecodePlanes(const Plan& plan, const void* in, uint32_t n, void* out, const AugmentBatch& a) {
  const BatchShape b = plan.Shape(n);
  const size_t plane = size_t{b.height} * b.width, step = L::PixelStep(b);
  for (size_t s = 0; s < n; ++s) {
    SampleTransform t;
    if constexpr (kAugment) t = TransformOf(a, s, b.height, b.width);
    for (uint32_t c = 0; c < b.out_channels; ++c) {
      const size_t to = L::Start(s, c, b, plane);
      if (c >= b.channels) {  // a padded channel: no statistics to read, every element 0
        for (size_t p = 0; p < plane; ++p) StoreAt(out, to + p * step, Conv::Zero());
        continue;
      }
      const ChannelNorm norm = Conv::kNormalize ? plan.stats.Of(c) : ChannelNorm{};
      const size_t first = (s * b.channels + c) * plane;
      for (size_t p = 0; p < plane; ++p) {
        // Without a transform, pixel p reads pixel p (StoredIndex's answer, spelled out so that
        // the loop's read stays affine in p and vectorizes).
        size_t from = first + p;
        bool read = true;
        if constexpr (kAugment) {
          read = StoredIndex(b, plane, Element<size_t>{s, c, static_cast<uint32_t>(p)}, &t, &from);
        }
        StoreAt(out, to + p * step,
                read ? Conv::Convert(LoadAt<typename Conv::Stored>(in, from), norm) : Conv::Zero());
      }
    }
  }
}

}  // namespace

bool DecodeOnHost(const Plan& plan, const void* in, uint32_t n, void* out,
                  const AugmentBatch& augment) {
  if (plan.IsCopy(augment) && IsSampleDType(plan.stored)) {
    std::memcpy(out, in,
                size_t{n} * plan.channels * plan.height * plan.width * DTypeSize(plan.stored));
    return true;
  }
  return VisitPlan<NanBits::kHost>(plan, [&](auto conv, auto layout) {
    using Conv = decltype(conv);
    using L = decltype(layout);
    if (augment.params.enabled()) {
      DecodePlanes<Conv, L, true>(plan, in, n, out, augment);
    } else {
      DecodePlanes<Conv, L, false>(plan, in, n, out, augment);
    }
  });
}

}  // namespace rf::decode
