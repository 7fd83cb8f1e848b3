// MixedSource: a weighted mixture of datasets of one sample shape and type as one TrainingSource
// (ringfeed.Loader([a, b], B, weights=[0.7, 0.3]); `ringfeed train --data a,b --weights
// 0.7,0.3`). pipeline/sources/mixture.h states the rule and the mixture's epochs.
//
// The datasets. Each dataset of positive weight is read by a StreamingSource of its own, in the
// order a single-dataset loader of the same options has (WindowOrder: its own EpochOrder and
// shuffle windows, this rank's part of each of its epochs, so each rank reads about 1/world_size
// of its chunks), and keeps its own epoch counter: its epochs roll over within a batch, as they
// end. A dataset of weight 0 is never opened.
//
// The steps. Step k of every rank (k: the rank's samples since the start) takes one sample of
// the dataset the rule names for k, that dataset's next sample in this rank's order. Every rank
// draws the same dataset at the same step and takes its own part of that dataset's epoch, so the
// ranks' samples are distinct (but a dataset epoch's padding repeats, fewer than world_size, as
// for one dataset) and they agree on the order. A batch is the next batch_size steps, its samples
// gathered from the datasets' staging areas into one batch in step order, in the memory the
// loader's device computes in.
//
// What a batch says of its samples: their indices (batch_samples(), --dump-order, the Python
// batch's indices) count the datasets one after another: sample j of dataset i is
// first_i + j, first_i the samples of the datasets before i. Augmentation keys each sample by
// (seed, 0, e_i T + first_i + j), e_i its dataset's epoch and T all the datasets' samples, so a
// sample's transform differs from one of its dataset's epochs to the next and resumes exactly;
// a batch carries these keys as its sample_indices, and its epoch as 0 (core/batch.h). The crops
// of decoded images (image records, pipeline/images/image_stage.h) are keyed by the same:
// sample j of dataset i in that dataset's epoch e_i is cropped as a single-dataset loader crops
// sample e_i T + first_i + j of epoch 0 (for the first dataset in its first epoch: as a loader of
// that dataset alone crops it in epoch 0), whatever the batch, the rank or a resume.
//
// Epochs and state. The source's epochs are the mixture's (pipeline/sources/mixture.h: M samples
// over the ranks, an epoch begun at other world sizes the rest of M), counted as any BatchSource's:
// StartEpoch(e + 1, 0) after epoch e goes on from where the stream is; so does StartEpoch(e, 0)
// for any other e (the stream is not rewound: set_epoch relabels). state() is where the stream
// stands after the last batch handed out (core/order_settings.h's MixtureState: the steps, the
// draws, each dataset's epoch, place and stretches); Create and Restore begin at such a state,
// continued at this world size (ContinueMixture), after which the first StartEpoch names the
// mixture epoch and position it is at. A failed Next leaves the state at the last batch handed
// out; StartEpoch at that place restarts the datasets' sources there.
//
// Memory: a StreamingSource's for each dataset of positive weight (its ring and staging: three
// windows of its chunks), and one batch.
//
// Thread safety: one thread calls the methods.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/sources/training_source.h"

namespace rf {

class MixedSource final : public TrainingSource {
 public:
  // Dataset i's source over `order` (this rank's part of that dataset's epochs: the mixture's
  // order with its batch size, drop_last off, and a resumed epoch of its own).
  using SourceFactory =
      std::function<Result<std::unique_ptr<StreamingSource>>(size_t i, const OrderSettings& order)>;

  // `datasets` (outliving the source) with their normalized `weights`; `order`: the batch size,
  // drop_last, the seed, shuffle, rank and world size, and in order.resumed the mixture epoch's
  // stretches; `start`: where the stream starts, at this world size (no sources: the start).
  // Usage for a start that cannot be of these datasets (RestoreCheck).
  static Result<std::unique_ptr<MixedSource>> Create(std::vector<const Dataset*> datasets,
                                                     std::vector<double> weights,
                                                     const OrderSettings& order,
                                                     const MixtureState& start,
                                                     SourceFactory make_source);
  ~MixedSource() override;

  // The datasets' samples together (all of them, weight 0 too: the batch indices' space).
  uint64_t sample_count() const override { return total_samples_; }
  uint64_t epoch_samples() const override;
  Status StartEpoch(uint64_t epoch, uint64_t position) override;
  Result<Batch> Next() override;
  uint64_t position() const override { return position_; }

  const std::vector<uint64_t>& batch_samples() const override { return batch_samples_; }
  uint64_t bytes_read() const override;
  uint64_t bytes_delivered() const override;
  double wait_seconds() const override;
  double decode_busy_seconds() const override;
  uint32_t decode_threads() const override;
  double reader_held_seconds() const override;
  std::string Describe() const override;
  const MixtureState* mixture_state() const override { return &state_; }
  // Restore(s, the mixture epoch's stretches as they are): the image stage's way back to the
  // last batch it handed out, dropping those it decoded ahead.
  Status RewindMixture(const MixtureState& s) override { return Restore(s, order_.resumed); }

  // The samples each rank takes in mixture epoch `epoch` with `resumed` as the mixture's resumed
  // epoch, before drop_last; Usage for stretches no run of these datasets can have trained.
  Result<uint64_t> EpochCount(uint64_t epoch, const ResumedEpoch& resumed) const;
  // Usage where `s` cannot be a state of these datasets at this world size: another number of
  // datasets or draws, draws the rule cannot have made in the steps (CheckMixtureDraws), a
  // dataset's stretches no run can have trained (CheckStretches), or a position past its epoch's
  // samples a rank; each named.
  Status RestoreCheck(const MixtureState& s) const;
  // Continues `s` (RestoreCheck'ed) with `resumed` as the mixture epoch's stretches: the datasets
  // whose resumed epoch changes get a new source; the next StartEpoch places the mixture epoch.
  // Nothing changes where it fails.
  Status Restore(const MixtureState& s, const ResumedEpoch& resumed);

 private:
  struct Child {
    const Dataset* dataset = nullptr;
    std::unique_ptr<StreamingSource> source;  // null: weight 0
    OrderSettings order;                      // its order (resumed: its resumed epoch)
    uint64_t first = 0;                       // first_i: its samples' first batch index
    bool synced = false;  // the source is at the state's place (else StartEpoch puts it there)
    uint64_t epoch = 0;   // where the source is, once synced
    std::vector<SampleRef> refs;
    std::vector<uint64_t> indices, epochs;
  };

  MixedSource() = default;
  OrderSettings ChildOrder(const MixtureSourceState& s) const;
  // Takes `count` samples of child i into its refs, indices and epochs (rolling its epochs over).
  Status TakeFrom(size_t i, uint32_t count);

  std::vector<Child> children_;
  std::vector<double> weights_;
  OrderSettings order_;
  SourceFactory make_source_;
  uint64_t total_samples_ = 0, mixture_samples_ = 0;
  size_t gatherer_ = 0;  // the child whose staging gathers the batches
  MixtureState state_;   // after the last batch handed out
  uint64_t epoch_ = 0, position_ = 0;
  bool placed_ = false;  // a StartEpoch named the mixture epoch since Create or Restore
  Status failure_;       // a Next failed: StartEpoch restarts the sources
  std::vector<size_t> step_source_;
  std::vector<uint32_t> counts_;
  std::vector<SampleRef> refs_;
  std::vector<uint64_t> keys_, batch_samples_;
};

}  // namespace rf
