#include "pipeline/order/epoch_remainder.h"

#include <algorithm>
#include <string>

namespace rf {
namespace {

constexpr uint64_t kUnknown = ~uint64_t{0};

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Entries of a list of `total` that rank `rank` of a level of `q` per rank takes before its
// padding: min(q, total - rank * q), or 0.
uint64_t SliceLength(uint64_t total, uint64_t q, uint64_t rank) {
  return total > rank * q ? std::min(q, total - rank * q) : 0;
}

}  // namespace

// The levels' lists as ranges, and the walk that maps this rank's slice down to pieces.
class EpochRemainder::Builder {
 public:
  Builder(EpochRemainder& out, const OrderSettings& o)
      : out_(out), old_(out.old_), deal_(old_.Deal(out.epoch_)) {
    // Each old rank's part of the shared stream, and where each of its windows starts in its
    // order (a round-robin deal's are the same for every old rank; a balanced deal's are not).
    std::vector<uint64_t> chunks;
    bounds_.resize(old_.world_size());
    for (uint32_t r = 0; r < old_.world_size(); ++r) {
      out_.shares_.push_back(old_.Share(deal_, r));
      bounds_[r].push_back(0);
      for (uint64_t w = 0; w < old_.windows(); ++w) {
        chunks.clear();
        old_.AppendWindowChunks(deal_, r, w, &chunks);
        bounds_[r].push_back(bounds_[r].back() +
                             old_.WindowSamples(chunks.data(), out_.shares_[r], w));
      }
    }
    const uint64_t c0 = old_.RankSamples();
    const std::vector<EpochStretch>& stretches = o.resumed.stretches;
    p0_ = std::min(stretches[0].position, c0);
    pad_.assign(old_.world_size(), kUnknown);
    out_.level_samples_.push_back(c0);

    // L1: the old ranks' rests, without padding entries after p0.
    Level l1;
    l1.offset.push_back(0);
    for (uint32_t r = 0; r < old_.world_size(); ++r) {
      const uint64_t pad = PadPosition(r, /*needed=*/p0_ > LastWindowStart(r));
      const bool pad_left = old_.HasPadding(r) && (pad == kUnknown || pad >= p0_);
      l1.start.push_back(p0_);
      l1.offset.push_back(l1.offset.back() + (c0 - p0_) - (pad_left ? 1 : 0));
    }
    levels_.push_back(std::move(l1));
    // L2, L3, ...: each stretch after the first splits the list before it and trains a part.
    for (size_t k = 1; k <= stretches.size(); ++k) {
      const uint64_t total = levels_.back().offset.back();
      const uint32_t world =
          std::max<uint32_t>(1, k < stretches.size() ? stretches[k].world_size : o.world_size);
      const uint64_t q = CeilDiv(total, world);
      out_.level_samples_.push_back(q);
      if (k == stretches.size()) break;
      const uint64_t p = std::min(stretches[k].position, q);
      Level next;
      next.offset.push_back(0);
      for (uint64_t j = 0; j < world; ++j) {
        const uint64_t s = SliceLength(total, q, j);
        next.start.push_back(j * q + p);
        next.offset.push_back(next.offset.back() + (s > p ? s - p : 0));
      }
      levels_.push_back(std::move(next));
    }
  }

  // This run's rank: its slice of the last list, then the padding from the list's start.
  void EmitRank(uint32_t world, uint32_t rank) {
    world = std::max<uint32_t>(1, world);
    rank = std::min(rank, world - 1);
    const uint64_t total = levels_.back().offset.back(), q = out_.samples();
    const uint64_t s = SliceLength(total, q, rank);
    Emit(levels_.size(), rank * q, rank * q + s);
    Emit(levels_.size(), 0, q - s);
  }

  // Pieces that are part of their old window keep only the chunks their entries read.
  void TrimParts() {
    std::vector<uint64_t> chunks;
    for (Piece& p : out_.pieces_) {
      const std::vector<uint64_t>& bounds = bounds_[p.old_rank];
      if (p.samples < bounds[p.old_window + 1] - bounds[p.old_window]) {
        chunks.clear();
        old_.AppendWindowChunks(deal_, p.old_rank, p.old_window, &chunks);
        const std::vector<WindowEntry> entries =
            old_.Window(chunks.data(), out_.epoch_, out_.shares_[p.old_rank], p.old_window);
        std::vector<bool> read(chunks.size(), false);
        for (size_t i = p.first_range; i < p.first_range + p.ranges; ++i) {
          for (uint64_t e = out_.ranges_[i].first; e < out_.ranges_[i].second; ++e) {
            read[entries[e].chunk_in_window] = true;
          }
        }
        Part part{chunks, {}};
        for (uint32_t c = 0; c < read.size(); ++c) {
          if (read[c]) part.kept.push_back(c);
        }
        p.part = out_.parts_.size();
        out_.parts_.push_back(std::move(part));
      }
    }
    for (size_t w = 0; w < out_.pieces_.size(); ++w) {
      out_.max_window_chunks_ = std::max<uint64_t>(out_.max_window_chunks_, out_.WindowChunks(w));
    }
  }

