#include "pipeline/sequences/sequence_loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "core/clock.h"
#include "core/cpus.h"
#include "core/thread_name.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/make_loader_device.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/streaming_source.h"
#include "pipeline/stage/work_pool.h"

namespace rf {
namespace {

constexpr uint64_t kNowhere = std::numeric_limits<uint64_t>::max();
// Records a source's loader takes at a time (read in place: pipeline/sources/training_source.h's
// NextInPlace; the pieces of a batch that read them are copied before the next take).
constexpr uint32_t kRecordBatch = 512;
constexpr size_t kPartAlign = 64;
// The bytes a packing thread writes at least for a batch to be split over more threads (less,
// and waking a thread costs more than it saves).
constexpr uint64_t kPartBytes = 128 << 10;

size_t Aligned(size_t n) { return (n + kPartAlign - 1) / kPartAlign * kPartAlign; }

// `count` ids of `src` (stored dtype s) into `dst`.
template <typename Out>
void CopyIds(const uint8_t* src, DType s, uint64_t count, Out* dst) {
  switch (s) {
    case DType::kUInt16: {
      if constexpr (std::is_same_v<Out, uint16_t>) {
        std::memcpy(dst, src, count * sizeof(Out));
        return;
      }
      const auto* p = reinterpret_cast<const uint16_t*>(src);
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
    case DType::kInt32: {
      if constexpr (std::is_same_v<Out, int32_t>) {
        std::memcpy(dst, src, count * sizeof(Out));
        return;
      }
      const auto* p = reinterpret_cast<const int32_t*>(src);
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
    default: {
      if constexpr (std::is_same_v<Out, int64_t>) {
        std::memcpy(dst, src, count * sizeof(Out));
        return;
      }
      const auto* p = reinterpret_cast<const int64_t*>(src);
      for (uint64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(p[i]);
      return;
    }
  }
}

// Parts of `total` units for threads that each take at least `least` (at most `most` parts).
uint32_t Parts(uint64_t total, uint64_t least, uint32_t most) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(total / std::max<uint64_t>(least, 1), 1, most));
}

}  // namespace

uint32_t DefaultPackThreads() {
  return std::clamp<uint32_t>(AvailableCpus() / LocalRanks() / 4, 1, 4);
}

// A batch's tokens as the worker walks the stream: the pieces to copy, each a run of ids from a
// record where the source's staging holds it (or one end-of-document token), to its place in the
// batch. The copies run on the pool, split by rows; Flush runs those added so far before a source
// moves on from the records they read.
class SequenceLoader::Packer {
 public:
  explicit Packer(uint32_t threads) : pool_(threads, "rf-pack-help") {}

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
  void Flush() {
    const size_t from = done_, to = pieces_.size();
    if (from == to) return;
    uint64_t ids = 0;
    for (size_t i = from; i < to; ++i) ids += pieces_[i].count;
    const uint32_t parts = Parts(ids * DTypeSize(out_), kPartBytes, 2 * pool_.threads());
    pool_.Run(parts, [&](uint32_t p) {
      // Parts of about equal ids, cut at pieces.
      const uint64_t lo = ids * p / parts, hi = ids * (p + 1) / parts;
      uint64_t at = 0;
      for (size_t i = from; i < to && at < hi; ++i) {
        if (at >= lo) Copy(pieces_[i]);
        at += pieces_[i].count;
      }
    });
    done_ = to;
  }

  // Copies the rest of the batch's `rows` rows; with `positions` (the host's batch, written
  // whole here) fills each row past lengths[r] with `pad` and writes each input's place in its
  // segment (row r's segments: cu[row_segments[r]] .. up to cu[row_segments[r + 1]]).
  void Finish(uint64_t rows, const int64_t* lengths, const int32_t* cu,
              const std::vector<size_t>& row_segments, int64_t* positions, int64_t pad) {
    row_pieces_.push_back(pieces_.size());
    const uint64_t per_row = row_ * (DTypeSize(out_) + (positions != nullptr ? 8 : 0));
    const uint32_t parts = static_cast<uint32_t>(
        std::min<uint64_t>(rows, Parts(rows * per_row, kPartBytes, 2 * pool_.threads())));
    pool_.Run(parts, [&](uint32_t p) {
      const uint64_t r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
      for (size_t i = std::max(row_pieces_[r0], done_); i < row_pieces_[r1]; ++i) Copy(pieces_[i]);
      if (positions == nullptr) return;
      for (uint64_t r = r0; r < r1; ++r) {
        Fill(r * row_ + static_cast<uint64_t>(lengths[r]), (r + 1) * row_, pad);
        for (size_t k = row_segments[r]; k < row_segments[r + 1]; ++k) {
          const int64_t first = cu[k], end = cu[k + 1];
          int64_t* out = positions + first;
          for (int64_t t = 0; t < end - first; ++t) out[t] = t;
        }
      }
    });
    done_ = pieces_.size();
  }

