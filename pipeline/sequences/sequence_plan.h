// SequencePlan: the epochs of packed token sequences (ringfeed.Loader(..., sequence_length=L)),
// made at open from the chunk index alone: no sample index is built, so opening costs the same
// on 10^6 tokens as on 10^12 (the index is read anyway).
//
// The epoch's stream. Epoch e's documents in the order of a world of one (WindowOrder with
// world_size 1: chunks dealt in permuted order, documents shuffled within windows of chunks, so
// reads stay whole chunks), each followed by the end-of-document token where one is given, are
// one stream of T tokens, the same every epoch in length. Global sequence j is the stream's
// tokens [j (L + 1), (j + 1) (L + 1)): a row of L + 1 tokens, inputs [:-1] and targets [1:].
// There are S = floor(T / (L + 1)) full sequences and, unless drop_last, one partial one (the
// stream's last T mod (L + 1) tokens). So within an epoch every token is handed out once, none
// dropped but the partial sequence with drop_last.
//
// The ranks. An epoch hands out a list of global sequences: [0, S) for an ordinary epoch, what
// earlier runs left of it for a resumed one. With N sequences in the list and W ranks, rank r
// takes the list's entries [floor(r N / W), floor((r + 1) N / W)), contiguous in the stream, so
// it reads about 1/W of the epoch's chunks; every rank hands out q = ceil(N / W) rows, the ranks
// with one sequence fewer an empty row (no valid token) last. All ranks thus step together.
//
// Padding (pad): every document starts a row of its own instead, cut at L + 1 tokens (the rest of
// a longer document is not handed out); global sequence j is then document j of the epoch's
// order, and the ranks split the documents as above. Every rank's rows are so known from the
// index (its documents), which continuing a long document over several rows would not allow.
//
// Resume at any world size. After p rows a rank (the same p on every rank), rank r has taken
// the first min(p, its count) of its entries; the rest of the epoch is the list of what no rank
// took (Remainder), which the next run splits over its own ranks the same way: every sequence
// of the epoch reaches exactly one rank once, through any number of resumes. The list is kept as
// ranges; each resume adds at most W ranges, so the state stays small.
//
// The node partition (OrderSettings::node_ranks L dividing W into M = W / L >= 2 machines, ranks
// kL .. kL + L - 1 being machine k; otherwise the above): each machine reads the same part of the
// dataset every epoch, so that a node-local cache of it fetches nothing after the first epoch.
//   the parts    chunk P[i] is machine (i mod M)'s, P a seeded permutation of the chunks
//                independent of the epoch (SeededPermutation(C, {seed, kSequencePartWord, 0});
//                stored order with shuffling off): the same parts every epoch, C / M chunks each
//                (one more for the first C mod M);
//   the streams  machine k's epoch is the stream above made of its part alone (the world of one's
//                order over the part: WindowOrder's part, its windows of its chunks), T_k tokens
//                and S_k sequences (its partial one unless drop_last: up to M partial sequences
//                an epoch instead of one); every token of the dataset is in one machine's stream;
//   the numbers  global sequence O_k + j is sequence j of machine k's stream, O_k = S_0 + ... +
//                S_{k-1}: an epoch's list is of all machines' sequences, as above;
//   the ranks    machine k's L ranks split the list's entries within [O_k, O_k + S_k) as the W
//                ranks split the list above; every rank hands out q = max over the machines of
//                ceil(N_k / L) rows (N_k: machine k's entries), the ranks of a machine of fewer
//                an empty row for each it lacks;
//   resuming     what no rank took is each machine's remainder, at the state's L; at another
//                world size of the same M, each machine's ranks split their machine's part of it.
//                Another M numbers the sequences otherwise: an epoch interrupted at one M is
//                resumed at the same M (SequenceLoader::Restore refuses another), any other epoch
//                at any M.
//
// Thread safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/order/window_order.h"

namespace rf {

// Global sequences [begin, end) of one epoch's stream.
struct SequenceRange {
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end - begin; }
  bool operator==(const SequenceRange&) const = default;
};
using SequenceList = std::vector<SequenceRange>;

// One rank's part of a list: its global sequences (in stream order) and the rows every rank
// hands out (its count or one more).
struct RankSequences {
  SequenceList ranges;
  uint64_t count = 0;  // sequences of the rank
  uint64_t rows = 0;   // ceil(N / W): the same on every rank
};

