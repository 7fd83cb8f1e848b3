#include "decode/image_resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rf::decode {

void ResampleAxis::Build(double origin, double step, uint32_t out, int32_t clip_lo,
                         int32_t clip_hi) {
  const double widen = std::max(step, 1.0);  // the triangle's half-width, in source pixels
  // Every tap lies within `widen` of its centre: at most 2 * widen + 2 of them.
  const int32_t bound = static_cast<int32_t>(std::ceil(2 * widen)) + 2;
  first.assign(out, 0);
  count_.assign(out, 0);
  all_.assign(size_t{out} * bound, 0.0);
  std::vector<int32_t>& count = count_;
  std::vector<double>& all = all_;
  taps = 0;
  lo = clip_hi;
  hi = clip_lo;
  for (uint32_t o = 0; o < out; ++o) {
    double* w = &all[size_t{o} * bound];
    const double centre = origin + (o + 0.5) * step;
    int32_t a = static_cast<int32_t>(std::floor(centre - widen + 0.5));
    int32_t b = static_cast<int32_t>(std::floor(centre + widen + 0.5));
    a = std::clamp(a, clip_lo, clip_hi - 1);
    b = std::clamp(b, a + 1, std::min(clip_hi, a + bound));
    double sum = 0;
    int32_t n = 0;
    for (int32_t x = a; x < b; ++x, ++n) {
      w[n] = std::max(0.0, 1.0 - std::fabs((x + 0.5 - centre) / widen));
      sum += w[n];
    }
    // Taps of weight 0 at either end read nothing: drop them.
    int32_t skip = 0;
    while (skip < n - 1 && w[skip] == 0) ++skip;
    while (n - 1 > skip && w[n - 1] == 0) --n;
    if (sum == 0) {  // the centre lies outside the clip range: its nearest pixel
      skip = 0;
      n = 1;
      w[0] = 1;
      sum = 1;
      a = std::clamp(static_cast<int32_t>(std::floor(centre)), clip_lo, clip_hi - 1);
    }
    for (int32_t k = skip; k < n; ++k) w[k - skip] = w[k] / sum;
    first[o] = a + skip;
    count[o] = n - skip;
    taps = std::max(taps, count[o]);
    lo = std::min(lo, first[o]);
    hi = std::max(hi, first[o] + count[o]);
  }
  weights.assign(size_t{out} * taps, 0.f);
  for (uint32_t o = 0; o < out; ++o) {
    for (int32_t k = 0; k < count[o]; ++k) {
      weights[size_t{o} * taps + k] = static_cast<float>(all[size_t{o} * bound + k]);
    }
  }
}

