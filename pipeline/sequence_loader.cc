#include "pipeline/sequence_loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>

#include "core/clock.h"
#include "pipeline/loader_device.h"
#include "pipeline/output_pool.h"

namespace rf {
namespace {

constexpr uint64_t kNowhere = std::numeric_limits<uint64_t>::max();
// Records a source's loader gathers a batch (its batches are read, not handed out).
constexpr uint32_t kRecordBatch = 512;
constexpr size_t kPartAlign = 64;

size_t Aligned(size_t n) { return (n + kPartAlign - 1) / kPartAlign * kPartAlign; }

// Ids [first, first + count) of `src` (stored dtype s) into `dst` (int64 or int32).
template <typename Out>
void CopyIds(const void* src, DType s, uint64_t first, uint64_t count, Out* dst) {
  switch (s) {
    case DType::kUInt16: {
      const auto* p = static_cast<const uint16_t*>(src) + first;
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
    case DType::kInt32: {
      const auto* p = static_cast<const int32_t*>(src) + first;
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
    default: {
      const auto* p = static_cast<const int64_t*>(src) + first;
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
  }
}

}  // namespace

// One dataset of the loader: its plan, its records' loader, where its epoch stands for this rank
// (the state, its slice of the epoch's list and the next row's place in it) and where its stream
// stands (the next stream token, the record batch in hand and the place in it).
class SequenceLoader::Source {
 public:
  const Dataset* dataset = nullptr;
  std::shared_ptr<const SequencePlan> plan;
  std::unique_ptr<Loader> records;
  DType stored = DType::kUInt16;
  bool tensor = false;     // fixed rows, each a document
  uint64_t row_elems = 0;  // tensor: ids a row
  int64_t eod = -1;
  uint32_t world = 1, rank = 0;

  SequenceSourceState st;
  RankSequences slice;
  size_t range = 0;
  uint64_t in_range = 0;

  EpochLayout layout;
  bool have_layout = false;
  uint64_t tok = kNowhere;
  std::shared_ptr<LoadedBatch> batch;
  uint32_t rec = 0;
  uint64_t off = 0;

  bool EpochDone() const { return st.position >= slice.rows; }

  // Begins `s` (its list split over this run's world).
  void Enter(const SequenceSourceState& s) {
    st = s;
    st.world_size = world;
    const SequenceList whole = {{0, plan->epoch_sequences()}};
    slice = SliceSequences(st.list.empty() ? whole : st.list, world, rank);
    range = 0;
    in_range = 0;
    for (uint64_t skip = std::min(st.position, slice.count); skip > 0;) {
      const uint64_t k = std::min(skip, slice.ranges[range].size() - in_range);
      in_range += k;
      skip -= k;
      if (in_range == slice.ranges[range].size()) {
        ++range;
        in_range = 0;
      }
    }
    if (!have_layout || layout.epoch() != st.epoch) {
      layout = plan->order().Layout(st.epoch);
      have_layout = true;
    }
    tok = kNowhere;
    batch.reset();
  }
  void NextEpoch() { Enter({st.epoch + 1, 0, world, {}}); }

  uint64_t RecordIds() const {
    if (tensor) return row_elems;
    const int64_t* o = batch->offsets();
    return static_cast<uint64_t>(o[rec + 1] - o[rec]);
  }
  uint64_t RecordTokens() const { return RecordIds() + (eod >= 0 ? 1 : 0); }

  Status Fill() {
    if (batch && rec < batch->size()) return Status::Ok();
    RF_ASSIGN_OR_RETURN(batch, records->Next());
    rec = 0;
    off = 0;
    if (!batch)
      return Status::Aborted("the token stream of " + dataset->shard_path(0) + " ended at token " +
                             std::to_string(tok) + " of epoch " + std::to_string(st.epoch) + "'s " +
                             std::to_string(plan->epoch_tokens()));
    return Status::Ok();
  }

  // Moves `n` tokens on; with `out`, copies them there and notes in *starts the places (from
  // `at`) where a document begins.
  template <typename Out>
  Status Walk(uint64_t n, Out* out, uint32_t at, std::vector<uint32_t>* starts) {
    while (n > 0) {
      RF_RETURN_IF_ERROR(Fill());
      const uint64_t ids = RecordIds(), total = ids + (eod >= 0 ? 1 : 0);
      const uint64_t k = std::min(n, total - off);
      if (out != nullptr) {
        if (off == 0 && starts != nullptr) starts->push_back(at);
        const uint64_t from_ids = off < ids ? std::min(k, ids - off) : 0;
        if (from_ids > 0) {
          const uint64_t first = tensor ? uint64_t{rec} * row_elems + off
                                        : static_cast<uint64_t>(batch->offsets()[rec]) + off;
          CopyIds(batch->samples(), stored, first, from_ids, out);
        }
        if (k > from_ids) out[from_ids] = static_cast<Out>(eod);  // the document's end
        out += k;
        at += static_cast<uint32_t>(k);
      }
      off += k;
      n -= k;
      tok += k;
      if (off == total) {
        ++rec;
        off = 0;
      }
    }
    return Status::Ok();
  }

  // Puts the stream at token `token` of the current epoch: the records' loader restarted at the
  // window holding it, and the window's tokens before it skipped.
  Status Seek(uint64_t token) {
    const StreamWindow w = plan->Locate(layout, token);
    RF_RETURN_IF_ERROR(records->StartEpoch(st.epoch, w.position));
    batch.reset();
    tok = w.token;
    return Walk<int64_t>(token - w.token, nullptr, 0, nullptr);
  }

  // The next row of this rank's epoch into `out` (row_tokens() ids); its valid tokens in *valid.
  template <typename Out>
  Status Row(Out* out, uint64_t* valid, std::vector<uint32_t>* starts) {
    *valid = 0;
    if (st.position < slice.count && plan->pad()) {
      // Document `seq` of the epoch's order, cut at a row; `tok` counts documents here.
      const uint64_t seq = slice.ranges[range].begin + in_range;
      if (tok != seq) {
        RF_RETURN_IF_ERROR(records->StartEpoch(st.epoch, seq));
        batch.reset();
      }
      RF_RETURN_IF_ERROR(Fill());
      const uint64_t total = RecordTokens();
      *valid = std::min(total, plan->row_tokens());
      RF_RETURN_IF_ERROR(Walk(*valid, out, 0, starts));
      if (*valid < total) RF_RETURN_IF_ERROR(Walk<Out>(total - *valid, nullptr, 0, nullptr));
      tok = seq + 1;
      if (++in_range == slice.ranges[range].size()) {
        ++range;
        in_range = 0;
      }
    } else if (st.position < slice.count) {
      const uint64_t seq = slice.ranges[range].begin + in_range;
      const uint64_t first = seq * plan->row_tokens();
      *valid = std::min(plan->row_tokens(), plan->epoch_tokens() - first);
      if (tok != first) RF_RETURN_IF_ERROR(Seek(first));
      RF_RETURN_IF_ERROR(Walk(*valid, out, 0, starts));
      if (++in_range == slice.ranges[range].size()) {
        ++range;
        in_range = 0;
      }
    }
    ++st.position;
    return Status::Ok();
  }
};

SequenceLoader::~SequenceLoader() {
  Stop();
  sources_.clear();
  if (device_) (void)device_->Drain();
}

void SequenceLoader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  made_.clear();
  failed_ = false;
}

void SequenceLoader::Start() {
  handed_ = StateNow();
  stop_ = false;
  worker_ = std::thread([this] { Work(); });
}

void SequenceLoader::Work() {
  const uint32_t ahead = std::max<uint32_t>(options_.output_buffers, 1);
  // This thread's CUDA calls on the loader's GPU (not the process's device 0: a rank's other).
  const Status bound = device_->BindThread();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || made_.size() < ahead; });
      if (stop_) return;
    }
    Result<std::shared_ptr<LoadedBatch>> b =
        bound.ok() ? Produce() : Result<std::shared_ptr<LoadedBatch>>(bound);
    const bool ok = b.ok();
    Made m{std::move(b), ok ? StateNow() : SequenceState{}};
    const LoaderStats stats = SourceStats();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_ = stats;
      made_.push_back(std::move(m));
      if (!ok) failed_ = true;
    }
    cv_.notify_all();
    if (!ok) return;  // Next() hands the error out and restarts from the last batch handed out
  }
}