 private:
  struct Piece {
    const uint8_t* src;  // null: one end-of-document token
    uint64_t dst;
    uint64_t count;
    DType dtype;
  };

  template <typename Out>
  void CopyAs(const Piece& piece) {
    Out* dst = reinterpret_cast<Out*>(tokens_) + piece.dst;
    if (piece.src == nullptr) {
      *dst = static_cast<Out>(eod_);
    } else {
      CopyIds(piece.src, piece.dtype, piece.count, dst);
    }
  }
  void Copy(const Piece& piece) {
    switch (out_) {
      case DType::kUInt16:
        return CopyAs<uint16_t>(piece);
      case DType::kInt32:
        return CopyAs<int32_t>(piece);
      default:
        return CopyAs<int64_t>(piece);
    }
  }
  // Elements [from, to) of the batch's tokens as `pad`.
  void Fill(uint64_t from, uint64_t to, int64_t pad) {
    if (out_ == DType::kInt32) {
      std::fill(reinterpret_cast<int32_t*>(tokens_) + from,
                reinterpret_cast<int32_t*>(tokens_) + to, static_cast<int32_t>(pad));
    } else {
      std::fill(reinterpret_cast<int64_t*>(tokens_) + from,
                reinterpret_cast<int64_t*>(tokens_) + to, pad);
    }
  }

  WorkPool pool_;
  uint8_t* tokens_ = nullptr;
  DType out_ = DType::kInt64;
  uint64_t row_ = 0;
  int64_t eod_ = -1;
  std::vector<Piece> pieces_;
  std::vector<size_t> row_pieces_;  // each row's first piece (and, after Finish, the end)
  size_t done_ = 0;                 // pieces copied
};

// One dataset of the loader: its plan, its records' loader, where its epoch stands for this rank
// (the state, its slice of the epoch's list and the next row's place in it) and where its stream
// stands (the next stream token, the records in hand, where the staging holds them, and the place
// in them).
class SequenceLoader::Source {
 public:
  const Dataset* dataset = nullptr;
  std::shared_ptr<const SequencePlan> plan;
  std::unique_ptr<StreamingSource> records;  // in host staging, read in place
  Packer* packer = nullptr;                  // flushed before the records in hand are let go
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
    held = 0;
  }
  void NextEpoch() { Enter({st.epoch + 1, 0, world, {}}); }

  uint64_t RecordIds() const { return spans[rec].bytes / elem; }
  uint64_t RecordTokens() const { return RecordIds() + (eod >= 0 ? 1 : 0); }

  Status Fill() {
    if (rec < held) return Status::Ok();
    packer->Flush();  // the pieces copy from the records in hand: before they go
    RF_ASSIGN_OR_RETURN(held, records->NextInPlace(&spans));
    rec = 0;
    off = 0;
    if (held == 0)
      return Status::Aborted("the token stream of " + dataset->shard_path(0) + " ended at token " +
                             std::to_string(tok) + " of epoch " + std::to_string(st.epoch) + "'s " +
                             std::to_string(plan->epoch_tokens()));
    return Status::Ok();
  }
  // Restarts the records' loader at `position` of the current epoch's order.
  Status Restart(uint64_t position) {
    packer->Flush();
    held = 0;
    return records->StartEpoch(st.epoch, position);
  }