 private:
  // L_k (k >= 1) is the concatenation of its segments: segment j is entries start[j] ..
  // start[j] + offset[j + 1] - offset[j] - 1 of L_{k-1}; for L1, segment r is old rank r's order
  // from start[r] = p0 on, without its padding entry.
  struct Level {
    std::vector<uint64_t> start, offset;  // offset: prefix sums of the segments' lengths
  };

  // Old rank r's padding entry: its position in r's order, or kUnknown without one (or where it
  // is not `needed`: the caller knows it lies at or after p0 then).
  uint64_t PadPosition(uint32_t r, bool needed) {
    if (!old_.HasPadding(r) || (!needed && pad_[r] == kUnknown)) return kUnknown;
    if (pad_[r] == kUnknown) {
      const uint64_t last = old_.windows() - 1;
      std::vector<uint64_t> chunks;
      old_.AppendWindowChunks(deal_, r, last, &chunks);
      uint64_t at = WorldOrder::kNoPadding;
      (void)old_.Window(chunks.data(), out_.epoch_, out_.shares_[r], last, &at);
      pad_[r] = bounds_[r][last] + at;
    }
    return pad_[r];
  }

  // Entries [a, b) of L_k, in order.
  void Emit(size_t k, uint64_t a, uint64_t b) {
    if (a >= b) return;
    const Level& level = levels_[k - 1];
    size_t j =
        std::upper_bound(level.offset.begin(), level.offset.end(), a) - level.offset.begin() - 1;
    for (; a < b; ++j) {
      const uint64_t end = level.offset[j + 1];
      if (end <= a) continue;  // an empty segment
      const uint64_t hi = std::min(b, end);
      const uint64_t from = level.start[j] + (a - level.offset[j]), to = from + (hi - a);
      if (k == 1) {
        EmitOld(static_cast<uint32_t>(j), from, to);
      } else {
        Emit(k - 1, from, to);
      }
      a = hi;
    }
  }

  // Old rank r's order from `from` to `to` (positions counted without its padding entry where
  // that lies at or after p0): the padding entry is stepped over.
  void EmitOld(uint32_t r, uint64_t from, uint64_t to) {
    // Short of the last window, the run ends before any padding entry there.
    const uint64_t pad = PadPosition(r, /*needed=*/to > LastWindowStart(r));
    if (pad == kUnknown || pad < p0_ || to <= pad) return EmitReal(r, from, to);
    if (from >= pad) return EmitReal(r, from + 1, to + 1);
    EmitReal(r, from, pad);
    EmitReal(r, pad + 1, to + 1);
  }

  // Positions [from, to) of old rank r's order, split at its windows' edges.
  void EmitReal(uint32_t r, uint64_t from, uint64_t to) {
    const std::vector<uint64_t>& bounds = bounds_[r];
    uint64_t w = std::upper_bound(bounds.begin(), bounds.end(), from) - bounds.begin() - 1;
    for (; from < to; ++w) {
      const uint64_t hi = std::min(to, bounds[w + 1]);
      AddPiece(r, w, from - bounds[w], hi - bounds[w]);
      from = hi;
    }
  }

  // Where old rank r's last window starts in its order.
  uint64_t LastWindowStart(uint32_t r) const { return bounds_[r][bounds_[r].size() - 2]; }

  void AddPiece(uint32_t r, uint64_t w, uint64_t begin, uint64_t end) {
    if (begin == end) return;
    std::vector<Piece>& pieces = out_.pieces_;
    auto& ranges = out_.ranges_;
    if (pieces.empty() || pieces.back().old_rank != r || pieces.back().old_window != w) {
      pieces.push_back({r, w, 0, ranges.size(), 0, kWhole});
    }
    Piece& p = pieces.back();
    p.samples += end - begin;
    if (p.ranges != 0 && ranges.back().second == begin) {
      ranges.back().second = end;  // the run goes on: one range
    } else {
      ranges.emplace_back(begin, end);
      ++p.ranges;
    }
  }