SequenceState SequenceLoader::StateNow() const {
  SequenceState s;
  s.rows = rows_;
  s.drawn = drawn_;
  for (const auto& src : sources_) s.sources.push_back(src->st);
  return s;
}

Result<std::shared_ptr<LoadedBatch>> SequenceLoader::Next() {
  Made m{std::shared_ptr<LoadedBatch>(), {}};
  {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t asked = SteadyNowNs();
    if (clock_start_ns_ == 0) clock_start_ns_ = asked;
    while (made_.empty()) {
      // Waits in steps, so that the caller's poll (a signal, say) can end the wait.
      cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !made_.empty(); });
      if (made_.empty() && options_.poll) {
        lock.unlock();
        const Status st = options_.poll();
        if (!st.ok()) return st;
        lock.lock();
      }
    }
    wait_seconds_ += (SteadyNowNs() - asked) * 1e-9;
    m = std::move(made_.front());
    made_.pop_front();
  }
  cv_.notify_all();
  if (!m.batch.ok()) {
    // Restart from where the batches handed out leave off; the error goes to the caller.
    const Status error = m.batch.status();
    const SequenceState at = handed_;
    Stop();
    const Status st = Restore(at);
    return st.ok() ? error : st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  handed_ = std::move(m.after);
  if (*m.batch) ++handed_batches_;
  return std::move(*m.batch);
}

