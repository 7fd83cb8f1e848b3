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
// The node partition (node_ranks L >= 1 dividing N into M = N / L >= 2 nodes: ranks kL .. kL + L
// - 1 are node k, one machine): the same deals, but which chunks each node's ranks are dealt is
// decided once for every epoch, so a machine's ranks read the same part of the dataset every
// epoch (its node-local cache then holds it: nothing is fetched after the first epoch), shuffled
// within it:
//   the part    P, a seeded permutation of the chunks independent of the epoch (SeededPermutation
//               (C, {seed, kPartitionWord, 0}); stored order with shuffling off), decides it: a
//               round-robin deal deals the first D * N full chunks of P to the nodes in turn (the
//               i-th to node i mod M), the rest being the shared ones; a balanced deal takes the
//               first D * N chunks of P in rounds of M, the round's largest to the node with the
//               fewest samples so far (ties: the earlier chunk, the lower node), the last C - D * N
//               being the shared ones. The shared chunks are the same every epoch too;
//   an epoch    visits node k's chunks in the order of epoch e's permutation of all chunks (as the
//               global partition does) and deals them to the node's L ranks as the global deal
//               deals all of them to N: round-robin (the t-th to local rank t mod L) or balanced
//               (rounds of L, the largest to the local rank with the fewest). The shared chunks,
//               in that order, are read by every rank and split as before.
// So D, the shared count, the samples a rank trains on and the padding are the global deal's
// (for a balanced deal with its own margin: the tail holds N * (2M + 1) samples, as nodes and
// then ranks each differ by at most the largest chunk M). Every sample is visited once per epoch
// over the ranks, as before. Where L does not divide N, or M < 2, the global partition is used.
//
// A part (a world of one only: WindowOrder's, packed sequences' machines): the order visits only
// the part's chunks, as if the dataset held no others: each epoch deals the part's chunks in the
// order of epoch e's permutation of all the chunks (in stored order with shuffling off), and the
// samples are the part's. Global chunk and sample numbers stay the dataset's.
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
  // [1, window_chunks]. node_ranks: 0 the global partition; L the node partition (above). part:
  // null, every chunk; else (with world_size 1, ascending chunks of the table) a part (above).
  WorldOrder(std::shared_ptr<const ChunkTable> table, bool shuffle, uint32_t window_chunks,
             uint32_t first_window_chunks, uint64_t seed, uint32_t world_size,
             uint32_t node_ranks = 0, std::shared_ptr<const std::vector<uint64_t>> part = nullptr);

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
  EpochDeal DealByNode(const std::vector<uint64_t>& chunks) const;
  // dealt_, dealt_total_, shared_, shared_samples_ and balanced_, from the table and the world.
  void SizeDeal();
  // node_of_ for the node partition, from the part's permutation.
  void PartitionByNode();
  // The balanced deals' tail: each rank's run of the shared stream, from its dealt samples.
  void AddShares(const std::vector<uint64_t>& dealt_samples, EpochDeal* deal) const;
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
  uint32_t node_ranks_ = 0, nodes_ = 0;  // L and M under the node partition; 0 nodes: global
  static constexpr uint32_t kSharedChunk = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> node_of_;  // per chunk: its node (the same every epoch), or kSharedChunk
  std::shared_ptr<const std::vector<uint64_t>> part_;  // null: every chunk
  std::vector<bool> in_part_;                          // per chunk, with a part
  uint64_t part_samples_ = 0;
  bool balanced_ = false;
  uint64_t dealt_total_ = 0;     // chunks dealt out per epoch, over all ranks
  uint64_t dealt_ = 0;           // chunks dealt to each rank per epoch
  uint64_t shared_ = 0;          // shared chunks per epoch
  uint64_t shared_samples_ = 0;  // S: their samples (a round-robin deal's; the same every epoch)
};

}  // namespace rf
