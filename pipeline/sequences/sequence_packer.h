// SequencePacker: the copies of a packed-sequence batch's tokens (sequence_loader.h's "The
// packing"). As the loader's worker walks the stream, it notes the batch as pieces, each a run of
// ids from a record where a source's staging holds it (or one end-of-document token), to its
// place in the batch. The copies run on the packer's WorkPool (pipeline/stage/work_pool.h),
// split by rows; Flush runs those added so far before a source (sequence_source.h) moves on from
// the records they read, Finish the rest (and, for the host's batch, the padding and the
// position_ids).
//
// Ownership and lifetime: the SequenceLoader owns its packer, whose pool's helper threads live as
// long as it does. The pieces point into the records a source holds, which stay in place until
// the pieces are copied (the source flushes before it lets them go), and into the batch that Begin
// names, which outlives Finish. Threads: one thread (the loader's worker) calls its methods; the
// helpers run only within Flush and Finish.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "pipeline/stage/work_pool.h"

namespace rf {

class SequencePacker {
 public:
  // `threads` copy a batch: the caller's and threads - 1 helpers.
  explicit SequencePacker(uint32_t threads) : pool_(threads, "rf-pack-help") {}

  uint32_t threads() const { return pool_.threads(); }

  // A batch into `tokens` (ids of dtype `out`, `row` a row).
  void Begin(void* tokens, DType out, uint64_t row, int64_t eod) {
    tokens_ = static_cast<uint8_t*>(tokens);
    out_ = out;
    row_ = row;
    eod_ = eod;
    pieces_.clear();
    row_pieces_.clear();
    done_ = 0;
  }
  void BeginRow() { row_pieces_.push_back(pieces_.size()); }
  // `count` ids of dtype `dtype` at `src` to element `dst` of the batch.
  void Add(const uint8_t* src, DType dtype, uint64_t dst, uint64_t count) {
    pieces_.push_back({src, dst, count, dtype});
  }
  void AddEod(uint64_t dst) { pieces_.push_back({nullptr, dst, 1, out_}); }

  // Copies the pieces added so far (the records they read are about to be let go).
  void Flush();

  // Copies the rest of the batch's `rows` rows; with `positions` (the host's batch, written
  // whole here) fills each row past lengths[r] with `pad` and writes each input's place in its
  // segment (row r's segments: cu[row_segments[r]] .. up to cu[row_segments[r + 1]]).
  void Finish(uint64_t rows, const int64_t* lengths, const int32_t* cu,
              const std::vector<size_t>& row_segments, int64_t* positions, int64_t pad);

 private:
  struct Piece {
    const uint8_t* src;  // null: one end-of-document token
    uint64_t dst;
    uint64_t count;
    DType dtype;
  };

  template <typename Out>
  void CopyAs(const Piece& piece);
  void Copy(const Piece& piece);
  // Elements [from, to) of the batch's tokens as `pad`.
  void Fill(uint64_t from, uint64_t to, int64_t pad);

  WorkPool pool_;
  uint8_t* tokens_ = nullptr;
  DType out_ = DType::kInt64;
  uint64_t row_ = 0;
  int64_t eod_ = -1;
  std::vector<Piece> pieces_;
  std::vector<size_t> row_pieces_;  // each row's first piece (and, after Finish, the end)
  size_t done_ = 0;                 // pieces copied
};

}  // namespace rf
