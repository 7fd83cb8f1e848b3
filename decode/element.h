// The decode, one element at a time: how one element of a model's input is made from a batch of
// stored samples. Every decode of the project is built from these functions and nothing else: the
// CPU backend's input and the library loader's host decode (decode/host_decode.h's loop), the
// CUDA backend's float32 and bf16 inputs and the loader's GPU decode (decode/kernel.cuh's kernel).
// So a conversion or a layout is defined here once (a dtype in decode/dtypes.h, a transform in
// core/augment.h), and every consumer has it.
//
// An output element is, in order:
//   where it sits    its sample s, channel c and pixel p in the output's layout (Nchw, Nhwc,
//                    Cnhw below): the layout maps an output index to (s, c, p) for the kernel,
//                    and (s, c) to where a channel's pixels start, and their step, for the loop;
//   what it reads    the stored element (s, c, source pixel) (stored samples are always
//                    channels first), the source pixel being the one the sample's augmentation
//                    transform says (core/augment.h's SourcePixel), or none: then the element is
//                    0 (also in an output channel past the stored ones: an NHWC input padded
//                    for cuDNN);
//   what it holds    the stored value converted (ToFloat: LoadFloat, optionally Normalize, then
//                    StoreFloat) or its bits unchanged (AsStored).
//
// Host and device code alike: plain C++ where nvcc does not compile it, __host__ __device__ where
// it does. The host and the GPU give the same bits for every input, NaNs included where the caller
// asks for NanBits::kHost (decode/dtypes.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/augment.h"
#include "core/dtype.h"
#include "decode/dtypes.h"

