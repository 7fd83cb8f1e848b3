#include "pipeline/epoch_loader.h"

#include <algorithm>
#include <utility>

#include "pipeline/order/window_order.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/mixture.h"

namespace rf {
namespace {

bool SameResumed(const std::optional<ResumedEpoch>& a, const std::optional<ResumedEpoch>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->epoch == b->epoch && a->stretches == b->stretches);
}

Status Prefixed(const Status& s) {
  if (s.ok() || s.code() != Status::Code::kUsage) return s;
  return Status::Usage("load_state_dict: " + s.message());
}

}  // namespace

Result<std::unique_ptr<EpochLoader>> EpochLoader::Create(std::vector<const Dataset*> datasets,
                                                         const LoaderOptions& options) {
  std::unique_ptr<EpochLoader> e(new EpochLoader);
  RF_ASSIGN_OR_RETURN(e->loader_, Loader::Create(datasets, options));
  e->datasets_ = std::move(datasets);
  e->options_ = options;
  e->kind_ = e->loader_->plan().kind == BatchKind::kSequences ? StateKind::kSequences
             : e->loader_->mixture()                          ? StateKind::kMixture
                                                              : StateKind::kSamples;
  e->ordinary_samples_ = e->loader_->epoch_samples();
  return e;
}

Result<Loader*> EpochLoader::loader() {
  if (!loader_) return Status::Usage("the loader is closed");
  return loader_.get();
}

Result<const Loader*> EpochLoader::loader() const {
  if (!loader_) return Status::Usage("the loader is closed");
  return loader_.get();
}

uint64_t EpochLoader::SamplesOf(uint64_t epoch) const {
  if (resumed_ && resumed_->epoch == epoch) return resumed_samples_;
  return ordinary_samples_;
}

std::vector<EpochStretch> EpochLoader::StretchesOf(uint64_t epoch) const {
  if (resumed_ && resumed_->epoch == epoch) return resumed_->stretches;
  return {};
}

SequenceState EpochLoader::Packed() const {
  if (!loader_) return {};
  return loader_->sequence_state().value_or(SequenceState{});
}

uint64_t EpochLoader::epoch() const {
  if (kind_ != StateKind::kSequences) return epoch_;
  const SequenceState s = Packed();
  return s.sources.empty() ? 0 : s.sources[0].epoch;
}

uint64_t EpochLoader::position() const {
  if (kind_ != StateKind::kSequences) return position_;
  const SequenceState s = Packed();
  return s.sources.empty() ? 0 : s.sources[0].position;
}

uint64_t EpochLoader::batches() const {
  if (kind_ == StateKind::kSequences) return loader_ ? loader_->batches_per_epoch() : 0;
  const uint64_t b = options_.pipeline.order.batch_size;
  return (SamplesOf(epoch_) + b - 1) / b;
}

Status EpochLoader::SetEpoch(uint64_t epoch) {
  if (epoch > kMaxEpoch) {
    return Status::Usage("epoch must be a whole number from 0 to " + std::to_string(kMaxEpoch) +
                         ", got " + std::to_string(epoch));
  }
  if (kind_ == StateKind::kSequences) {
    RF_ASSIGN_OR_RETURN(Loader * l, loader());
    SequenceState s = Packed();
    if (s.sources.size() == 1) {  // a mixture's stream goes on
      s.sources = {SequenceSourceState{epoch, 0, 0, {}}};
      RF_RETURN_IF_ERROR(l->RestoreSequences(s));
    }
  }
  epoch_ = epoch;
  position_ = 0;
  ++generation_;
  return Status::Ok();
}

Result<EpochLoader::Taken> EpochLoader::Next(const Iteration& it) {
  if (it.generation != generation_) {
    return Status::Aborted(
        "this iterator is stale: set_epoch or load_state_dict was called after it started");
  }
  if (kind_ == StateKind::kSequences) {  // to the end of one dataset's epoch
    RF_ASSIGN_OR_RETURN(Loader * l, loader());
    RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> b, l->Next());
    return Taken{std::move(b), std::string()};
  }
  if (it.epoch != epoch_) return Taken{};
  const uint64_t epoch_end = SamplesOf(epoch_);
  // Nothing to hand out: the epoch is over at once (but for an epoch past the last one a loader
  // hands out, which the Loader's start refuses).
  if (epoch_end == 0 && epoch_ < kMaxEpoch) {
    ++epoch_;
    return Taken{};
  }
  RF_ASSIGN_OR_RETURN(Loader * l, loader());
  const std::pair<uint64_t, uint64_t> at{epoch_, position_};
  if (native_at_ != at) {
    native_at_.reset();
    RF_RETURN_IF_ERROR(l->StartEpoch(epoch_, position_));
  }
  Result<std::shared_ptr<LoadedBatch>> b = l->Next();
  if (!b.ok() || *b == nullptr) {
    native_at_.reset();  // the batch in flight, if any, is handed out again
    if (!b.ok()) return b.status();
    return Status::Aborted("the loader ended epoch " + std::to_string(epoch_) + " at sample " +
                           std::to_string(position_) + " of " + std::to_string(epoch_end));
  }
  Taken out{std::move(*b), std::string()};
  // A batch spans its samples, and the bad image records skipped from it (skip_bad_records).
  const uint64_t end = out.batch->position() + out.batch->span();
  native_at_ = std::make_pair(epoch_, end);
  if (end >= epoch_end) {
    const SkippedRecords s = l->skipped();
    out.skipped = s.Text(s.epoch);
    ++epoch_;
    position_ = 0;
  } else {
    position_ = end;
  }
  return out;
}

