#include "pipeline/sources/mixed_source.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "pipeline/order/epoch_remainder.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/mixture.h"

namespace rf {
namespace {

// Whether an order resumed as `now` gives the epochs from `epoch` on that one resumed as `asked`
// gives: the same resumed epoch, or neither resumed at or after `epoch`.
bool SameFrom(const ResumedEpoch& now, const ResumedEpoch& asked, uint64_t epoch) {
  const bool now_ordinary = now.stretches.empty() || now.epoch < epoch;
  const bool asked_ordinary = asked.stretches.empty() || asked.epoch < epoch;
  if (now_ordinary && asked_ordinary) return true;
  return now.epoch == asked.epoch && now.stretches == asked.stretches;
}

}  // namespace

Result<std::unique_ptr<MixedSource>> MixedSource::Create(std::vector<const Dataset*> datasets,
                                                         std::vector<double> weights,
                                                         const OrderSettings& order,
                                                         const MixtureState& start,
                                                         SourceFactory make_source) {
  if (datasets.empty() || datasets.size() != weights.size())
    return Status::InvalidArgument("a mixture needs one weight a dataset");
  if (order.batch_size == 0) return Status::InvalidArgument("batch size must be at least 1");
  std::unique_ptr<MixedSource> m(new MixedSource);
  m->weights_ = std::move(weights);
  m->order_ = order;
  m->make_source_ = std::move(make_source);
  std::vector<uint64_t> samples;
  for (const Dataset* d : datasets) {
    Child c;
    c.dataset = d;
    c.first = m->total_samples_;
    m->total_samples_ += d->sample_count();
    samples.push_back(d->sample_count());
    m->children_.push_back(std::move(c));
  }
  m->mixture_samples_ = MixtureSamples(samples, m->weights_);
  const size_t n = datasets.size();
  MixtureState s = start;
  if (s.sources.empty()) {
    s = MixtureState{};
    s.drawn.assign(n, 0);
    s.sources.assign(n, MixtureSourceState{});
  }
  RF_RETURN_IF_ERROR(m->RestoreCheck(s));
  RF_RETURN_IF_ERROR(m->EpochCount(order.resumed.epoch, order.resumed).status());
  const uint32_t batch = order.batch_size;
  bool gatherer = false;
  for (size_t i = 0; i < n; ++i) {
    if (m->weights_[i] <= 0) continue;
    Child& c = m->children_[i];
    c.order = m->ChildOrder(s.sources[i]);
    RF_ASSIGN_OR_RETURN(c.source, m->make_source_(i, c.order));
    c.source->DeferRetire();
    c.refs.resize(batch);
    c.indices.resize(batch);
    c.epochs.resize(batch);
    if (!gatherer) {
      m->gatherer_ = i;
      gatherer = true;
    }
  }
  m->state_ = std::move(s);
  m->step_source_.resize(batch);
  m->counts_.resize(n);
  m->refs_.resize(batch);
  m->keys_.resize(batch);
  return m;
}

MixedSource::~MixedSource() = default;

OrderSettings MixedSource::ChildOrder(const MixtureSourceState& s) const {
  OrderSettings o = order_;
  o.drop_last = false;
  o.resumed = s.stretches.empty() ? ResumedEpoch{} : ResumedEpoch{s.epoch, s.stretches};
  return o;
}

Result<uint64_t> MixedSource::EpochCount(uint64_t epoch, const ResumedEpoch& resumed) const {
  OrderSettings o = order_;
  o.resumed = resumed;
  return MixtureEpochCount(mixture_samples_, o, epoch);
}

uint64_t MixedSource::epoch_samples() const {
  const Result<uint64_t> count = EpochCount(epoch_, order_.resumed);  // checked at Create
  return EpochSamples(count.ok() ? count.value() : 0, order_.batch_size, order_.drop_last);
}

Status MixedSource::RestoreCheck(const MixtureState& s) const {
  const size_t n = children_.size();
  if (s.sources.size() != n || s.drawn.size() != n) {
    return Status::Usage("the state is of a mixture of " + std::to_string(s.sources.size()) +
                         " datasets (" + std::to_string(s.drawn.size()) +
                         " draw counts), this one of " + std::to_string(n));
  }
  RF_RETURN_IF_ERROR(CheckMixtureDraws(weights_, s.steps, s.drawn, "steps"));
  for (size_t i = 0; i < n; ++i) {
    if (weights_[i] <= 0) continue;
    const Dataset& d = *children_[i].dataset;
    const MixtureSourceState& g = s.sources[i];
    const std::string named = "the state's dataset " + std::to_string(i) + " (" + d.path() + "): ";
    OrderSettings o = ChildOrder(g);
    const std::vector<uint32_t> chunks = d.ChunkSampleCounts();
    if (const Status st = CheckStretches(chunks, o); !st.ok())
      return Status::Usage(named + st.message());
    const uint64_t count = WindowOrder(chunks, o).EpochSampleCount(g.epoch);
    if (g.position > count) {
      return Status::Usage(named + "position " + std::to_string(g.position) + " is past the " +
                           std::to_string(count) + " samples a rank of its epoch " +
                           std::to_string(g.epoch));
    }
  }
  return Status::Ok();
}

Status MixedSource::Restore(const MixtureState& s, const ResumedEpoch& resumed) {
  RF_RETURN_IF_ERROR(RestoreCheck(s));
  RF_RETURN_IF_ERROR(EpochCount(resumed.epoch, resumed).status());
  // New sources first, so that nothing changes where one cannot be made.
  std::vector<std::unique_ptr<StreamingSource>> fresh(children_.size());
  std::vector<OrderSettings> orders(children_.size());
  for (size_t i = 0; i < children_.size(); ++i) {
    if (!children_[i].source) continue;
    orders[i] = ChildOrder(s.sources[i]);
    if (SameFrom(children_[i].order.resumed, orders[i].resumed, s.sources[i].epoch)) continue;
    RF_ASSIGN_OR_RETURN(fresh[i], make_source_(i, orders[i]));
    fresh[i]->DeferRetire();
  }
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (fresh[i]) {
      c.source = std::move(fresh[i]);
      c.order = orders[i];
    }
    c.synced = false;
  }
  order_.resumed = resumed;
  state_ = s;
  placed_ = false;
  failure_ = Status::Ok();
  epoch_ = resumed.epoch;
  position_ = 0;
  return Status::Ok();
}