Result<std::unique_ptr<SequenceLoader>> SequenceLoader::Create(
    const std::vector<const Dataset*>& datasets, const LoaderOptions& options) {
  const SequenceOptions& so = options.sequence;
  if (so.length == 0) return Status::Usage("sequence_length: 0 makes no packed sequences");
  if (datasets.empty()) return Status::Usage("data: no dataset");
  std::unique_ptr<SequenceLoader> l(new SequenceLoader);
  l->options_ = options;
  l->length_ = so.length;
  l->batch_ = options.pipeline.order.batch_size;
  l->dtype_ = options.output.dtype;
  if (l->dtype_ != DType::kInt64 && l->dtype_ != DType::kInt32)
    return Status::Usage("dtype: packed sequences' tokens are int64 or int32, not " +
                         std::string(DTypeName(l->dtype_)));
  const std::vector<float>& weights = options.pipeline.weights;
  if (datasets.size() > 1 || !weights.empty()) {
    RF_ASSIGN_OR_RETURN(l->weights_, NormalizeWeights(weights, datasets.size()));
  }
  const OrderSettings& order = options.pipeline.order;
  for (const Dataset* d : datasets) {
    auto s = std::make_unique<Source>();
    s->dataset = d;
    const format::Header& h = d->header();
    s->stored = h.sample_dtype;
    s->tensor = !h.variable();
    s->row_elems = h.SampleElems();
    s->eod = so.eod_token;
    s->world = order.world_size;
    s->rank = order.rank;
    if (l->dtype_ == DType::kInt32 && s->stored == DType::kInt64)
      return Status::Usage("dtype int32: " + d->shard_path(0) +
                           " holds int64 ids, which int32 may not hold; use int64");
    RF_ASSIGN_OR_RETURN(s->plan, SequencePlan::Make(*d, order, so.length, so.eod_token >= 0,
                                                    options.pipeline.order.drop_last, so.pad));
    if (s->plan->epoch_sequences() == 0)
      return Status::Usage("sequence_length " + std::to_string(so.length) + ": " +
                           d->shard_path(0) + " holds " + std::to_string(s->plan->epoch_tokens()) +
                           " tokens, no whole sequence, and drop_last drops the partial one");
    // The records, in the world of one's order, in host memory; the batch is records.
    LoaderOptions r = options;
    r.pipeline.data = d->shard_path(0);  // this source's, whatever the caller named
    r.sequence = {};
    r.pipeline.weights = {};  // each source is one dataset
    r.pipeline.mixture = {};
    r.pipeline.device = DeviceKind::kCpu;
    r.pipeline.order.rank = 0;
    r.pipeline.order.world_size = 1;
    r.pipeline.order.resumed = {};
    r.pipeline.order.drop_last = false;
    r.pipeline.order.batch_size = kRecordBatch;
    r.output = OutputOptions{};
    r.output.dtype = h.sample_dtype;
    r.output.normalize = false;
    r.gpu = -1;
    r.stream = nullptr;
    r.poll = nullptr;  // the worker's thread reads it; Next() polls the caller's
    RF_ASSIGN_OR_RETURN(s->records, Loader::Create(*d, r));
    s->Enter({});
    l->sources_.push_back(std::move(s));
  }
  l->drawn_.assign(l->sources_.size(), 0);
  RF_ASSIGN_OR_RETURN(l->device_,
                      MakeLoaderDevice(options.pipeline.device, options.gpu, options.stream));
  const size_t b = l->batch_, len = l->length_;
  const size_t most = Aligned(b * (len + 1) * DTypeSize(l->dtype_)) + Aligned(b * 8) +
                      Aligned(b * len * 8) + Aligned((b * len + 1) * 4);
  RF_ASSIGN_OR_RETURN(l->pool_, l->device_->MakePool(most, l->batch_, options.output_buffers));
  for (HostBuffer& h : l->host_) {
    RF_ASSIGN_OR_RETURN(h, l->device_->HostArea(most));
  }
  l->Start();
  return l;
}