  // Moves `n` tokens on; with `pack`, adds their copy to the batch's element `dst` on, and notes
  // in *starts the places (from `at`) where a document begins.
  Status Walk(uint64_t n, Packer* pack, uint64_t dst, uint32_t at, std::vector<uint32_t>* starts) {
    while (n > 0) {
      RF_RETURN_IF_ERROR(Fill());
      const uint64_t ids = RecordIds(), total = ids + (eod >= 0 ? 1 : 0);
      const uint64_t k = std::min(n, total - off);
      if (pack != nullptr) {
        if (off == 0 && starts != nullptr) starts->push_back(at);
        const uint64_t from_ids = off < ids ? std::min(k, ids - off) : 0;
        if (from_ids > 0) pack->Add(spans[rec].data + off * elem, stored, dst, from_ids);
        if (k > from_ids) pack->AddEod(dst + from_ids);  // the document's end
        dst += k;
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
    RF_RETURN_IF_ERROR(Restart(w.position));
    tok = w.token;
    return Walk(token - w.token, nullptr, 0, 0, nullptr);
  }

  // The next row of this rank's epoch into the batch at element `dst` (row_tokens() ids); its
  // valid tokens in *valid.
  Status Row(Packer* pack, uint64_t dst, uint64_t* valid, std::vector<uint32_t>* starts) {
    *valid = 0;
    if (st.position < slice.count && plan->pad()) {
      // Document `seq` of the epoch's order, cut at a row; `tok` counts documents here.
      const uint64_t seq = slice.ranges[range].begin + in_range;
      if (tok != seq) RF_RETURN_IF_ERROR(Restart(seq));
      RF_RETURN_IF_ERROR(Fill());
      const uint64_t total = RecordTokens();
      *valid = std::min(total, plan->row_tokens());
      RF_RETURN_IF_ERROR(Walk(*valid, pack, dst, 0, starts));
      if (*valid < total) RF_RETURN_IF_ERROR(Walk(total - *valid, nullptr, 0, 0, nullptr));
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
      RF_RETURN_IF_ERROR(Walk(*valid, pack, dst, 0, starts));
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
  room_.notify_all();
  to_put_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (putter_.joinable()) putter_.join();
  std::lock_guard<std::mutex> lock(mu_);
  made_.clear();
  to_put_.clear();
  failed_ = false;
}

void SequenceLoader::Start() {
  handed_ = StateNow();
  stop_ = false;
  packed_ = 0;
  putted_ = 0;
  worker_ = std::thread([this] { Work(); });
  if (narrow_on_host_) putter_ = std::thread([this] { PutLoop(); });
}

bool SequenceLoader::Deliver(Packed& p, Result<std::shared_ptr<LoadedBatch>> b) {
  const bool ok = b.ok();
  stats_ = p.stats;
  made_.push_back(Made{std::move(b), ok ? std::move(p.after) : SequenceState{}});
  if (!ok) failed_ = true;
  return ok;
}

void SequenceLoader::Work() {
  NameThread("rf-pack");
  const uint32_t ahead = std::max<uint32_t>(options_.output_buffers, 1);
  // This thread's CUDA calls on the loader's GPU (not the process's device 0: a rank's other).
  const Status bound = device_->BindThread();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The batches made and in the making hold at most `ahead` of the pool's buffers.
      room_.wait(lock, [&] { return stop_ || made_.size() + to_put_.size() + putting_ < ahead; });
      if (stop_) return;
    }
    Packed p;
    p.error = bound.ok() ? Pack(&p) : bound;
    const bool ok = p.error.ok();
    if (ok) p.after = StateNow();
    p.stats = SourceStats();
    if (narrow_on_host_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        to_put_.push_back(std::move(p));
      }
      to_put_cv_.notify_one();
    } else {
      Result<std::shared_ptr<LoadedBatch>> b = Put(p);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!Deliver(p, std::move(b))) return;
      }
      cv_.notify_all();
    }
    if (!ok) return;  // Next() hands the error out and restarts from the last batch handed out
  }
}

