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
  static Result<std::shared_ptr<const SequencePlan>> Make(const Dataset& d,
                                                          const OrderSettings& order,
                                                          uint32_t sequence_length, bool eod,
                                                          bool drop_last, bool pad = false);

  uint32_t sequence_length() const { return length_; }
  bool pad() const { return pad_; }
  uint64_t row_tokens() const { return uint64_t{length_} + 1; }
  uint64_t epoch_tokens() const { return tokens_; }        // T
  uint64_t epoch_sequences() const { return sequences_; }  // with the partial one unless dropped
  const WindowOrder& order() const { return order_; }      // the world of one's
  // Stream tokens of global chunk g (its ids, plus one a record with eod).
  uint64_t ChunkTokens(uint64_t g) const { return chunk_tokens_[g]; }

  // The window of epoch `layout` (order().Layout(epoch)) whose stream holds token `token`
  // (< epoch_tokens()), with where it starts.
  StreamWindow Locate(const EpochLayout& layout, uint64_t token) const;

 private:
  SequencePlan(std::vector<uint32_t> chunk_samples, const OrderSettings& order)
      : order_(std::move(chunk_samples), order) {}

  WindowOrder order_;
  std::vector<uint64_t> chunk_tokens_;
  uint32_t length_ = 0;
  bool pad_ = false;
  uint64_t tokens_ = 0, sequences_ = 0;
};

}  // namespace rf
