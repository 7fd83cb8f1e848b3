#include "pipeline/batch_decode.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "pipeline/decode_dtypes.h"

namespace rf {
namespace {

using decode::FloatDTypes;
using decode::IntegerDTypes;
using decode::kIsInteger;
using decode::VisitDType;
using decode::VisitSampleDType;

// Element i of an array of T at any alignment (a memcpy the compiler turns into a plain load).
template <typename T>
T LoadAt(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void StoreAt(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

// A stored value as float, exactly as core/dtype.h's LoadAsFloat reads it.
template <typename E>
float ToFloat(typename E::Type v) {
  if constexpr (kIsInteger<E>) {
    return static_cast<float>(v);
  } else if constexpr (E::kDType == DType::kFloat16) {
    return HalfToFloat(v);
  } else if constexpr (E::kDType == DType::kBFloat16) {
    return BFloat16ToFloat(v);
  } else {
    static_assert(E::kDType == DType::kFloat32);
    return v;
  }
}

// A float rounded to nearest even into a float dtype, as core/dtype.h's StoreFromFloat.
template <typename E>
typename E::Type FromFloat(float x) {
  if constexpr (E::kDType == DType::kFloat16) {
    return FloatToHalf(x);
  } else if constexpr (E::kDType == DType::kBFloat16) {
    return FloatToBFloat16(x);
  } else {
    static_assert(E::kDType == DType::kFloat32);
    return x;
  }
}

// Samples of dtype In decoded into Out. Each channel plane is read contiguously; NCHW writes it
// contiguously too (step a constant 1, so the loop vectorizes), NHWC `channels` elements apart.
// With kAugment each output pixel reads the stored pixel its sample's transform says (the same
// expression), or is the output dtype's 0 where it says none.
template <typename In, typename Out, bool kNormalize, SampleLayout kLayout, bool kAugment>
void DecodeTyped(const DecodeSpec& s, const void* in, uint32_t n, void* out,
                 const AugmentBatch& a) {
  using InT = typename In::Type;
  const size_t channels = s.channels, plane = size_t{s.height} * s.width;
  constexpr bool kChannelsLast = kLayout == SampleLayout::kNHWC;
  const size_t step = kChannelsLast ? channels : 1;
  for (size_t img = 0; img < n; ++img) {
    SampleTransform t;
    if constexpr (kAugment) {
      t = DrawTransform(a.params, a.seed, a.epoch, a.indices[img], s.height, s.width);
    }
    for (uint32_t c = 0; c < channels; ++c) {
      const float mean = kNormalize ? s.mean[c] : 0.f;
      const float divisor = kNormalize ? s.divisor(c) : 1.f;
      const size_t from = (img * channels + c) * plane;
      const size_t to = kChannelsLast ? img * channels * plane + c : from;
      for (size_t p = 0; p < plane; ++p) {
        size_t src = p;
        if constexpr (kAugment) {
          uint32_t pixel = 0;
          const auto p32 = static_cast<uint32_t>(p);
          if (!SourcePixel(t, s.height, s.width, p32 / s.width, p32 % s.width, &pixel)) {
            StoreAt(out, to + p * step, FromFloat<Out>(0.f));
            continue;
          }
          src = pixel;
        }
        float x = ToFloat<In>(LoadAt<InT>(in, from + src));
        // CpuBackend::LoadBatch's expression, operation for operation.
        if constexpr (kNormalize) x = (x - mean) / divisor;
        StoreAt(out, to + p * step, FromFloat<Out>(x));
      }
    }
  }
}

// DecodeTyped in the spec's layout.
template <typename In, typename Out, bool kNormalize, bool kAugment>
void DecodeInLayout(const DecodeSpec& s, const void* in, uint32_t n, void* out,
                    const AugmentBatch& a) {
  if (s.layout == SampleLayout::kNCHW) {
    DecodeTyped<In, Out, kNormalize, SampleLayout::kNCHW, kAugment>(s, in, n, out, a);
  } else {
    DecodeTyped<In, Out, kNormalize, SampleLayout::kNHWC, kAugment>(s, in, n, out, a);
  }
}

// The stored dtype itself under augmentation: each element from where its transform says, or all
// bits zero (0 in every dtype) where it says none; NCHW or NHWC.
template <typename T>
void PassThroughAugmented(const DecodeSpec& s, const void* in, uint32_t n, void* out,
                          const AugmentBatch& a) {
  const size_t channels = s.channels, plane = size_t{s.height} * s.width;
  const bool channels_last = s.layout == SampleLayout::kNHWC;
  for (size_t img = 0; img < n; ++img) {
    const SampleTransform t =
        DrawTransform(a.params, a.seed, a.epoch, a.indices[img], s.height, s.width);
    const size_t base = img * channels * plane;
    for (size_t c = 0; c < channels; ++c) {
      for (uint32_t p = 0; p < plane; ++p) {
        uint32_t src = 0;
        const T v = SourcePixel(t, s.height, s.width, p / s.width, p % s.width, &src)
                        ? LoadAt<T>(in, base + c * plane + src)
                        : T{0};
        StoreAt(out, channels_last ? base + p * channels + c : base + c * plane + p, v);
      }
    }
  }
}

// NCHW -> NHWC of elements of T, unchanged.
template <typename T>
void TransposeToChannelsLast(size_t channels, size_t plane, const void* in, uint32_t n, void* out) {
  for (size_t img = 0; img < n; ++img) {
    const size_t base = img * channels * plane;
    for (size_t c = 0; c < channels; ++c) {
      for (size_t p = 0; p < plane; ++p) {
        StoreAt(out, base + p * channels + c, LoadAt<T>(in, base + c * plane + p));
      }
    }
  }
}

// The stored dtype itself, without normalize: the bytes as they are, or transposed.
void PassThrough(const DecodeSpec& s, const void* in, uint32_t n, void* out,
                 const AugmentBatch& a) {
  const size_t plane = size_t{s.height} * s.width, size = DTypeSize(s.stored);
  if (a.params.enabled()) {
    switch (size) {
      case 1:
        return PassThroughAugmented<uint8_t>(s, in, n, out, a);
      case 2:
        return PassThroughAugmented<uint16_t>(s, in, n, out, a);
      case 4:
        return PassThroughAugmented<uint32_t>(s, in, n, out, a);
      case 8:
        return PassThroughAugmented<uint64_t>(s, in, n, out, a);
    }
    return;
  }
  if (s.layout == SampleLayout::kNCHW) {
    std::memcpy(out, in, n * s.channels * plane * size);
    return;
  }
  switch (size) {
    case 1:
      return TransposeToChannelsLast<uint8_t>(s.channels, plane, in, n, out);
    case 2:
      return TransposeToChannelsLast<uint16_t>(s.channels, plane, in, n, out);
    case 4:
      return TransposeToChannelsLast<uint32_t>(s.channels, plane, in, n, out);
    case 8:
      return TransposeToChannelsLast<uint64_t>(s.channels, plane, in, n, out);
  }
}

std::string FloatDTypeNames() { return "float32, bfloat16 or float16"; }

std::string Number(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace

Status DecodeSpec::Validate() const {
  if (!VisitSampleDType(stored, [](auto) {})) {
    return Status::InvalidArgument("cannot decode stored samples of dtype " +
                                   std::to_string(static_cast<uint32_t>(stored)));
  }
  if (channels == 0 || height == 0 || width == 0) {
    return Status::InvalidArgument("cannot decode samples of shape " + std::to_string(channels) +
                                   "x" + std::to_string(height) + "x" + std::to_string(width));
  }
  const bool float_output = VisitDType(FloatDTypes{}, output, [](auto) {});
  if (!float_output && output != stored) {
    return Status::Usage("dtype " + std::string(DTypeName(output)) + " cannot be decoded from " +
                         std::string(DTypeName(stored)) + " samples: choose " + FloatDTypeNames() +
                         ", or " + std::string(DTypeName(stored)) + " (as stored)");
  }
  if (layout != SampleLayout::kNCHW && layout != SampleLayout::kNHWC) {
    return Status::Usage("layout must be NCHW or NHWC (got value " +
                         std::to_string(static_cast<int>(layout)) + ")");
  }
  if (!normalize) return Status::Ok();
  if (!float_output) {
    return Status::Usage("normalize needs a float dtype (" + FloatDTypeNames() + "), not " +
                         std::string(DTypeName(output)) +
                         ": turn normalize off or choose a float dtype");
  }
  if (mean.size() != channels || stddev.size() != channels) {
    return Status::Usage(
        "normalize needs one mean and one stddev per channel: " + std::to_string(mean.size()) +
        " means and " + std::to_string(stddev.size()) + " stddevs for " + std::to_string(channels) +
        " channels");
  }
  // Finite statistics keep the host's and the GPU's results equal for every input: a NaN then
  // only comes from a NaN sample (see cuda_decode.cu).
  for (uint32_t c = 0; c < channels; ++c) {
    if (!std::isfinite(mean[c]) || !std::isfinite(stddev[c])) {
      return Status::Usage("normalize needs a finite mean and stddev for every channel; channel " +
                           std::to_string(c) + " has mean " + Number(mean[c]) + " and stddev " +
                           Number(stddev[c]));
    }
  }
  return Status::Ok();
}

size_t DecodeSpec::OutputSampleBytes() const {
  return size_t{channels} * height * width * DTypeSize(output);
}

void DecodeSamplesOnHost(const DecodeSpec& s, const void* stored, uint32_t n, void* out,
                         const AugmentBatch& augment) {
  if (s.output == s.stored && !s.normalize) return PassThrough(s, stored, n, out, augment);
  VisitSampleDType(s.stored, [&](auto in_dtype) {
    VisitDType(FloatDTypes{}, s.output, [&](auto out_dtype) {
      using In = decltype(in_dtype);
      using Out = decltype(out_dtype);
      const bool augmented = augment.params.enabled();
      if (s.normalize) {
        augmented ? DecodeInLayout<In, Out, true, true>(s, stored, n, out, augment)
                  : DecodeInLayout<In, Out, true, false>(s, stored, n, out, augment);
      } else {
        augmented ? DecodeInLayout<In, Out, false, true>(s, stored, n, out, augment)
                  : DecodeInLayout<In, Out, false, false>(s, stored, n, out, augment);
      }
    });
  });
}

void DecodeLabelsOnHost(DType label_dtype, const void* labels, uint32_t n, int64_t* out) {
  VisitDType(IntegerDTypes{}, label_dtype, [&](auto dtype) {
    using T = typename decltype(dtype)::Type;
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(LoadAt<T>(labels, i));
  });
}

}  // namespace rf