void SequenceLoader::PutLoop() {
  NameThread("rf-put");
  const Status bound = device_->BindThread();
  for (;;) {
    Packed p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      to_put_cv_.wait(lock, [&] { return stop_ || !to_put_.empty(); });
      if (stop_) return;
      p = std::move(to_put_.front());
      to_put_.pop_front();
      putting_ = 1;
    }
    Result<std::shared_ptr<LoadedBatch>> b = bound.ok() ? Put(p) : bound;
    bool ok = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (p.slotted) ++putted_;  // the slot's copy is queued (or it failed and the putter stops)
      putting_ = 0;
      ok = Deliver(p, std::move(b));
    }
    cv_.notify_all();
    room_.notify_all();
    if (!ok) return;
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
  room_.notify_all();
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
    const std::vector<const Dataset*>& datasets, const SequenceSpec& spec) {
  const SequenceOptions& so = spec.sequence;
  if (so.length == 0) return Status::Usage("sequence_length: 0 makes no packed sequences");
  if (datasets.empty()) return Status::Usage("data: no dataset");
  std::unique_ptr<SequenceLoader> l(new SequenceLoader);
  l->options_ = spec;
  l->length_ = so.length;
  l->batch_ = spec.pipeline.order.batch_size;
  l->dtype_ = spec.dtype;
  if (l->dtype_ != DType::kInt64 && l->dtype_ != DType::kInt32)
    return Status::Usage("dtype: packed sequences' tokens are int64 or int32, not " +
                         std::string(DTypeName(l->dtype_)));
  if (l->dtype_ == DType::kInt32) {
    // A token the output cannot hold would come out cut to another id, a real one: refused, as
    // int64 ids are below.
    constexpr int64_t lo = std::numeric_limits<int32_t>::min();
    constexpr int64_t hi = std::numeric_limits<int32_t>::max();
    for (const auto& [name, token] :
         {std::pair{"eod_token", so.eod_token}, std::pair{"pad_token", so.pad_token}}) {
      if (token < lo || token > hi)
        return Status::Usage(std::string(name) + " " + std::to_string(token) +
                             " does not fit the output dtype int32 (" + std::to_string(lo) +
                             " to " + std::to_string(hi) + "); use dtype int64");
    }
  }
  const std::vector<float>& weights = spec.pipeline.weights;
  if (datasets.size() > 1 || !weights.empty()) {
    RF_ASSIGN_OR_RETURN(l->weights_, NormalizeWeights(weights, datasets.size()));
  }
  const OrderSettings& order = spec.pipeline.order;
  for (const Dataset* d : datasets) {
    auto s = std::make_unique<Source>();
    s->dataset = d;
    const format::Header& h = d->header();
    s->stored = h.sample_dtype;
    s->elem = DTypeSize(h.sample_dtype);
    s->eod = so.eod_token;
    s->world = order.world_size;
    s->rank = order.rank;
    if (l->dtype_ == DType::kInt32 && s->stored == DType::kInt64)
      return Status::Usage("dtype int32: " + d->shard_path(0) +
                           " holds int64 ids, which int32 may not hold; use int64");
    RF_ASSIGN_OR_RETURN(s->plan, SequencePlan::Make(*d, order, so.length, so.eod_token >= 0,
                                                    spec.pipeline.order.drop_last, so.pad));
    if (s->plan->epoch_sequences() == 0)
      return Status::Usage("sequence_length " + std::to_string(so.length) + ": " +
                           d->shard_path(0) + " holds " + std::to_string(s->plan->epoch_tokens()) +
                           " tokens, no whole sequence, and drop_last drops the partial one");
    // The records, in the world of one's order, in host memory, read in place (a source of its
    // own, streaming: no output buffers, no decode).
    PipelineConfig r = spec.pipeline;
    r.data = d->shard_path(0);  // this source's, whatever the caller named
    r.weights = {};             // each source is one dataset
    r.mixture = {};
    r.device = DeviceKind::kCpu;
    r.order.rank = 0;
    r.order.world_size = 1;
    r.order.resumed = {};
    r.order.drop_last = false;
    r.order.batch_size = kRecordBatch;
    RF_RETURN_IF_ERROR(r.ValidateFor(d->ChunkSampleCounts()));
    StreamingOptions records = StreamingOptionsFor(r, spec.epochs);
    records.pin = PinMode::kOff;  // copied to host staging, never read by a GPU's copy engine
    RF_ASSIGN_OR_RETURN(s->records, StreamingSource::Create(*d, records, HostStaging()));
    s->Enter({});
    l->sources_.push_back(std::move(s));
  }
  l->drawn_.assign(l->sources_.size(), 0);
  RF_ASSIGN_OR_RETURN(l->device_, MakeLoaderDevice(spec.pipeline.device, spec.gpu, spec.stream));
  const size_t b = l->batch_, len = l->length_;
  const size_t most = Aligned(b * (len + 1) * DTypeSize(l->dtype_)) + Aligned(b * 8) +
                      Aligned(b * len * 8) + Aligned((b * len + 1) * 4);
  RF_ASSIGN_OR_RETURN(l->pool_, l->device_->MakePool(most, l->batch_, spec.output_buffers));
  l->narrow_on_host_ = l->device_->WidensSequences() || so.pack_narrow;
  if (l->narrow_on_host_) {
    // The narrowest ids that hold every source's and the end-of-document token.
    DType n = DType::kUInt16;
    for (const auto& s : l->sources_) {
      if (s->stored == DType::kInt64) {
        n = DType::kInt64;
      } else if (s->stored == DType::kInt32 && n == DType::kUInt16) {
        n = DType::kInt32;
      }
    }
    if (so.eod_token > std::numeric_limits<uint16_t>::max() && n == DType::kUInt16)
      n = DType::kInt32;
    if (so.eod_token > std::numeric_limits<int32_t>::max()) n = DType::kInt64;
    l->narrow_ = n;
    l->narrow_bytes_ =
        Aligned(b * (len + 1) * DTypeSize(n)) + Aligned(b * 8) + Aligned((b * len + 1) * 4);
    for (HostBuffer& h : l->host_) {
      RF_ASSIGN_OR_RETURN(h, l->device_->HostArea(l->narrow_bytes_));
    }
  }
  const uint32_t threads = so.pack_threads != 0 ? so.pack_threads : DefaultPackThreads();
  l->packer_ = std::make_unique<Packer>(threads);
  for (auto& s : l->sources_) s->packer = l->packer_.get();
  l->Start();
  return l;
}