LoaderState EpochLoader::Own() const {
  LoaderState s;
  s.kind = kind_;
  s.options = RecordedOptions(loader_ ? loader_->options() : options_, kind_);
  const format::Header& h = datasets_[0]->header();
  const bool records = loader_ && loader_->plan().kind == BatchKind::kRecords;
  if (!records) s.look = {"layout", "normalize", "mean", "std"};
  if (format::HoldsImageRecords(h)) {
    s.look.push_back("image_size");
    s.look.push_back("image_crop");
    s.look.push_back("image_alpha");
  }
  const bool packed = kind_ == StateKind::kSequences;
  for (const Dataset* d : datasets_) {
    s.datasets.push_back(
        {d->header().dataset_id, d->sample_count(), packed ? std::string() : d->shard_path(0)});
  }
  if (packed) {  // the weights as given ([] for one dataset), the packing's stream
    s.weights.assign(options_.pipeline.weights.begin(), options_.pipeline.weights.end());
    s.look.clear();
    s.sequences = Packed();
  } else if (loader_) {
    s.weights = loader_->weights();
  }
  s.world_size = options_.pipeline.order.world_size;
  s.node_ranks = options_.pipeline.order.node_ranks;
  s.epoch = epoch_;
  s.position = position_;
  s.stretches = StretchesOf(epoch_);
  if (kind_ == StateKind::kMixture && loader_ && loader_->mixture_state() != nullptr)
    s.mixture = *loader_->mixture_state();
  return s;
}

StateJson EpochLoader::State() const { return EncodeLoaderState(Own()); }

Status EpochLoader::Reopen(const std::optional<ResumedEpoch>& resumed, uint64_t samples) {
  loader_.reset();  // its memory freed before the new one takes the same again
  native_at_.reset();
  LoaderOptions o = options_;
  o.pipeline.order.resumed = resumed.value_or(ResumedEpoch{});
  RF_ASSIGN_OR_RETURN(loader_, Loader::Create(datasets_, o));
  resumed_ = resumed;
  resumed_samples_ = resumed ? samples : 0;
  return Status::Ok();
}

Status EpochLoader::Restore(const StateJson& saved) {
  RF_ASSIGN_OR_RETURN(Loader * l, loader());
  RF_ASSIGN_OR_RETURN(const LoaderState s, DecodeLoaderState(saved, Own()));
  if (kind_ == StateKind::kSequences) {  // at the state's world size, re-split at another
    RF_RETURN_IF_ERROR(l->RestoreSequences(s.sequences));
    ++generation_;
    return Status::Ok();
  }
  const uint32_t world = options_.pipeline.order.world_size;
  // Where this loader continues: at the state's world size, in the same order at the same
  // position; at another, the saved stretch appended, and this world's ranks share what the
  // stretches left from the start.
  const RankLayout saved_layout{s.world_size, s.node_ranks},
      now{world, options_.pipeline.order.node_ranks};
  const ResumePoint at = ResumeAt(s.epoch, s.stretches, saved_layout, s.position, now);
  std::optional<ResumedEpoch> resumed;
  if (!at.resumed.stretches.empty()) resumed = at.resumed;
  uint64_t samples = 0;
  if (kind_ == StateKind::kSamples && SameResumed(resumed, resumed_)) {
    samples = SamplesOf(s.epoch);
  } else {  // the Loader's count of the resumed epoch, checking the stretches
    Result<uint64_t> n = l->EpochSamplesFor(s.epoch, at.resumed);
    if (!n.ok()) return Prefixed(n.status());
    samples = *n;
  }
  const uint64_t end = std::max<uint64_t>(samples, 1);
  if (at.position >= end) {
    return Status::Usage("load_state_dict: position " + std::to_string(at.position) +
                         " is no batch boundary of this loader's epoch " + std::to_string(s.epoch) +
                         " (multiples of batch_size " +
                         std::to_string(options_.pipeline.order.batch_size) + " below " +
                         std::to_string(end) + ")");
  }
  if (kind_ == StateKind::kMixture) {
    const MixtureState m = ContinueMixture(s.mixture, saved_layout, now);
    RF_RETURN_IF_ERROR(Prefixed(l->RestoreMixture(m, resumed.value_or(ResumedEpoch{}))));
    resumed_ = resumed;
    resumed_samples_ = resumed ? samples : 0;
    native_at_.reset();
  } else if (!SameResumed(resumed, resumed_)) {
    RF_RETURN_IF_ERROR(Reopen(resumed, samples));
  }
  epoch_ = s.epoch;
  position_ = at.position;
  ++generation_;
  return Status::Ok();
}

}  // namespace rf