namespace {

// Four floats in one SSE register (GCC's and Clang's vector extension: SSE2 on any x86-64).
typedef float V4 __attribute__((vector_size(16)));

inline V4 Load4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The kernels below are compiled twice, for Haswell's AVX2 and FMA and for the x86-64 baseline,
// and the better one is chosen where the program starts (GCC's and Clang's target_clones).
// Not under the sanitizers, whose run-time the clones' resolvers would run before.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RF_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(RF_SANITIZED)
#define RF_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define RF_CLONES
#endif

// The vertical pass of one output row: row[i] = sum over its taps k of w[k] * p[k * pitch + i],
// for the `width` values of the columns the horizontal taps read. Contiguous: it vectorizes.
// Taps past a shorter output's count have weight 0 and are not read (their rows may lie past
// the decoded region).
RF_CLONES void Vertical(const uint8_t* __restrict p, size_t pitch, const float* __restrict w,
                        int32_t taps, size_t width, float* __restrict row) {
  const float w0 = w[0];
  for (size_t i = 0; i < width; ++i) row[i] = w0 * static_cast<float>(p[i]);
  for (int32_t k = 1; k < taps && w[k] != 0.f; ++k) {
    const uint8_t* pk = p + size_t(k) * pitch;
    const float wk = w[k];
    for (size_t i = 0; i < width; ++i) row[i] += wk * static_cast<float>(pk[i]);
  }
}

// The pixel value of a resampled v: rounded to nearest and clamped to 0..255 (v > -0.5:
// truncation is rounding), in branch-free integer arithmetic (with compares, GCC 12 left some of
// these loops scalar; a resampled value lies within rounding of [0, 255] anyway).
// A macro: a call, even to an inline function, keeps a target_clones clone from vectorizing.
#define RF_PIXEL(v, p)                                \
  int32_t p = static_cast<int32_t>((v) + 0.5f);       \
  p &= ~(p >> 31);                    /* max(p, 0) */ \
  p -= (p - 255) & ~((p - 255) >> 31) /* min(p, 255) */

// n elements: (pixel(px[i]) - mean[i]) / stddev[i] (a true division: decode/element.h's rule),
// or the pixel itself as float without normalize.
RF_CLONES void NormalizeRow(const float* __restrict px, size_t n, const float* __restrict mean,
                            const float* __restrict stddev, bool normalize, float* __restrict out) {
  if (!normalize) {
    for (size_t i = 0; i < n; ++i) {
      RF_PIXEL(px[i], p);
      out[i] = static_cast<float>(p);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    RF_PIXEL(px[i], p);
    out[i] = (static_cast<float>(p) - mean[i]) / stddev[i];
  }
}

RF_CLONES void RoundRow(const float* __restrict px, size_t n, uint8_t* __restrict out) {
  for (size_t i = 0; i < n; ++i) {
    RF_PIXEL(px[i], p);
    out[i] = static_cast<uint8_t>(p);
  }
}

// The horizontal pass of one row of kIn channels (3: RGB, 4: RGBA) into kOut (3, or 4: RGBA, a
// source without alpha giving 255): output pixel xo (in output order: flipped or not) is its
// taps' weighted sum of `row` (columns from cols.lo, interleaved, padded past cols.hi with zeros
// and one float more), a pixel's channels in one 4-lane vector (an RGB source's fourth lane, the
// next pixel's red, is not used). Written planar (kOut planes of `width`) or interleaved (width x
// kOut; with 3, one float of slack after: each pixel's fourth lane lands where the next pixel's
// first goes, and is overwritten by it). The tap count is a compile-time constant where it is
// small, so the loop unrolls.
template <int T, int kIn, int kOut, bool kPlanar>
void Horizontal(const float* row, const ResampleAxis& cols, uint32_t width, bool flip, float* out) {
  static_assert((kIn == 3 || kIn == 4) && kIn <= kOut && kOut <= 4);
  // The axis's arrays in locals: the stores below (a memcpy's may alias anything) would
  // otherwise make the compiler reload them every pixel.
  const int taps = T > 0 ? T : cols.taps;
  const float* const weights = cols.weights.data();
  const int32_t* const first = cols.first.data();
  const int32_t lo = cols.lo;
  for (uint32_t xo = 0; xo < width; ++xo) {
    const uint32_t x = flip ? width - 1 - xo : xo;
    const float* w = weights + size_t{x} * taps;
    const float* q = row + size_t(first[x] - lo) * kIn;
    V4 acc = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < taps; ++k) acc += w[k] * Load4(q + kIn * k);
    if constexpr (kIn == 3 && kOut == 4) acc[3] = 255.f;
    if constexpr (kPlanar) {
      for (int c = 0; c < kOut; ++c) out[size_t(c) * width + xo] = acc[c];
    } else {
      std::memcpy(out + size_t{xo} * kOut, &acc, sizeof acc);
    }
  }
}

template <int kIn, int kOut, bool kPlanar>
void HorizontalOf(const float* row, const ResampleAxis& cols, uint32_t width, bool flip,
                  float* out) {
  switch (cols.taps) {
    case 1:
      return Horizontal<1, kIn, kOut, kPlanar>(row, cols, width, flip, out);
    case 2:
      return Horizontal<2, kIn, kOut, kPlanar>(row, cols, width, flip, out);
    case 3:
      return Horizontal<3, kIn, kOut, kPlanar>(row, cols, width, flip, out);
    case 4:
      return Horizontal<4, kIn, kOut, kPlanar>(row, cols, width, flip, out);
    case 5:
      return Horizontal<5, kIn, kOut, kPlanar>(row, cols, width, flip, out);
    case 6:
      return Horizontal<6, kIn, kOut, kPlanar>(row, cols, width, flip, out);
    default:
      return Horizontal<0, kIn, kOut, kPlanar>(row, cols, width, flip, out);
  }
}

// The horizontal pass of a row of `in` channels (3 or 4) into o.channels, planar for NCHW.
void HorizontalPass(const float* row, const ResampleAxis& cols, uint32_t in,
                    const ResampleOutput& o, float* out) {
  const uint32_t w = o.width;
  const bool f = o.flip;
  if (in == 4) {
    return o.channels_last ? HorizontalOf<4, 4, false>(row, cols, w, f, out)
                           : HorizontalOf<4, 4, true>(row, cols, w, f, out);
  }
  if (o.channels == 4) {
    return o.channels_last ? HorizontalOf<3, 4, false>(row, cols, w, f, out)
                           : HorizontalOf<3, 4, true>(row, cols, w, f, out);
  }
  return o.channels_last ? HorizontalOf<3, 3, false>(row, cols, w, f, out)
                         : HorizontalOf<3, 3, true>(row, cols, w, f, out);
}

// The horizontal pass of one grey row: one plane of `width`, in output order.
void Horizontal1(const float* row, const ResampleAxis& cols, uint32_t width, bool flip,
                 float* out) {
  for (uint32_t xo = 0; xo < width; ++xo) {
    const uint32_t x = flip ? width - 1 - xo : xo;
    const float* w = &cols.weights[size_t{x} * cols.taps];
    const float* q = row + (cols.first[x] - cols.lo);
    float acc = 0.f;
    for (int32_t k = 0; k < cols.taps; ++k) acc += w[k] * q[k];
    out[xo] = acc;
  }
}

// One output row (row y) from its pixels: `px` planar (o.channels planes of `width`; a grey
// image's one plane serves the three colour channels, its alpha plane 255) or interleaved (width
// x o.channels), as the layout wants them. A grey image under keep_grey is its one plane alone
// (uint8).
template <typename T>
void StoreRow(const float* px, bool grey, const ResampleOutput& o, uint32_t y, ResampleScratch& s) {
  const uint32_t width = o.width;
  const uint32_t channels = o.channels;
  T* out = static_cast<T*>(o.out);
  const T* lut = static_cast<const T*>(o.lut);
  if constexpr (sizeof(T) == 1) {
    if (grey && o.keep_grey) {
      RoundRow(px, width, out + size_t{y} * width);
      return;
    }
  }
  if (o.channels_last) {
    T* to = out + size_t{y} * width * channels;
    const size_t n = size_t{width} * channels;
    if (grey) {  // interleave the one plane into the colour channels (and an opaque alpha)
      s.spread.resize(n);
      for (uint32_t x = 0; x < width; ++x) {
        for (uint32_t c = 0; c < 3; ++c) s.spread[x * channels + c] = px[x];
        if (channels == 4) s.spread[x * 4 + 3] = 255.f;
      }
      px = s.spread.data();
    }
    if constexpr (sizeof(T) == 4) {
      NormalizeRow(px, n, s.mean.data(), s.stddev.data(), o.normalize, to);
    } else if constexpr (sizeof(T) == 1) {
      RoundRow(px, n, to);
    } else {
      s.rounded.resize(n);
      RoundRow(px, n, s.rounded.data());
      for (size_t i = 0; i < n; ++i) to[i] = lut[(i % channels) * 256 + s.rounded[i]];
    }
    return;
  }
  const size_t plane = size_t{o.height} * width;
  // The alpha plane of a grey source: 255s, filled once for a row's width (they never change).
  if (grey && channels == 4 && s.opaque.size() != width) s.opaque.assign(width, 255.f);
  for (uint32_t c = 0; c < channels; ++c) {
    T* to = out + c * plane + size_t{y} * width;
    const float* from = !grey ? px + size_t(c) * width : c < 3 ? px : s.opaque.data();
    if constexpr (sizeof(T) == 4) {
      NormalizeRow(from, width, s.mean.data() + size_t(c) * width,
                   s.stddev.data() + size_t(c) * width, o.normalize, to);
    } else if constexpr (sizeof(T) == 1) {
      RoundRow(from, width, to);
    } else {
      s.rounded.resize(width);
      RoundRow(from, width, s.rounded.data());
      const T* l = lut + c * 256;
      for (uint32_t x = 0; x < width; ++x) to[x] = l[s.rounded[x]];
    }
  }
}

template <typename T>
void Resample(const uint8_t* src, size_t pitch, int32_t col0, uint32_t channels, ResampleScratch& s,
              const ResampleOutput& o) {
  const ResampleAxis &ry = s.rows, &rx = s.cols;
  const uint32_t width = o.width;
  // The vertical pass covers the columns the taps read; zeros after, for the taps of weight 0
  // past cols.hi and the fourth lane of the last one.
  const size_t span = size_t(rx.hi - rx.lo) * channels;
  s.row.assign(size_t(rx.hi - rx.lo + rx.taps) * channels + 1, 0.f);
  const uint32_t oc = o.channels;
  s.pixels.resize(size_t{width} * oc + 1);
  if constexpr (sizeof(T) == 4) {
    // Each output element's statistics, in the order NormalizeRow walks a row: per channel
    // plane (NCHW) or interleaved (NHWC).
    s.mean.resize(size_t{width} * oc);
    s.stddev.resize(size_t{width} * oc);
    for (uint32_t x = 0; x < width; ++x) {
      for (uint32_t c = 0; c < oc; ++c) {
        const size_t i = o.channels_last ? size_t{x} * oc + c : size_t{c} * width + x;
        s.mean[i] = o.mean[c];
        s.stddev[i] = o.stddev[c];
      }
    }
  }
  const uint8_t* base = src + size_t(rx.lo - col0) * channels;
  for (uint32_t y = 0; y < o.height; ++y) {
    Vertical(base + size_t(ry.first[y] - ry.lo) * pitch, pitch, &ry.weights[size_t{y} * ry.taps],
             ry.taps, span, s.row.data());
    if (channels == 1) {
      Horizontal1(s.row.data(), rx, width, o.flip, s.pixels.data());
    } else {
      HorizontalPass(s.row.data(), rx, channels, o, s.pixels.data());
    }
    StoreRow<T>(s.pixels.data(), channels == 1, o, y, s);
  }
}

}  // namespace

void ResampleInto(const uint8_t* src, size_t pitch, int32_t col0, uint32_t channels,
                  ResampleScratch& scratch, const ResampleOutput& o) {
  switch (o.element_bytes) {
    case 1:
      return Resample<uint8_t>(src, pitch, col0, channels, scratch, o);
    case 2:
      return Resample<uint16_t>(src, pitch, col0, channels, scratch, o);
    default:
      return Resample<float>(src, pitch, col0, channels, scratch, o);
  }
}

}  // namespace rf::decode