Result<std::shared_ptr<LoadedBatch>> SequenceLoader::Produce() {
  const bool mixture = !weights_.empty();
  Source& single = *sources_[0];
  const uint64_t rows =
      mixture ? batch_ : std::min<uint64_t>(batch_, single.slice.rows - single.st.position);
  const uint64_t epoch = single.st.epoch, position = single.st.position;
  if (!mixture && ended_) {
    ended_ = false;
    return std::shared_ptr<LoadedBatch>();
  }
  const size_t row = length_ + 1;
  // The slot's last copy to the device is done before it is written again.
  slot_ = (slot_ + 1) % LoaderDevice::kPutSlots;
  RF_RETURN_IF_ERROR(device_->WaitPut(slot_));
  uint8_t* base = host_[slot_].data();
  const size_t tokens_bytes = Aligned(rows * row * DTypeSize(dtype_));
  auto* lengths = reinterpret_cast<int64_t*>(base + tokens_bytes);
  auto* positions = reinterpret_cast<int64_t*>(base + tokens_bytes + Aligned(rows * 8));
  auto* cu = reinterpret_cast<int32_t*>(base + tokens_bytes + Aligned(rows * 8) +
                                        Aligned(rows * length_ * 8));
  size_t segments = 0;
  std::vector<uint32_t> starts;
  for (uint64_t r = 0; r < rows; ++r) {
    const size_t i =
        mixture ? MixtureSource(weights_, options_.pipeline.order.seed, rows_, drawn_) : 0;
    Source& s = *sources_[i];
    starts.clear();
    uint64_t valid = 0;
    Status st;
    if (dtype_ == DType::kInt64) {
      int64_t* out = reinterpret_cast<int64_t*>(base) + r * row;
      st = s.Row(out, &valid, &starts);
      std::fill(out + valid, out + row, options_.sequence.pad_token);
    } else {
      int32_t* out = reinterpret_cast<int32_t*>(base) + r * row;
      st = s.Row(out, &valid, &starts);
      std::fill(out + valid, out + row, static_cast<int32_t>(options_.sequence.pad_token));
    }
    if (!st.ok()) {
      s.tok = kNowhere;  // the next try seeks afresh
      return st;
    }
    lengths[r] = static_cast<int64_t>(valid);
    ++drawn_[i];
    ++rows_;
    if (mixture && s.EpochDone()) s.NextEpoch();  // its epochs roll over within a batch
    // The inputs' segments: the row's start, each document starting within its valid inputs,
    // and the padding past them.
    const uint64_t inputs = std::min<uint64_t>(valid, length_);
    const int32_t row_base = static_cast<int32_t>(r * length_);
    int64_t* pos = positions + r * length_;
    uint64_t seg_start = 0;
    cu[segments++] = row_base;
    for (uint32_t p : starts) {
      if (p == 0 || p >= inputs) continue;
      for (uint64_t t = seg_start; t < p; ++t) pos[t] = static_cast<int64_t>(t - seg_start);
      cu[segments++] = row_base + static_cast<int32_t>(p);
      seg_start = p;
    }
    if (inputs < length_ && inputs > seg_start) {
      for (uint64_t t = seg_start; t < inputs; ++t) pos[t] = static_cast<int64_t>(t - seg_start);
      cu[segments++] = row_base + static_cast<int32_t>(inputs);
      seg_start = inputs;
    }
    for (uint64_t t = seg_start; t < length_; ++t) pos[t] = static_cast<int64_t>(t - seg_start);
  }
  cu[segments] = static_cast<int32_t>(rows * length_);
  if (!mixture && single.EpochDone()) {
    single.NextEpoch();
    ended_ = true;
  }

  RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out,
                      pool_->Acquire(static_cast<uint32_t>(rows), dtype_,
                                     {static_cast<int64_t>(rows), static_cast<int64_t>(row)}));
  const size_t used = reinterpret_cast<uint8_t*>(cu + segments + 1) - base;
  RF_RETURN_IF_ERROR(device_->PutBytesAsync(base, out->samples(), used, slot_));
  auto* dst = static_cast<uint8_t*>(out->samples());
  const auto n = static_cast<int64_t>(rows), l = static_cast<int64_t>(length_);
  out->views_ = {
      {dst, dtype_, {n, l + 1}},
      {dst + tokens_bytes, DType::kInt64, {n}},
      {dst + (reinterpret_cast<uint8_t*>(cu) - base),
       DType::kInt32,
       {static_cast<int64_t>(segments) + 1}},
      {dst + tokens_bytes + Aligned(rows * 8), DType::kInt64, {n, l}},
  };
  out->epoch_ = epoch;
  out->position_ = position;
  RF_RETURN_IF_ERROR(pool_->MarkReady(*out));
  return out;
}

