#include "pipeline/sequences/sequence_packer.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace rf {
namespace {

// The bytes a packing thread writes at least for a batch to be split over more threads (less,
// and waking a thread costs more than it saves).
constexpr uint64_t kPartBytes = 128 << 10;

// `count` ids of `src` (stored dtype s) into `dst`.
template <typename Out>
void CopyIds(const uint8_t* src, DType s, uint64_t count, Out* dst) {
  switch (s) {
    case DType::kUInt16: {
      if constexpr (std::is_same_v<Out, uint16_t>) {
        std::memcpy(dst, src, count * sizeof(Out));
        return;
      }
      const auto* p = reinterpret_cast<const uint16_t*>(src);
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
    case DType::kInt32: {
      if constexpr (std::is_same_v<Out, int32_t>) {
        std::memcpy(dst, src, count * sizeof(Out));
        return;
      }
      const auto* p = reinterpret_cast<const int32_t*>(src);
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
    default: {
      if constexpr (std::is_same_v<Out, int64_t>) {
        std::memcpy(dst, src, count * sizeof(Out));
        return;
      }
      const auto* p = reinterpret_cast<const int64_t*>(src);
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
  }
}

// Parts of `total` units for threads that each take at least `least` (at most `most` parts).
uint32_t Parts(uint64_t total, uint64_t least, uint32_t most) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(total / std::max<uint64_t>(least, 1), 1, most));
}

}  // namespace

void SequencePacker::Flush() {
  const size_t from = done_, to = pieces_.size();
  if (from == to) return;
  uint64_t ids = 0;
  for (size_t i = from; i < to; ++i) ids += pieces_[i].count;
  const uint32_t parts = Parts(ids * DTypeSize(out_), kPartBytes, 2 * pool_.threads());
  pool_.Run(parts, [&](uint32_t p) {
    // Parts of about equal ids, cut at pieces.
    const uint64_t lo = ids * p / parts, hi = ids * (p + 1) / parts;
    uint64_t at = 0;
    for (size_t i = from; i < to && at < hi; ++i) {
      if (at >= lo) Copy(pieces_[i]);
      at += pieces_[i].count;
    }
  });
  done_ = to;
}

void SequencePacker::Finish(uint64_t rows, const int64_t* lengths, const int32_t* cu,
                            const std::vector<size_t>& row_segments, int64_t* positions,
                            int64_t pad) {
  row_pieces_.push_back(pieces_.size());
  const uint64_t per_row = row_ * (DTypeSize(out_) + (positions != nullptr ? 8 : 0));
  const uint32_t parts = static_cast<uint32_t>(
      std::min<uint64_t>(rows, Parts(rows * per_row, kPartBytes, 2 * pool_.threads())));
  pool_.Run(parts, [&](uint32_t p) {
    const uint64_t r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
    for (size_t i = std::max(row_pieces_[r0], done_); i < row_pieces_[r1]; ++i) Copy(pieces_[i]);
    if (positions == nullptr) return;
    for (uint64_t r = r0; r < r1; ++r) {
      Fill(r * row_ + static_cast<uint64_t>(lengths[r]), (r + 1) * row_, pad);
      for (size_t k = row_segments[r]; k < row_segments[r + 1]; ++k) {
        const int64_t first = cu[k], end = cu[k + 1];
        int64_t* out = positions + first;
        for (int64_t t = 0; t < end - first; ++t) out[t] = t;
      }
    }
  });
  done_ = pieces_.size();
}

template <typename Out>
void SequencePacker::CopyAs(const Piece& piece) {
  Out* dst = reinterpret_cast<Out*>(tokens_) + piece.dst;
  if (piece.src == nullptr) {
    *dst = static_cast<Out>(eod_);
  } else {
    CopyIds(piece.src, piece.dtype, piece.count, dst);
  }
}

void SequencePacker::Copy(const Piece& piece) {
  switch (out_) {
    case DType::kUInt16:
      return CopyAs<uint16_t>(piece);
    case DType::kInt32:
      return CopyAs<int32_t>(piece);
    default:
      return CopyAs<int64_t>(piece);
  }
}

void SequencePacker::Fill(uint64_t from, uint64_t to, int64_t pad) {
  if (out_ == DType::kInt32) {
    std::fill(reinterpret_cast<int32_t*>(tokens_) + from, reinterpret_cast<int32_t*>(tokens_) + to,
              static_cast<int32_t>(pad));
  } else {
    std::fill(reinterpret_cast<int64_t*>(tokens_) + from, reinterpret_cast<int64_t*>(tokens_) + to,
              pad);
  }
}

}  // namespace rf
