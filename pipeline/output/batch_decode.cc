#include "pipeline/output/batch_decode.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "decode/dtypes.h"
#include "decode/host_decode.h"

namespace rf {
namespace {

using decode::FloatDTypes;
using decode::VisitDType;
using decode::VisitSampleDType;

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
  // only comes from a NaN sample (see decode/element.h's NanBits).
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

decode::Plan DecodeSpec::ToPlan() const {
  decode::Plan p;
  p.stored = stored;
  p.output = output;
  p.normalize = normalize;
  p.layout = layout == SampleLayout::kNHWC ? decode::Layout::kNHWC : decode::Layout::kNCHW;
  p.channels = p.out_channels = channels;
  p.height = height;
  p.width = width;
  p.stats = {mean.data(), stddev.data()};
  return p;
}

void DecodeSamplesOnHost(const DecodeSpec& s, const void* stored, uint32_t n, void* out,
                         const AugmentBatch& augment) {
  decode::DecodeOnHost(s.ToPlan(), stored, n, out, augment);
}

void DecodeLabelsOnHost(DType label_dtype, const void* labels, uint32_t n, int64_t* out) {
  decode::ForEachLabel(label_dtype, labels, n, [&](uint32_t i, int64_t label) { out[i] = label; });
}

}  // namespace rf
