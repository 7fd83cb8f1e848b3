#include "kernels/reduce_buckets.h"

#include <algorithm>

#include "core/units.h"

namespace rf {
namespace {

// The ParameterShapes indices of backward unit u (model/model.h's order: block b's filter and
// bias at 2b and 2b + 1; fc1's weight and bias, then fc2's, after the blocks; the batch-norm
// scales after fc2).
std::vector<size_t> UnitTensors(const ModelConfig& c, size_t u) {
  const size_t blocks = c.conv.size(), fc1 = 2 * blocks;
  if (u == 0) return {fc1 + 2, fc1 + 3};
  if (u == 1) return {fc1, fc1 + 1};
  const size_t b = blocks - 1 - (u - 2);
  std::vector<size_t> t = {2 * b, 2 * b + 1};
  if (c.batch_norm) t.push_back(fc1 + 4 + b);
  return t;
}

}  // namespace

size_t ReduceUnitCount(const ModelConfig& config) { return 2 + config.conv.size(); }

std::vector<ReduceBucket> PlanReduceBuckets(const ModelConfig& config,
                                            const std::vector<size_t>& offsets, size_t padded_count,
                                            uint32_t max_buckets) {
  const size_t units = ReduceUnitCount(config);
  auto tensor_end = [&](size_t t) {
    return t + 1 < offsets.size() ? offsets[t + 1] : padded_count;
  };
  std::vector<size_t> unit_bytes(units);
  for (size_t u = 0; u < units; ++u) {
    for (size_t t : UnitTensors(config, u)) unit_bytes[u] += (tensor_end(t) - offsets[t]) * 4;
  }
  // Buckets as [first, last] unit spans, merged as the file comment says.
  std::vector<std::pair<size_t, size_t>> spans;
  std::vector<size_t> bytes;
  for (size_t u = 0; u < units; ++u) {
    spans.emplace_back(u, u);
    bytes.push_back(unit_bytes[u]);
  }
  if (max_buckets == 0) {
    // Auto: a layer under kAutoBucketBytes joins the one the backward pass finishes next; the
    // last stays alone.
    for (size_t k = 0; k + 1 < spans.size();) {
      if (bytes[k] >= kAutoBucketBytes) {
        ++k;
        continue;
      }
      spans[k].second = spans[k + 1].second;
      bytes[k] += bytes[k + 1];
      spans.erase(spans.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    }
  }
  while (max_buckets != 0 && spans.size() > max_buckets) {
    const size_t s = std::min_element(bytes.begin(), bytes.end()) - bytes.begin();
    // Its smaller neighbour; a tie (or the only one) goes to the later.
    size_t other;
    if (s == 0) {
      other = 1;
    } else if (s + 1 == spans.size()) {
      other = s - 1;
    } else {
      other = bytes[s - 1] < bytes[s + 1] ? s - 1 : s + 1;
    }
    const size_t lo = std::min(s, other);
    spans[lo].second = spans[lo + 1].second;
    bytes[lo] += bytes[lo + 1];
    spans.erase(spans.begin() + static_cast<std::ptrdiff_t>(lo) + 1);
    bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(lo) + 1);
  }
  std::vector<ReduceBucket> out;
  for (size_t k = 0; k < spans.size(); ++k) {
    ReduceBucket b;
    b.first_unit = spans[k].first;
    b.last_unit = spans[k].second;
    b.bytes = bytes[k];
    std::vector<size_t> tensors;
    for (size_t u = b.first_unit; u <= b.last_unit; ++u) {
      for (size_t t : UnitTensors(config, u)) tensors.push_back(t);
    }
    std::sort(tensors.begin(), tensors.end());
    for (size_t t : tensors) {  // adjacent tensors join one run
      if (!b.ranges.empty() && b.ranges.back().offset + b.ranges.back().count == offsets[t]) {
        b.ranges.back().count += tensor_end(t) - offsets[t];
      } else {
        b.ranges.push_back({offsets[t], tensor_end(t) - offsets[t]});
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::string ReduceBucketsText(const std::vector<ReduceBucket>& buckets) {
  if (buckets.size() <= 1) return "one reduction after the backward pass";
  std::string s = std::to_string(buckets.size()) + " buckets during the backward pass (";
  for (size_t k = 0; k < buckets.size(); ++k) {
    s += (k ? ", " : "") + FormatBytes(buckets[k].bytes);
  }
  return s + ")";
}

}  // namespace rf
