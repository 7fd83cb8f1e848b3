// SequenceSource: one dataset of a SequenceLoader (pipeline/sequences/sequence_loader.h): its plan
// (sequence_plan.h), its records' loader (a StreamingSource of its own, in host staging, read in
// place: pipeline/sources/training_source.h's NextInPlace), where its epoch stands for this rank
// (the state, its slice of the epoch's list and the next row's place in it) and where its stream
// stands (the next stream token, the records in hand, where the staging holds them, and the place
// in them). Row() walks the stream to this rank's next row and notes its tokens' copies in the
// loader's packer (sequence_packer.h).
//
// Ownership and lifetime: the loader owns its sources, each its plan (shared) and its records'
// loader; a source points to its dataset, which outlives the loader, and to the loader's packer,
// which it flushes before it lets the records in hand go. Threads: the plan, the dataset and the
// rank and world are fixed once Make returns and read from any of the loader's threads; the rest
// is the loader's worker's (and its caller's while the worker is stopped: Create, Restore).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/sequences/sequence_packer.h"
#include "pipeline/sequences/sequence_plan.h"
#include "pipeline/sequences/sequence_state.h"
#include "pipeline/sources/pipeline_config.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/sources/training_source.h"

namespace rf {

class SequenceSource {
 public:
  // `tok` where the stream is at no known token: the next row seeks afresh.
  static constexpr uint64_t kNowhere = std::numeric_limits<uint64_t>::max();

  // The source of `d` for this rank of `pipeline`'s order (its seed, shuffle, rank, world size and
  // drop_last), rows of `length` + 1 tokens, `eod` after each document (-1: none), `pad` (one
  // document a row), its records' loader reading `epochs`; at the start of epoch 0. Usage errors
  // for what SequencePlan::Make refuses, a dataset of no whole sequence that drop_last drops the
  // partial one of, and what the records' PipelineConfig::ValidateFor refuses.
  static Result<std::unique_ptr<SequenceSource>> Make(const Dataset& d,
                                                      const PipelineConfig& pipeline,
                                                      uint32_t length, int64_t eod, bool pad,
                                                      uint64_t epochs);

  const Dataset* dataset = nullptr;
  std::shared_ptr<const SequencePlan> plan;
  std::unique_ptr<StreamingSource> records;  // in host staging, read in place
  SequencePacker* packer = nullptr;          // flushed before the records in hand are let go
  DType stored = DType::kUInt16;
  uint64_t elem = 2;  // bytes an id
  int64_t eod = -1;
  uint32_t world = 1, rank = 0;

  SequenceSourceState st;
  RankSequences slice;
  size_t range = 0;
  uint64_t in_range = 0;

  EpochLayout layout;
  bool have_layout = false;
  uint64_t tok = kNowhere;
  std::vector<HostSpan> spans;  // the records in hand
  uint32_t held = 0;            // of spans
  uint32_t rec = 0;
  uint64_t off = 0;

  bool EpochDone() const { return st.position >= slice.rows; }

  // Begins `s` (its list split over this run's world).
  void Enter(const SequenceSourceState& s);
  void NextEpoch() { Enter({st.epoch + 1, 0, world, {}}); }

  // The next row of this rank's epoch into the batch at element `dst` (row_tokens() ids); its
  // valid tokens in *valid.
  Status Row(SequencePacker* pack, uint64_t dst, uint64_t* valid, std::vector<uint32_t>* starts);

 private:
  uint64_t RecordIds() const { return spans[rec].bytes / elem; }
  uint64_t RecordTokens() const { return RecordIds() + (eod >= 0 ? 1 : 0); }

  // The records in hand, the next ones taken where they are used up (the packer flushed first).
  Status Fill();
  // Restarts the records' loader at `position` of the current epoch's order.
  Status Restart(uint64_t position);
  // Moves `n` tokens on; with `pack`, adds their copy to the batch's element `dst` on, and notes
  // in *starts the places (from `at`) where a document begins.
  Status Walk(uint64_t n, SequencePacker* pack, uint64_t dst, uint32_t at,
              std::vector<uint32_t>* starts);
  // Puts the stream at token `token` of the current epoch: the records' loader restarted at the
  // window holding it, and the window's tokens before it skipped.
  Status Seek(uint64_t token);
};

}  // namespace rf
