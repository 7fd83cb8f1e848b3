// WorldOrder: WindowOrder's ordinary epochs (pipeline/order/window_order.h states the order and the
// rank partition) at one world size, for ANY of its ranks: the rank is an argument, not a member.
// So the remainder of an epoch begun at another world size (pipeline/order/epoch_remainder.h) walks
// the old ranks' orders with one object for their world and one deal of the epoch's chunks, without
// an order or a chunk list per old rank.
//
//   ChunkTable  the dataset's chunk layout, shared (read-only) by every order built over it
//   EpochDeal   one epoch's chunks at one world size: the dealt chunks of all ranks (rank r's
//               i-th is dealt[i * N + r]), the shared ones, and for a balanced deal each rank's
//               run of the shared stream (pipeline/order/window_order.h states both deals)
//
// Thread safety: immutable after construction; any thread may call the methods.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace rf {

struct ChunkTable {
  // chunk_samples[g]: the samples of global chunk g (chunks hold consecutive samples, in order).
  explicit ChunkTable(std::vector<uint32_t> chunk_samples);

  uint64_t sample_count() const { return first.back(); }
  bool IsFull(uint64_t chunk) const { return samples[chunk] == full_samples; }

  std::vector<uint32_t> samples;
  std::vector<uint64_t> first;  // first[g]: global index of chunk g's first sample; back(): total
  uint32_t full_samples = 0;    // the largest chunk's samples
  uint64_t full_chunks = 0;     // chunks holding full_samples
};

// One sample of a window: which of the window's chunks (0 .. chunks - 1, in visiting order) and
// which sample of that chunk.
struct WindowEntry {
  uint32_t chunk_in_window;
  uint32_t sample;
};

// One rank's part of one epoch's shared stream: which rank, and for a balanced deal its samples
// of the stream (first, count); what Window and WindowSamples need beside a window's chunks.
struct RankShare {
  uint32_t rank = 0;
  uint64_t first = 0, count = 0;
};

struct EpochDeal {
  std::vector<uint64_t> dealt;   // every rank's dealt chunks (rank r's i-th is dealt[i * N + r])
  std::vector<uint64_t> shared;  // every rank reads them, in permutation order
  // A balanced deal's (WorldOrder::balanced()), one a rank: its run of the shared stream. Empty
  // for a round-robin deal, whose runs are strided and the same size for every rank.
  std::vector<RankShare> shares;
};

class WorldOrder {
 public:
  static constexpr uint64_t kNoPadding = std::numeric_limits<uint64_t>::max();

  // A world_size of 0 counts as 1; a window of 0 chunks as 1; the first window is clamped to
  // [1, window_chunks].
  WorldOrder(std::shared_ptr<const ChunkTable> table, bool shuffle, uint32_t window_chunks,
             uint32_t first_window_chunks, uint64_t seed, uint32_t world_size);

  const ChunkTable& table() const { return *table_; }
  uint32_t world_size() const { return world_; }
  uint32_t window_chunks() const { return window_; }
  // Whether the chunks are dealt balanced by samples (records of any size; see the class comment)
  // rather than round-robin among the full chunks.
  bool balanced() const { return balanced_; }

  // Per rank and epoch, the same for every rank and every ordinary epoch.
  uint64_t dealt() const { return dealt_; }    // chunks dealt to the rank
  uint64_t shared() const { return shared_; }  // shared chunks (each rank reads them all)
  uint64_t RankSamples() const;                // samples the rank trains on
  // Whether the rank's share of the shared stream wraps: its last window then holds one padding
  // entry, a repeat of a sample another rank trains on.
  bool HasPadding(uint32_t rank) const;

  uint64_t windows() const;
  uint64_t WindowStart(uint64_t w) const { return w == 0 ? 0 : first_window_ + (w - 1) * window_; }
  uint32_t WindowChunks(uint64_t w) const;  // 0 past the last window
  uint64_t max_window_chunks() const;

  // Epoch `epoch`'s chunks at this world size (one permutation of the dataset's chunks).
  EpochDeal Deal(uint64_t epoch) const;
  // Rank `rank`'s part of the deal's shared stream.
  RankShare Share(const EpochDeal& deal, uint32_t rank) const;
  // Chunk i of the rank's epoch (dealt, then shared).
  uint64_t RankChunk(const EpochDeal& deal, uint32_t rank, uint64_t i) const {
    return i < dealt_ ? deal.dealt[i * world_ + rank] : deal.shared[i - dealt_];
  }
  // The rank's epoch chunks in visiting order (dealt() + shared() of them).
  std::vector<uint64_t> RankChunks(const EpochDeal& deal, uint32_t rank) const;
  // Appends window w's chunks of the rank's epoch to *out.
  void AppendWindowChunks(const EpochDeal& deal, uint32_t rank, uint64_t w,
                          std::vector<uint64_t>* out) const;

  // Window w of a rank's epoch; `window_chunks` points at its WindowChunks(w) chunks (the last
  // window's shared chunks are its final shared() ones), `share` is the rank's (Share). The
  // samples it visits (they depend on which chunks the window holds; a round-robin deal's are the
  // same for every rank in a world of more than one):
  uint64_t WindowSamples(const uint64_t* window_chunks, const RankShare& share, uint64_t w) const;
  // Its entries in visiting order; *padding_at (where given) gets the index of the padding entry
  // (HasPadding, last window), or kNoPadding.
  std::vector<WindowEntry> Window(const uint64_t* window_chunks, uint64_t epoch,
                                  const RankShare& share, uint64_t w,
                                  uint64_t* padding_at = nullptr) const;

 private:
  EpochDeal DealBalanced(const std::vector<uint64_t>& chunks) const;
  // The rank's entries of a last window's shared stream: stream[first + i * stride] for i <
  // count, then, where it pads, stream[(first + count * stride) mod S].
  struct SharedRun {
    uint64_t first, stride, count;
    bool pad;
  };
  SharedRun RunOf(const RankShare& share) const;

  std::shared_ptr<const ChunkTable> table_;
  uint32_t window_, first_window_;
  bool shuffle_;
  uint64_t seed_;
  uint32_t world_;
  bool balanced_ = false;
  uint64_t dealt_total_ = 0;     // chunks dealt out per epoch, over all ranks
  uint64_t dealt_ = 0;           // chunks dealt to each rank per epoch
  uint64_t shared_ = 0;          // shared chunks per epoch
  uint64_t shared_samples_ = 0;  // S: their samples (a round-robin deal's; the same every epoch)
};

}  // namespace rf