// The sequences of `list` (N in all) that rank `rank` of `world` takes.
RankSequences SliceSequences(const SequenceList& list, uint32_t world, uint32_t rank);
// What no rank of `world` took of `list` after `rows` rows each (merged, in stream order).
SequenceList RemainingSequences(const SequenceList& list, uint32_t world, uint64_t rows);
uint64_t SequenceCount(const SequenceList& list);

// Where the stream of an epoch is: window w of the world-of-one order starts at record position
// `position` of the epoch's order and at stream token `token`.
struct StreamWindow {
  uint64_t window = 0;
  uint64_t position = 0;
  uint64_t token = 0;
};

class SequencePlan {
 public:
  // `order`'s shuffle, window and seed make the world-of-one order (its rank, world and resumed
  // epoch are ignored). Usage error where the dataset holds no token ids, or where a chunk of
  // records of any size does not say its record bytes (format version 2: rewrite it with
  // ringfeed-convert recompress); sequence_length must be >= 1.
  // The node partition's machines are `order`'s (its world_size, node_ranks and rank: this
  // rank's machine is the one whose stream the plan's order() reads).
  static Result<std::shared_ptr<const SequencePlan>> Make(const Dataset& d,
                                                          const OrderSettings& order,
                                                          uint32_t sequence_length, bool eod,
                                                          bool drop_last, bool pad = false);

  uint32_t sequence_length() const { return length_; }
  bool pad() const { return pad_; }
  uint64_t row_tokens() const { return uint64_t{length_} + 1; }
  // T: the tokens of this rank's stream (its machine's, under the node partition).
  uint64_t epoch_tokens() const { return tokens_; }
  // The epoch's sequences, every machine's (with the partial ones unless dropped).
  uint64_t epoch_sequences() const { return first_.back(); }
  // M: 1 but under the node partition.
  uint32_t machines() const { return static_cast<uint32_t>(first_.size() - 1); }
  // The machines of a world of `world` ranks under partition `node_ranks` (OrderSettings's): M
  // where L = node_ranks divides it into M >= 2, else 1 (the global partition).
  static uint32_t Machines(uint32_t world, uint32_t node_ranks);
  // The world of one's order over this rank's stream (its machine's part under the node
  // partition).
  const WindowOrder& order() const { return order_; }
  // Its part (WindowOrder's): null but under the node partition.
  const std::shared_ptr<const std::vector<uint64_t>>& part() const { return part_; }

  // Rank `rank`'s part of `list` (global sequences; empty: the whole epoch) in a world of
  // `world`, its ranges numbered in its stream (its machine's: less O_k), its rows the same on
  // every rank. `world` is the plan's own under the node partition.
  RankSequences Slice(const SequenceList& list, uint32_t world, uint32_t rank) const;
  // What no rank of `world` took of `list` (empty: the whole epoch) after `rows` rows each, at
  // the plan's machines (M of them: `world` a multiple of M).
  SequenceList Remaining(const SequenceList& list, uint32_t world, uint64_t rows) const;
  // The rows each rank of `world` hands out of `list` (empty: the whole epoch).
  uint64_t Rows(const SequenceList& list, uint32_t world) const;
  // Stream tokens of global chunk g (its ids, plus one a record with eod).
  uint64_t ChunkTokens(uint64_t g) const { return chunk_tokens_[g]; }

  // The window of epoch `layout` (order().Layout(epoch)) whose stream holds token `token`
  // (< epoch_tokens()), with where it starts.
  StreamWindow Locate(const EpochLayout& layout, uint64_t token) const;

 private:
  SequencePlan(std::vector<uint32_t> chunk_samples, const OrderSettings& order,
               std::shared_ptr<const std::vector<uint64_t>> part)
      : order_(std::move(chunk_samples), order, std::move(part)) {}

  // The part of `list` within machine k's sequences [first_[k], first_[k + 1]).
  SequenceList MachineList(const SequenceList& list, uint32_t k) const;

  WindowOrder order_;
  std::shared_ptr<const std::vector<uint64_t>> part_;
  std::vector<uint64_t> chunk_tokens_;
  uint32_t length_ = 0;
  bool pad_ = false;
  uint64_t tokens_ = 0;
  std::vector<uint64_t> first_ = {0, 0};  // O_k for k <= M (O_M: every machine's sequences)
  uint32_t machine_ = 0;                  // this rank's
};

}  // namespace rf