Status MixedSource::StartEpoch(uint64_t epoch, uint64_t position) {
  RF_RETURN_IF_ERROR(CheckEpochHandedOut(epoch));
  RF_ASSIGN_OR_RETURN(const uint64_t count, EpochCount(epoch, order_.resumed));
  RF_RETURN_IF_ERROR(
      CheckEpochPosition(position, EpochSamples(count, order_.batch_size, order_.drop_last)));
  const bool here = placed_ && epoch == epoch_ && position == position_;
  if (placed_ && !here && position != 0) {
    return Status::InvalidArgument("a mixture's stream goes on from where it is (epoch " +
                                   std::to_string(epoch_) + ", position " +
                                   std::to_string(position_) + "): it cannot start at position " +
                                   std::to_string(position) + " of epoch " + std::to_string(epoch) +
                                   "; a saved state places it");
  }
  if (!failure_.ok()) {
    // A failed batch may have moved some sources on: each goes back to the state's place.
    for (Child& c : children_) c.synced = false;
    failure_ = Status::Ok();
  }
  placed_ = true;
  epoch_ = epoch;
  position_ = position;
  return Status::Ok();
}

Status MixedSource::TakeFrom(size_t i, uint32_t count) {
  Child& c = children_[i];
  if (!c.synced) {
    const MixtureSourceState& s = state_.sources[i];
    RF_RETURN_IF_ERROR(c.source->StartEpoch(s.epoch, s.position));
    c.epoch = s.epoch;
    c.synced = true;
  }
  uint32_t taken = 0;
  while (taken < count) {
    if (c.source->position() >= c.source->epoch_samples()) {
      // Its epoch is over: its next one, in this same batch (the plan reads on into it).
      RF_RETURN_IF_ERROR(c.source->StartEpoch(c.epoch + 1, 0));
      ++c.epoch;
      continue;
    }
    RF_ASSIGN_OR_RETURN(const uint32_t got,
                        c.source->Take(count - taken, &c.refs[taken], &c.indices[taken]));
    std::fill(c.epochs.begin() + taken, c.epochs.begin() + taken + got, c.epoch);
    taken += got;
  }
  return Status::Ok();
}