namespace {

// A batch's layout in its buffer: tokens, lengths, position_ids, cu_seqlens (each aligned); and
// in a GPU's pinned slot: the narrow tokens, lengths, cu_seqlens.
struct BatchLayout {
  size_t lengths_at, positions_at, cu_at;
  BatchLayout(uint64_t rows, uint64_t length, DType dtype)
      : lengths_at(Aligned(rows * (length + 1) * DTypeSize(dtype))),
        positions_at(lengths_at + Aligned(rows * 8)),
        cu_at(positions_at + Aligned(rows * length * 8)) {}
};
struct NarrowLayout {
  size_t lengths_at, cu_at;
  NarrowLayout(uint64_t rows, uint64_t length, DType narrow)
      : lengths_at(Aligned(rows * (length + 1) * DTypeSize(narrow))),
        cu_at(lengths_at + Aligned(rows * 8)) {}
};

}  // namespace

Status SequenceLoader::Pack(Packed* p) {
  const bool mixture = !weights_.empty();
  Source& single = *sources_[0];
  const uint64_t rows =
      mixture ? batch_ : std::min<uint64_t>(batch_, single.slice.rows - single.st.position);
  p->epoch = single.st.epoch;
  p->position = single.st.position;
  if (!mixture && ended_) {
    ended_ = false;
    p->end = true;
    return Status::Ok();
  }
  const size_t row = length_ + 1;
  uint8_t* base = nullptr;
  int64_t* lengths = nullptr;
  int32_t* cu = nullptr;
  int64_t* positions = nullptr;
  if (narrow_on_host_) {
    // Packed narrow in a pinned slot, widened on the device. The slot's last batch must have been
    // put (its copy queued) and its copy done before it is written again.
    p->slot = static_cast<uint32_t>(packed_ % LoaderDevice::kPutSlots);
    if (packed_ >= LoaderDevice::kPutSlots) {
      std::unique_lock<std::mutex> lock(mu_);
      room_.wait(lock, [&] { return stop_ || putted_ + LoaderDevice::kPutSlots > packed_; });
      if (stop_) return Status::Aborted("the loader stopped");
    }
    RF_RETURN_IF_ERROR(device_->WaitPut(p->slot));
    base = host_[p->slot].data();
    const NarrowLayout at(rows, length_, narrow_);
    lengths = reinterpret_cast<int64_t*>(base + at.lengths_at);
    cu = reinterpret_cast<int32_t*>(base + at.cu_at);
    packer_->Begin(base, narrow_, row, options_.sequence.eod_token);
  } else {
    // Host memory: packed whole, in place in the batch's buffer.
    RF_ASSIGN_OR_RETURN(p->out,
                        pool_->Acquire(static_cast<uint32_t>(rows), dtype_,
                                       {static_cast<int64_t>(rows), static_cast<int64_t>(row)}));
    base = static_cast<uint8_t*>(p->out->samples());
    const BatchLayout at(rows, length_, dtype_);
    lengths = reinterpret_cast<int64_t*>(base + at.lengths_at);
    cu = reinterpret_cast<int32_t*>(base + at.cu_at);
    positions = reinterpret_cast<int64_t*>(base + at.positions_at);
    packer_->Begin(base, dtype_, row, options_.sequence.eod_token);
  }
  size_t segments = 0;
  row_segments_.clear();
  // rows_ never wraps (the rule's k would go back to 0): a state counts at most 2^64 - 1 rows.
  if (rows_ > std::numeric_limits<uint64_t>::max() - rows)
    return Status::Usage("the loader has handed out " + std::to_string(rows_) + " rows, and " +
                         std::to_string(rows) + " more would pass the most its state counts, " +
                         "2^64 - 1");
  for (uint64_t r = 0; r < rows; ++r) {
    const size_t i =
        mixture ? MixtureSource(weights_, options_.pipeline.order.seed, rows_, drawn_) : 0;
    Source& s = *sources_[i];
    starts_.clear();
    uint64_t valid = 0;
    packer_->BeginRow();
    const Status st = s.Row(packer_.get(), r * row, &valid, &starts_);
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
    uint64_t seg_start = 0;
    row_segments_.push_back(segments);
    cu[segments++] = row_base;
    for (uint32_t q : starts_) {
      if (q == 0 || q >= inputs) continue;
      cu[segments++] = row_base + static_cast<int32_t>(q);
      seg_start = q;
    }
    if (inputs < length_ && inputs > seg_start)
      cu[segments++] = row_base + static_cast<int32_t>(inputs);
  }
  cu[segments] = static_cast<int32_t>(rows * length_);
  row_segments_.push_back(segments);
  if (!mixture && single.EpochDone()) {
    single.NextEpoch();
    ended_ = true;
  }
  packer_->Finish(rows, lengths, cu, row_segments_, positions, options_.sequence.pad_token);
  p->rows = rows;
  p->segments = segments;
  if (narrow_on_host_) {
    ++packed_;
    p->slotted = true;
  }
  return Status::Ok();
}

