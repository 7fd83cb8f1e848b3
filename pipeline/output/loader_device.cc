#include "pipeline/output/loader_device.h"

#include <cstring>

namespace rf {
namespace {

template <typename In, typename Out>
void Widen(const LoaderDevice::SequencePut& p) {
  const auto* narrow = reinterpret_cast<const In*>(p.host);
  const auto* lengths = reinterpret_cast<const int64_t*>(p.host + p.lengths_at);
  const auto* cu = reinterpret_cast<const int32_t*>(p.host + p.cu_at);
  auto* tokens = static_cast<Out*>(p.tokens);
  for (uint64_t r = 0; r < p.rows; ++r) {
    for (uint64_t c = 0; c < p.row; ++c) {
      const uint64_t i = r * p.row + c;
      tokens[i] = static_cast<int64_t>(c) < lengths[r] ? static_cast<Out>(narrow[i])
                                                       : static_cast<Out>(p.pad);
    }
  }
  std::memcpy(p.lengths, lengths, p.rows * sizeof(int64_t));
  std::memcpy(p.cu, cu, (p.segments + 1) * sizeof(int32_t));
  // Each input's place in the last segment that starts at or before it.
  const int64_t inputs = static_cast<int64_t>(p.rows * (p.row - 1));
  uint64_t k = 0;
  for (int64_t at = 0; at < inputs; ++at) {
    while (k + 1 < p.segments && cu[k + 1] <= at) ++k;
    p.positions[at] = at - cu[k];
  }
}

template <typename Out>
void WidenFrom(const LoaderDevice::SequencePut& p) {
  switch (p.narrow_bytes) {
    case 2:
      return Widen<uint16_t, Out>(p);
    case 4:
      return Widen<int32_t, Out>(p);
    default:
      return Widen<int64_t, Out>(p);
  }
}

}  // namespace

void WidenSequencesOnHost(const LoaderDevice::SequencePut& p) {
  if (p.out_int32) {
    WidenFrom<int32_t>(p);
  } else {
    WidenFrom<int64_t>(p);
  }
}

}  // namespace rf
