// EpochLoader: the epoch protocol of a training loop's iterable, and its checkpoints, over a
// Loader (pipeline/loader.h) of one dataset or a weighted mixture: what ringfeed.Loader is, the
// Python class being its face (python/ringfeed/loader.py).
//
// The protocol. The loader is at an epoch and a position in it (the samples of this rank's epoch
// handed out so far). An iteration (Begin) continues from there: from the start of epoch(), from
// where an earlier iteration left it, or from a restored state. When Next hands out an epoch's
// last batch, epoch() moves on by one and position() goes back to 0 (so a state taken while that
// batch is in use resumes with the next epoch), and the iteration's next call ends it (null).
// SetEpoch(e) makes the next iteration epoch e from its start. SetEpoch and Restore make every
// iteration begun before them stale: its Next is refused (Aborted). Iterations begun at once
// share the position, each batch handed out once.
//
// Checkpoints. State() is a LoaderState (pipeline/state/loader_state.h) of the place and what the
// batches depend on; Restore(saved) continues it exactly: at the state's world size the next
// batches are those the saved loader would have handed out next; at another, by the rule of
// `ringfeed train --resume` (pipeline/order/window_order.h's ResumeAt), this loader's ranks share
// what the saved ranks had not taken of the saved epoch, each sample once, in an epoch of its
// own count (epoch_samples()), and the epochs after it are ordinary. Resuming one dataset at
// another world size reopens the Loader for that epoch's order (its stats start again); should
// the reopening fail (memory, say) the EpochLoader is closed: every call but the destructor is
// then Usage "the loader is closed". A mixture continues through Loader::RestoreMixture, its
// datasets each by the same rule (ContinueMixture).
//
// Packed sequences (plan kSequences) keep their place in their own state (SequenceState): an
// iteration runs to the end of one dataset's epoch (a mixture's, without end), epoch() and
// position() are the first dataset's (position in rows), SetEpoch starts one dataset's epoch
// afresh (a mixture's stream goes on, each dataset at its own epoch), and Restore continues
// a packed state at this loader's world size (pipeline/sequences/sequence_loader.h's "State").
//
// Ownership and threads: it owns its Loader; the datasets outlive it. One thread at a time calls
// its methods (the Python binding holds a mutex); batches as Loader's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/loader.h"
#include "pipeline/state/loader_state.h"

namespace rf {

class EpochLoader {
 public:
  // A Loader of `options` over `datasets` (one; or a mixture's, with options.pipeline.weights),
  // at epoch 0, position 0. Errors: Loader::Create's.
  static Result<std::unique_ptr<EpochLoader>> Create(std::vector<const Dataset*> datasets,
                                                     const LoaderOptions& options);

  struct Iteration {
    uint64_t epoch = 0;
    uint64_t generation = 0;
  };
  // An iteration of the rest of the current epoch.
  Iteration Begin() const { return {epoch_, generation_}; }
  // What Next hands out: the batch (null once the iteration's epoch is over) and, with the
  // epoch's last batch, the report of the bad records skipped in it ("" for none).
  struct Taken {
    std::shared_ptr<LoadedBatch> batch;
    std::string skipped;
  };
  // The iteration's next batch. Aborted for a stale iteration, or where the Loader ends the epoch
  // before its count; the Loader's errors (after which the next call starts over at the position
  // of the last batch handed out).
  Result<Taken> Next(const Iteration& it);
  // The next iteration is epoch `epoch` from its start: Usage for one past kMaxEpoch (what a
  // checkpoint holds).
  Status SetEpoch(uint64_t epoch);

  StateJson State() const;
  // Continues `saved` (from State(), of any rank): Usage for what DecodeLoaderState refuses, for
  // stretches no loader of the data can have trained, for a position past the epoch's end, and
  // a mixture's stream that cannot be of its datasets; the loader is then as it was.
  Status Restore(const StateJson& saved);

  uint64_t epoch() const;
  uint64_t position() const;
  // Samples of the current epoch for this rank (the resumed epoch's own count; packed sequences:
  // 0, they count rows), and its batches (packed sequences: one dataset's).
  uint64_t epoch_samples() const { return SamplesOf(epoch_); }
  uint64_t batches() const;

  // The Loader (Usage once closed).
  Result<Loader*> loader();
  Result<const Loader*> loader() const;

 private:
  EpochLoader() = default;
  LoaderState Own() const;
  // Packed sequences' stream, as the Loader holds it (none once closed).
  SequenceState Packed() const;
  uint64_t SamplesOf(uint64_t epoch) const;
  std::vector<EpochStretch> StretchesOf(uint64_t epoch) const;
  // Replaces the Loader by one whose order continues `resumed` (none: every epoch ordinary), of
  // `samples` samples, the old one closed first.
  Status Reopen(const std::optional<ResumedEpoch>& resumed, uint64_t samples);

  std::vector<const Dataset*> datasets_;
  LoaderOptions options_;
  std::unique_ptr<Loader> loader_;
  StateKind kind_ = StateKind::kSamples;
  uint64_t epoch_ = 0, position_ = 0;
  uint64_t generation_ = 0;  // bumped by SetEpoch and Restore
  // The samples of an ordinary epoch of this rank.
  uint64_t ordinary_samples_ = 0;
  // The epoch begun at other world sizes that the Loader continues, and its samples here.
  std::optional<ResumedEpoch> resumed_;
  uint64_t resumed_samples_ = 0;
  // Where the Loader's next batch comes from; none: unknown (never started, or a call failed),
  // so the next batch starts it at (epoch_, position_).
  std::optional<std::pair<uint64_t, uint64_t>> native_at_;
};

}  // namespace rf