SequenceState SequenceLoader::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return handed_;
}

Status SequenceLoader::Restore(const SequenceState& s) {
  if (s.sources.size() != sources_.size() || s.drawn.size() != sources_.size())
    return Status::Usage("the state is of " + std::to_string(s.sources.size()) +
                         " datasets, this loader reads " + std::to_string(sources_.size()));
  // Checked whole before anything changes: a refused state leaves the loader as it was.
  for (size_t i = 0; i < sources_.size(); ++i) {
    const SequenceSourceState& g = s.sources[i];
    const uint64_t total = sources_[i]->plan->epoch_sequences();
    uint64_t last = 0;
    for (const SequenceRange& r : g.list) {
      if (r.begin >= r.end || r.begin < last || r.end > total)
        return Status::Usage("the state's dataset " + std::to_string(i) + " lists sequences [" +
                             std::to_string(r.begin) + ", " + std::to_string(r.end) +
                             "), not ascending ranges within its epoch's " + std::to_string(total));
      last = r.end;
    }
    if (g.position > RowsOf(g, i))
      return Status::Usage("the state's dataset " + std::to_string(i) + " is at row " +
                           std::to_string(g.position) + " of an epoch of " +
                           std::to_string(RowsOf(g, i)) + " rows a rank");
  }
  Stop();
  for (size_t i = 0; i < sources_.size(); ++i) {
    const SequenceSourceState& g = s.sources[i];
    Source& src = *sources_[i];
    const uint32_t world = g.world_size == 0 ? src.world : g.world_size;
    if (world == src.world) {
      src.Enter(g);
    } else {
      // Another world: what no old rank took, split over this run's ranks.
      const SequenceList whole = {{0, src.plan->epoch_sequences()}};
      src.Enter({g.epoch, 0, src.world,
                 RemainingSequences(g.list.empty() ? whole : g.list, world, g.position)});
      if (SequenceCount(src.st.list) == 0) src.NextEpoch();
    }
  }
  rows_ = s.rows;
  drawn_ = s.drawn;
  ended_ = false;
  Start();
  return Status::Ok();
}

uint64_t SequenceLoader::RowsOf(const SequenceSourceState& g, size_t i) const {
  const uint32_t world = g.world_size == 0 ? sources_[i]->world : g.world_size;
  const uint64_t n = g.list.empty() ? sources_[i]->plan->epoch_sequences() : SequenceCount(g.list);
  return n / world + (n % world != 0 ? 1 : 0);
}

uint64_t SequenceLoader::epoch_sequences(size_t source) const {
  return sources_[source]->plan->epoch_sequences();
}

uint64_t SequenceLoader::batches_per_epoch() const {
  const uint64_t rows = RowsOf(handed_.sources[0], 0);
  return (rows + batch_ - 1) / batch_;
}

bool SequenceLoader::on_gpu() const { return device_->gpu() >= 0; }
int SequenceLoader::gpu_device() const { return device_->gpu(); }

LoaderStats SequenceLoader::SourceStats() const {
  LoaderStats out;
  for (const auto& s : sources_) {
    const LoaderStats r = s->records->stats();
    out.bytes_read += r.bytes_read;
    out.bytes_delivered += r.bytes_delivered;
    out.decode_busy_seconds += r.decode_busy_seconds;
    out.decode_threads += r.decode_threads;
    out.seconds = std::max(out.seconds, r.seconds);
    out.wait_seconds += r.wait_seconds;
    out.reader_held_seconds += r.reader_held_seconds;
  }
  return out;
}

LoaderStats SequenceLoader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  LoaderStats out = stats_;  // the sources' as the worker last saw them
  out.batches = handed_batches_;
  out.wait_seconds = wait_seconds_;  // Next() waiting for a packed batch
  out.seconds = clock_start_ns_ == 0 ? 0 : (SteadyNowNs() - clock_start_ns_) * 1e-9;
  return out;
}

std::string SequenceLoader::Describe() const {
  return device_->Describe() + ", packed sequences of " + std::to_string(length_) + " from " +
         std::to_string(sources_.size()) + " dataset(s), " + sources_[0]->records->Describe();
}

}  // namespace rf