namespace rf::decode {

// --- Values -----------------------------------------------------------------------------------

// A stored value of dtype E as float, exactly (decode/dtypes.h's E::Load).
template <typename E, NanBits kNan = NanBits::kHost>
RF_HOST_DEVICE inline float LoadFloat(typename E::Type v) {
  return E::template Load<kNan>(v);
}

// What a channel's values are divided by: its stddev, or 1 where that is 0 (a constant channel is
// centred, not divided by zero).
RF_HOST_DEVICE inline float Divisor(float stddev) { return stddev == 0.f ? 1.f : stddev; }

// (x - mean) / divisor in float32, each operation correctly rounded: a true division, never a
// product with 1 / divisor. On the GPU through the _rn intrinsics, so no build flag can change it.
template <NanBits kNan = NanBits::kHost>
RF_HOST_DEVICE inline float Normalize(float x, float mean, float divisor) {
#if defined(__CUDA_ARCH__)
  // The host's SSE (or NEON) arithmetic quiets a NaN x and keeps the rest of it; mean and divisor
  // are finite (the consumers check), so no other NaN arises.
  if (kNan == NanBits::kHost && IsNanBits(__float_as_uint(x))) {
    return __uint_as_float(__float_as_uint(x) | 0x00400000u);
  }
  return __fdiv_rn(__fsub_rn(x, mean), divisor);
#else
  return (x - mean) / divisor;
#endif
}

// A float rounded to nearest even into float dtype E (decode/dtypes.h's E::Store).
template <typename E, NanBits kNan = NanBits::kHost>
RF_HOST_DEVICE inline typename E::Type StoreFloat(float x) {
  return E::template Store<kNan>(x);
}

// One channel's normalization; the default leaves a value as it is.
struct ChannelNorm {
  float mean = 0.f, divisor = 1.f;
};

// A batch's per-channel statistics, in the memory the decode runs in (host for the loop, device
// for the kernel): `channels` floats each, read only where the decode normalizes.
struct Statistics {
  const float* mean = nullptr;
  const float* stddev = nullptr;  // as the dataset holds it: a 0 is taken as 1 (Divisor)
  RF_HOST_DEVICE ChannelNorm Of(uint32_t c) const { return {mean[c], Divisor(stddev[c])}; }
};

// The two conversions of a stored element into an output element. Each has Stored and Output
// (the element types), kNormalize, Zero() (the output's 0) and Convert(stored, norm).

// Into float dtype Out: LoadFloat, Normalize where kNormalizeIt, StoreFloat.
template <typename In, typename Out, bool kNormalizeIt, NanBits kNan>
struct ToFloat {
  using Stored = typename In::Type;
  using Output = typename Out::Type;
  static constexpr bool kNormalize = kNormalizeIt;
  RF_HOST_DEVICE static Output Zero() { return StoreFloat<Out, kNan>(0.f); }
  RF_HOST_DEVICE static Output Convert(Stored v, ChannelNorm norm) {
    float x = LoadFloat<In, kNan>(v);
    if constexpr (kNormalize) x = Normalize<kNan>(x, norm.mean, norm.divisor);
    return StoreFloat<Out, kNan>(x);
  }
};

// The stored dtype itself: the element's bits unchanged (T: an unsigned integer of its size, so
// that dtypes of one size share the code), all bits zero (0 in every dtype) for the output's 0.
template <typename T>
struct AsStored {
  using Stored = T;
  using Output = T;
  static constexpr bool kNormalize = false;
  RF_HOST_DEVICE static Output Zero() { return T{0}; }
  RF_HOST_DEVICE static Output Convert(Stored v, ChannelNorm /*norm*/) { return v; }
};

// AsStored for dtype E: by the size of its elements alone.
template <typename E, size_t kBytes = sizeof(typename E::Type)>
using AsStoredOf = AsStored<
    std::conditional_t<kBytes == 1, uint8_t,
                       std::conditional_t<kBytes == 2, uint16_t,
                                          std::conditional_t<kBytes == 4, uint32_t, uint64_t>>>>;

// A label of integer dtype E as the consumers' widest label type.
template <typename E>
RF_HOST_DEVICE inline int64_t LabelValue(typename E::Type v) {
  static_assert(kIsInteger<E>);
  return static_cast<int64_t>(v);
}

// --- Places -----------------------------------------------------------------------------------

// A batch as the decode sees it: n samples of `channels` stored channels (channels first) of
// height x width pixels in, n samples of `out_channels` channels out, channels >= `channels` all 0.
struct BatchShape {
  uint32_t n = 0;
  uint32_t channels = 1;
  uint32_t out_channels = 1;
  uint32_t height = 1, width = 1;
};

// Output element (sample, channel, pixel), pixel = y * width + x.
template <typename Index>
struct Element {
  Index sample;
  uint32_t channel;
  uint32_t pixel;
};

enum class Layout {
  kNCHW,  // each sample's channels one after another (as stored)
  kNHWC,  // channels last: each pixel's channels together
  kCNHW,  // each channel's samples one after another (the CPU backend's im2col input)
};

// The layouts. Each has At(o, shape, plane): where output element o sits, for a kernel's thread;
// Start(s, c, shape, plane) and PixelStep(shape): where sample s's channel c starts and the step
// from one of its pixels to the next, for a loop over a channel plane. `plane` is height * width
// in the caller's index type. At takes quotients and remainders with / and %, as the kernels always
// did: with products subtracted instead, ptxas gave the size_t bf16 kernel 46 registers, not 40.
struct Nchw {
  static constexpr Layout kLayout = Layout::kNCHW;
  template <typename Index>
  RF_HOST_DEVICE static Element<Index> At(Index o, const BatchShape& b, Index plane) {
    const Index row = o / plane;  // s * out_channels + c
    return {row / b.out_channels, static_cast<uint32_t>(row % b.out_channels),
            static_cast<uint32_t>(o % plane)};
  }
  static size_t Start(size_t s, uint32_t c, const BatchShape& b, size_t plane) {
    return (s * b.out_channels + c) * plane;
  }
  static constexpr size_t PixelStep(const BatchShape& /*b*/) { return 1; }
};

struct Nhwc {
  static constexpr Layout kLayout = Layout::kNHWC;
  template <typename Index>
  RF_HOST_DEVICE static Element<Index> At(Index o, const BatchShape& b, Index plane) {
    const Index at = o / b.out_channels;  // s * plane + p
    return {at / plane, static_cast<uint32_t>(o % b.out_channels),
            static_cast<uint32_t>(at % plane)};
  }
  static size_t Start(size_t s, uint32_t c, const BatchShape& b, size_t plane) {
    return s * plane * b.out_channels + c;
  }
  static size_t PixelStep(const BatchShape& b) { return b.out_channels; }
};

struct Cnhw {
  static constexpr Layout kLayout = Layout::kCNHW;
  template <typename Index>
  RF_HOST_DEVICE static Element<Index> At(Index o, const BatchShape& b, Index plane) {
    const Index row = o / plane;  // c * n + s
    return {row % b.n, static_cast<uint32_t>(row / b.n), static_cast<uint32_t>(o % plane)};
  }
  static size_t Start(size_t s, uint32_t c, const BatchShape& b, size_t plane) {
    return (size_t{c} * b.n + s) * plane;
  }
  static constexpr size_t PixelStep(const BatchShape& /*b*/) { return 1; }
};

// Calls f(L{}) for the layout tag of `layout`; false where there is none.
template <typename F>
bool VisitLayout(Layout layout, F&& f) {
  switch (layout) {
    case Layout::kNCHW:
      f(Nchw{});
      return true;
    case Layout::kNHWC:
      f(Nhwc{});
      return true;
    case Layout::kCNHW:
      f(Cnhw{});
      return true;
  }
  return false;
}

// --- Augmentation -----------------------------------------------------------------------------

// Sample s's transform under `a` (augmentation on): from a.transforms where the batch's were drawn
// ahead (cuda/augment_transforms.cuh: a kernel then reads one instead of drawing it in every
// element), else drawn here from its global index.
RF_HOST_DEVICE inline SampleTransform TransformOf(const AugmentBatch& a, uint64_t s,
                                                  uint32_t height, uint32_t width) {
  return a.transforms != nullptr
             ? a.transforms[s]
             : DrawTransform(a.params, a.seed, a.epoch, a.indices[s], height, width);
}

// Where output pixel p of a sample reads from in its stored channel plane: true and *src, or false
// where the output is 0. t: the sample's transform, or null for none (p itself).
RF_HOST_DEVICE inline bool PlaneSource(const SampleTransform* t, uint32_t height, uint32_t width,
                                       uint32_t p, uint32_t* src) {
  if (t == nullptr) {
    *src = p;
    return true;
  }
  return SourcePixel(*t, height, width, p / width, p % width, src);
}

// --- The element ------------------------------------------------------------------------------

// Where output element e of a batch reads from: true and *from, the index of its stored element
// (plane: height * width), or false where it reads none and is 0 (a channel past the stored ones,
// or the transform's zeros). t: e's sample's transform, or null for none.
template <typename Index>
RF_HOST_DEVICE inline bool StoredIndex(const BatchShape& b, Index plane, const Element<Index>& e,
                                       const SampleTransform* t, Index* from) {
  uint32_t src = 0;
  if (e.channel >= b.channels || !PlaneSource(t, b.height, b.width, e.pixel, &src)) return false;
  *from = (e.sample * b.channels + e.channel) * plane + src;
  return true;
}

}  // namespace rf::decode