void SequenceLoader::SetViews(LoadedBatch& b, uint64_t rows, uint64_t segments) const {
  auto* dst = static_cast<uint8_t*>(b.samples());
  const BatchLayout at(rows, length_, dtype_);
  const auto n = static_cast<int64_t>(rows), l = static_cast<int64_t>(length_);
  b.SetViews({
      {dst, dtype_, {n, l + 1}},
      {dst + at.lengths_at, DType::kInt64, {n}},
      {dst + at.cu_at, DType::kInt32, {static_cast<int64_t>(segments) + 1}},
      {dst + at.positions_at, DType::kInt64, {n, l}},
  });
}

Result<std::shared_ptr<LoadedBatch>> SequenceLoader::Put(Packed& p) {
  if (!p.error.ok()) return p.error;
  if (p.end) return std::shared_ptr<LoadedBatch>();
  std::shared_ptr<LoadedBatch> out = std::move(p.out);
  if (narrow_on_host_) {
    RF_ASSIGN_OR_RETURN(
        out, pool_->Acquire(static_cast<uint32_t>(p.rows), dtype_,
                            {static_cast<int64_t>(p.rows), static_cast<int64_t>(length_) + 1}));
    auto* dst = static_cast<uint8_t*>(out->samples());
    const BatchLayout at(p.rows, length_, dtype_);
    const NarrowLayout narrow(p.rows, length_, narrow_);
    LoaderDevice::SequencePut put;
    put.host = host_[p.slot].data();
    put.bytes = narrow.cu_at + (p.segments + 1) * sizeof(int32_t);
    put.lengths_at = narrow.lengths_at;
    put.cu_at = narrow.cu_at;
    put.capacity = narrow_bytes_;
    put.narrow_bytes = static_cast<uint32_t>(DTypeSize(narrow_));
    put.rows = p.rows;
    put.row = length_ + 1;
    put.segments = p.segments;
    put.out_int32 = dtype_ == DType::kInt32;
    put.pad = options_.sequence.pad_token;
    put.tokens = dst;
    put.lengths = reinterpret_cast<int64_t*>(dst + at.lengths_at);
    put.cu = reinterpret_cast<int32_t*>(dst + at.cu_at);
    put.positions = reinterpret_cast<int64_t*>(dst + at.positions_at);
    RF_RETURN_IF_ERROR(device_->PutSequencesAsync(put, p.slot));
  }
  SetViews(*out, p.rows, p.segments);
  out->SetPlace(p.epoch, p.position);
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
  // Checked whole before anything changes: a refused state leaves the loader as it was. A state
  // no loader reaches is refused: one source's draws are its rows; a mixture's are the rule's
  // (mixture.h), and a dataset of it whose epoch is over has moved on to its next (Pack).
  const bool mixture = !weights_.empty();
  if (mixture) {
    RF_RETURN_IF_ERROR(CheckMixtureDraws(weights_, s.rows, s.drawn, "rows"));
  } else if (s.drawn[0] != s.rows) {
    return Status::Usage("the state's draws sum to " + std::to_string(s.drawn[0]) + ", not its " +
                         std::to_string(s.rows) + " rows");
  }
  for (size_t i = 0; i < sources_.size(); ++i) {
    const SequenceSourceState& g = s.sources[i];
    const std::string named = "the state's dataset " + std::to_string(i);
    if (g.epoch > kMaxEpoch)
      return Status::Usage(named + " is at epoch " + std::to_string(g.epoch) +
                           ", past the most an epoch counts to, " + std::to_string(kMaxEpoch));
    const uint64_t total = sources_[i]->plan->epoch_sequences();
    uint64_t last = 0;
    for (const SequenceRange& r : g.list) {
      if (r.begin >= r.end || r.begin < last || r.end > total)
        return Status::Usage("the state's dataset " + std::to_string(i) + " lists sequences [" +
                             std::to_string(r.begin) + ", " + std::to_string(r.end) +
                             "), not ascending ranges within its epoch's " + std::to_string(total));
      last = r.end;
    }
    if (g.position > RowsOf(g, i) || (mixture && g.position == RowsOf(g, i)))
      return Status::Usage(named + " is at row " + std::to_string(g.position) + " of an epoch of " +
                           std::to_string(RowsOf(g, i)) + " rows a rank" +
                           (mixture ? " (a mixture's dataset goes on into its next epoch at the "
                                      "row that ends one)"
                                    : ""));
    // One source hands out whole batches of its epoch (the last one ends it).
    if (!mixture && g.position % batch_ != 0 && g.position != RowsOf(g, i))
      return Status::Usage(named + " is at row " + std::to_string(g.position) +
                           ", no batch boundary (a multiple of batch_size " +
                           std::to_string(batch_) + ", or its epoch's end, row " +
                           std::to_string(RowsOf(g, i)) + ")");
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
    const StreamingSource& r = *s->records;
    out.bytes_read += r.bytes_read();
    out.bytes_delivered += r.bytes_delivered();
    out.decode_busy_seconds += r.decode_busy_seconds();
    out.decode_threads += r.decode_threads();
    out.wait_seconds += r.wait_seconds();
    out.reader_held_seconds += r.reader_held_seconds();
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
  const std::string packing = std::to_string(packer_->threads()) + " packing thread(s)" +
                              (device_->WidensSequences() ? ", " + std::string(DTypeName(narrow_)) +
                                                                " ids widened on the device"
                                                          : std::string());
  return device_->Describe() + ", packed sequences of " + std::to_string(length_) + " from " +
         std::to_string(sources_.size()) + " dataset(s) (" + packing + "), " +
         sources_[0]->records->Describe();
}

}  // namespace rf
