#include "pipeline/sources/mixture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "pipeline/order/window_order.h"

namespace rf {

size_t MixtureSource(const std::vector<double>& weights, uint64_t seed, uint64_t k,
                     const std::vector<uint64_t>& drawn) {
  const size_t n = weights.size();
  size_t best = 0;
  double best_deficit = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < n; ++j) {
    const size_t i = (seed + j) % n;  // ties: the first from seed mod n on
    if (weights[i] <= 0) continue;
    const double deficit = weights[i] * static_cast<double>(k + 1) - static_cast<double>(drawn[i]);
    if (deficit > best_deficit) {
      best_deficit = deficit;
      best = i;
    }
  }
  return best;
}

Result<std::vector<double>> NormalizeWeights(const std::vector<float>& weights, size_t sources) {
  if (weights.size() != sources)
    return Status::Usage("weights: one weight a dataset: " + std::to_string(sources) +
                         " datasets, " + std::to_string(weights.size()) + " weights");
  double sum = 0;
  for (float w : weights) {
    if (!std::isfinite(w) || w < 0)
      return Status::Usage("weights must be finite and >= 0, got " + std::to_string(w));
    sum += w;
  }
  if (sum <= 0) return Status::Usage("weights: at least one must be above 0");
  std::vector<double> out;
  for (float w : weights) out.push_back(w / sum);
  return out;
}

Status CheckMixtureDraws(const std::vector<double>& weights, uint64_t draws,
                         const std::vector<uint64_t>& drawn, const std::string& unit) {
  uint64_t sum = 0;
  for (uint64_t d : drawn) {
    if (__builtin_add_overflow(sum, d, &sum))
      return Status::Usage("the state's draws sum to more than 2^64 - 1, not its " +
                           std::to_string(draws) + " " + unit);
  }
  if (sum != draws)
    return Status::Usage("the state's draws sum to " + std::to_string(sum) + ", not its " +
                         std::to_string(draws) + " " + unit);
  const size_t n = weights.size();
  // w_i draws in a double is within draws * 2^-52 of its value; the rule's deficits round so too.
  const double bound =
      std::max<double>(1, static_cast<double>(n) - 1) + static_cast<double>(draws) * 0x1p-50;
  for (size_t i = 0; i < n && i < drawn.size(); ++i) {
    const std::string named = "the state's dataset " + std::to_string(i) + " drew " +
                              std::to_string(drawn[i]) + " of its " + std::to_string(draws) + " " +
                              unit;
    if (weights[i] <= 0 && drawn[i] != 0)
      return Status::Usage(named + ", but its weight is 0: it never draws");
    const double expected = weights[i] * static_cast<double>(draws);
    if (std::fabs(static_cast<double>(drawn[i]) - expected) >= bound) {
      char text[96];
      std::snprintf(text, sizeof text, "%.6g of %.6g (weight %.6g)", bound, expected, weights[i]);
      const std::string rule = text;
      return Status::Usage(named + ", which no mixture of these weights draws: the rule draws " +
                           "within " + rule);
    }
  }
  return Status::Ok();
}

namespace {

// What a dataset's samples are, for a message: "image records", "tokens records",
// "uint8 samples of shape 3x32x32".
std::string SamplesText(const format::Header& h) {
  if (h.variable()) {
    return (h.media_type.empty() ? std::string() : h.media_type + " ") +
           format::RecordKindName(h.record_kind) + " records";
  }
  return std::string(DTypeName(h.sample_dtype)) + " samples of shape " +
         format::ShapeText(h.Shape());
}

// Usage naming `b`, `a` and the first class on which their class lists (the class names blocks)
// differ; OK where they are the same list.
Status CheckSameClasses(const Dataset& a, const Dataset& b) {
  const std::vector<std::string>&x = a.class_names(), &y = b.class_names();
  if (x == y) return Status::Ok();
  std::string what = "holds other classes than " + a.path() + ": ";
  const size_t common = std::min(x.size(), y.size());
  size_t k = 0;
  while (k < common && x[k] == y[k]) ++k;
  if (k < common) {
    what += "its class " + std::to_string(k) + " is \"" + y[k] + "\", not \"" + x[k] + "\"";
  } else if (x.empty() || y.empty()) {
    const std::string named = std::to_string(std::max(x.size(), y.size())) + " class names";
    what += y.empty() ? "it has none, " + a.path() + " " + named
                      : "it has " + named + ", " + a.path() + " none";
  } else {
    what += "it has " + std::to_string(y.size()) + " class names, not " + std::to_string(x.size()) +
            " (the first " + std::to_string(common) + " the same)";
  }
  what +=
      " (a label names one class in every dataset of a mixture, so their class lists must be "
      "equal, in the same order)";
  return std::move(Status::Usage(what).WithPath(b.path()));
}

}  // namespace