Result<Batch> MixedSource::Next() {
  if (!failure_.ok()) return failure_;
  if (!placed_) {
    return Status::InvalidArgument("the mixture's first batch needs StartEpoch first");
  }
  // The batch handed out last has been queued by now: the windows it finished can be reused.
  for (Child& c : children_) {
    if (c.source) RF_RETURN_IF_ERROR(c.source->Release());
  }
  batch_samples_.clear();
  const uint32_t n = BatchSizeAt(position_, order_.batch_size, epoch_samples());
  if (n == 0) return Batch{};
  // The dataset of each step, then each dataset's samples in its own order.
  std::vector<uint64_t> drawn = state_.drawn;
  std::fill(counts_.begin(), counts_.end(), 0);
  for (uint32_t j = 0; j < n; ++j) {
    const size_t i = MixtureSource(weights_, order_.seed, state_.steps + j, drawn);
    step_source_[j] = i;
    ++drawn[i];
    ++counts_[i];
  }
  const auto fail = [this](Status st) {
    failure_ = st;
    for (Child& c : children_) c.synced = false;
    return st;
  };
  for (size_t i = 0; i < children_.size(); ++i) {
    if (counts_[i] == 0) continue;
    if (Status st = TakeFrom(i, counts_[i]); !st.ok()) return fail(st);
  }
  // The samples in step order, as addresses in their sources' staging areas.
  std::fill(counts_.begin(), counts_.end(), 0);  // now: each source's samples placed
  batch_samples_.resize(n);
  for (uint32_t j = 0; j < n; ++j) {
    const size_t i = step_source_[j];
    const Child& c = children_[i];
    const uint32_t t = counts_[i]++;
    const uint64_t area = reinterpret_cast<uintptr_t>(c.source->staging().area());
    refs_[j] = SampleRef{area + c.refs[t].sample_offset, area + c.refs[t].label_offset,
                         c.refs[t].record_bytes};
    batch_samples_[j] = c.first + c.indices[t];
    keys_[j] = c.epochs[t] * total_samples_ + c.first + c.indices[t];
  }
  Result<Batch> b =
      children_[gatherer_].source->staging().GatherFrom(nullptr, refs_.data(), keys_.data(), n);
  if (!b.ok()) return fail(b.status());
  b->epoch = 0;  // the keys carry each sample's dataset epoch
  // Where the stream stands now.
  state_.steps += n;
  state_.drawn = std::move(drawn);
  for (size_t i = 0; i < children_.size(); ++i) {
    if (counts_[i] == 0) continue;
    Child& c = children_[i];
    MixtureSourceState& s = state_.sources[i];
    s.epoch = c.epoch;
    s.position = c.source->position();
    if (s.position >= c.source->epoch_samples()) {  // its epoch is over: the next one's start
      ++s.epoch;
      s.position = 0;
    }
    const ResumedEpoch& r = c.order.resumed;
    s.stretches = r.epoch == s.epoch ? r.stretches : std::vector<EpochStretch>{};
  }
  position_ += n;
  return b;
}

uint64_t MixedSource::bytes_read() const {
  uint64_t n = 0;
  for (const Child& c : children_) n += c.source ? c.source->bytes_read() : 0;
  return n;
}

uint64_t MixedSource::bytes_delivered() const {
  uint64_t n = 0;
  for (const Child& c : children_) n += c.source ? c.source->bytes_delivered() : 0;
  return n;
}

double MixedSource::wait_seconds() const {
  double s = 0;
  for (const Child& c : children_) s += c.source ? c.source->wait_seconds() : 0;
  return s;
}

double MixedSource::decode_busy_seconds() const {
  double s = 0;
  for (const Child& c : children_) s += c.source ? c.source->decode_busy_seconds() : 0;
  return s;
}

uint32_t MixedSource::decode_threads() const {
  uint32_t n = 0;
  for (const Child& c : children_) n += c.source ? c.source->decode_threads() : 0;
  return n;
}

double MixedSource::reader_held_seconds() const {
  double s = 0;
  for (const Child& c : children_) s += c.source ? c.source->reader_held_seconds() : 0;
  return s;
}

std::string MixedSource::Describe() const {
  std::string weights;
  for (double w : weights_) {
    char text[32];
    std::snprintf(text, sizeof text, "%s%.3g", weights.empty() ? "" : ", ", w);
    weights += text;
  }
  size_t idle = 0;
  for (const Child& c : children_) idle += c.source ? 0 : 1;
  return "mixture of " + std::to_string(children_.size()) + " datasets by weight (" + weights +
         ")" + (idle == 0 ? "" : ", " + std::to_string(idle) + " of weight 0 not read") +
         ", each read as one dataset is; the first " + children_[gatherer_].source->Describe();
}

}  // namespace rf