  EpochRemainder& out_;
  const WorldOrder& old_;
  const EpochDeal deal_;                       // stretch 0's epoch
  std::vector<std::vector<uint64_t>> bounds_;  // bounds_[r][w]: old rank r's before its window w
  uint64_t p0_ = 0;
  std::vector<uint64_t> pad_;  // per old rank: its padding position, once found
  std::vector<Level> levels_;  // L1, L2, ..., the list this run splits
};

EpochRemainder::EpochRemainder(std::shared_ptr<const ChunkTable> table, const OrderSettings& o)
    : old_(std::move(table), o.shuffle == ShuffleMode::kWindow, o.shuffle_window,
           o.first_window_chunks, o.seed, o.resumed.stretches.at(0).world_size,
           o.resumed.stretches.at(0).node_ranks),
      epoch_(o.resumed.epoch) {
  Builder b(*this, o);
  b.EmitRank(o.world_size, o.rank);
  b.TrimParts();
}

uint32_t EpochRemainder::WindowChunks(uint64_t w) const {
  const Piece& p = pieces_[w];
  if (p.part == kWhole) return old_.WindowChunks(p.old_window);
  return static_cast<uint32_t>(parts_[p.part].kept.size());
}

uint64_t EpochRemainder::BatchSpanChunks(uint32_t batch) const {
  uint64_t most = 0;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    // A batch whose first sample is window i's last: batch - 1 more samples from the next ones.
    uint64_t chunks = WindowChunks(i), more = batch > 0 ? batch - 1 : 0;
    for (size_t j = i + 1; j < pieces_.size() && more > 0; ++j) {
      chunks += WindowChunks(j);
      more -= std::min(more, pieces_[j].samples);
    }
    most = std::max(most, chunks);
  }
  return most;
}

void EpochRemainder::Chunks(std::vector<uint64_t>* chunks, std::vector<uint64_t>* starts) const {
  const EpochDeal deal = old_.Deal(epoch_);
  chunks->clear();
  starts->assign(1, 0);
  for (const Piece& p : pieces_) {
    if (p.part == kWhole) {
      old_.AppendWindowChunks(deal, p.old_rank, p.old_window, chunks);
    } else {
      for (uint32_t c : parts_[p.part].kept) chunks->push_back(parts_[p.part].window[c]);
    }
    starts->push_back(chunks->size());
  }
}

std::vector<WindowEntry> EpochRemainder::Window(const uint64_t* window_chunks, uint64_t w) const {
  const Piece& p = pieces_[w];
  const Part* part = p.part == kWhole ? nullptr : &parts_[p.part];
  // Part of a window: its entries are the old window's, and their chunks the kept ones.
  const std::vector<WindowEntry> all = old_.Window(part ? part->window.data() : window_chunks,
                                                   epoch_, shares_[p.old_rank], p.old_window);
  std::vector<WindowEntry> out;
  out.reserve(p.samples);
  for (size_t i = p.first_range; i < p.first_range + p.ranges; ++i) {
    out.insert(out.end(), all.begin() + ranges_[i].first, all.begin() + ranges_[i].second);
  }
  if (part != nullptr) {
    for (WindowEntry& e : out) {
      e.chunk_in_window = static_cast<uint32_t>(
          std::lower_bound(part->kept.begin(), part->kept.end(), e.chunk_in_window) -
          part->kept.begin());
    }
  }
  return out;
}

Status CheckStretches(const std::vector<uint32_t>& chunk_samples, const OrderSettings& order) {
  const std::vector<EpochStretch>& stretches = order.resumed.stretches;
  if (stretches.empty()) return Status::Ok();
  const std::string epoch = " of epoch " + std::to_string(order.resumed.epoch + 1);
  for (size_t k = 0; k < stretches.size(); ++k) {
    if (stretches[k].world_size < 1) {
      return Status::Usage("stretch " + std::to_string(k + 1) + epoch +
                           ": world size must be >= 1, got 0");
    }
  }
  const EpochRemainder r(std::make_shared<const ChunkTable>(chunk_samples), order);
  // A level's count depends on the positions before it only, and those are in range here.
  for (size_t k = 0; k < stretches.size(); ++k) {
    const EpochStretch& s = stretches[k];
    if (s.position > r.level_samples()[k]) {
      return Status::Usage("stretch " + std::to_string(k + 1) + epoch + " (world size " +
                           std::to_string(s.world_size) + "): position " +
                           std::to_string(s.position) + " is past its " +
                           std::to_string(r.level_samples()[k]) + " samples per rank");
    }
  }
  return Status::Ok();
}

}  // namespace rf