Status CheckMixable(const std::vector<const Dataset*>& datasets) {
  const Dataset& a = *datasets[0];
  for (size_t i = 1; i < datasets.size(); ++i) {
    const Dataset& b = *datasets[i];
    const format::Header &ha = a.header(), &hb = b.header();
    if (format::HoldsImageRecords(ha) != format::HoldsImageRecords(hb)) {
      // Decoded images and anything else: said so, before the fields in which they differ.
      return std::move(
          Status::Usage("cannot be mixed with " + a.path() + ": it holds " + SamplesText(hb) +
                        ", " + a.path() + " " + SamplesText(ha) +
                        "; a mixture's datasets are drawn into the same batches, so a mixture "
                        "of image datasets (decoded into images) takes image datasets only")
              .WithPath(b.path()));
    }
    RF_RETURN_IF_ERROR(CheckSameClasses(a, b));
    const Status st = CheckSameRecords(ha, a.path(), hb, b.path(), RecordsUse::kMixture);
    if (!st.ok()) return Status::Usage(st.message()).WithPath(st.path());
  }
  return Status::Ok();
}

bool MixtureStatistics(const std::vector<const format::Header*>& headers,
                       const std::vector<double>& weights, uint32_t channels,
                       std::array<float, format::kMaxChannels>* mean,
                       std::array<float, format::kMaxChannels>* stddev) {
  *mean = headers[0]->mean;
  *stddev = headers[0]->stddev;
  for (uint32_t c = 0; c < std::min(channels, format::kMaxChannels); ++c) {
    double m = 0;
    for (size_t i = 0; i < headers.size(); ++i) m += weights[i] * headers[i]->mean[c];
    double var = 0;
    for (size_t i = 0; i < headers.size(); ++i) {
      const double s = headers[i]->stddev[c], d = headers[i]->mean[c] - m;
      var += weights[i] * (s * s + d * d);
    }
    const float fm = static_cast<float>(m), fs = static_cast<float>(std::sqrt(var));
    if (!std::isfinite(fm) || !std::isfinite(fs)) return false;
    (*mean)[c] = fm;
    (*stddev)[c] = fs;
  }
  return true;
}

uint64_t MixtureSamples(const std::vector<uint64_t>& dataset_samples,
                        const std::vector<double>& weights) {
  uint64_t m = 0;
  for (size_t i = 0; i < dataset_samples.size(); ++i) {
    if (weights[i] > 0) m += dataset_samples[i];
  }
  return m;
}

Result<uint64_t> MixtureEpochCount(uint64_t mixture_samples, const OrderSettings& order,
                                   uint64_t epoch) {
  const auto ceil_div = [](uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); };
  const uint64_t world = std::max<uint32_t>(order.world_size, 1);
  uint64_t left = mixture_samples;
  const std::vector<EpochStretch>& stretches = order.resumed.stretches;
  if (order.resumed.epoch == epoch) {
    for (size_t k = 0; k < stretches.size(); ++k) {
      const EpochStretch& s = stretches[k];
      const std::string named =
          "stretch " + std::to_string(k + 1) + " of epoch " + std::to_string(epoch + 1);
      if (s.world_size < 1) return Status::Usage(named + ": world size must be >= 1, got 0");
      const uint64_t steps = ceil_div(left, s.world_size);
      if (s.position > steps) {
        return Status::Usage(named + " (world size " + std::to_string(s.world_size) +
                             "): position " + std::to_string(s.position) + " is past its " +
                             std::to_string(steps) + " samples per rank");
      }
      left -= std::min(left, s.position * s.world_size);
    }
  }
  return ceil_div(left, world);
}

MixtureState ContinueMixture(const MixtureState& saved, RankLayout saved_layout, RankLayout now) {
  MixtureState out = saved;
  for (MixtureSourceState& s : out.sources) {
    const ResumePoint at = ResumeAt(s.epoch, s.stretches, saved_layout, s.position, now);
    s.position = at.position;
    s.stretches = at.resumed.stretches;
  }
  return out;
}

}  // namespace rf
