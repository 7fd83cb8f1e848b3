#include "pipeline/sequences/sequence_loader.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "core/clock.h"
#include "core/cpus.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/make_loader_device.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/sequences/sequence_packer.h"
#include "pipeline/sequences/sequence_source.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/streaming_source.h"

namespace rf {
namespace {

constexpr size_t kPartAlign = 64;

size_t Aligned(size_t n) { return (n + kPartAlign - 1) / kPartAlign * kPartAlign; }

}  // namespace

uint32_t DefaultPackThreads() {
  return std::clamp<uint32_t>(AvailableCpus() / LocalRanks() / 4, 1, 4);
}

SequenceLoader::~SequenceLoader() {
  Stop();
  sources_.clear();
  if (device_) (void)device_->Drain();
}

Result<std::unique_ptr<SequenceLoader>> SequenceLoader::Create(
    const std::vector<const Dataset*>& datasets, const SequenceSpec& spec, LoaderDevice* device) {
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
  for (const Dataset* d : datasets) {
    if (l->dtype_ == DType::kInt32 && d->header().sample_dtype == DType::kInt64)
      return Status::Usage("dtype int32: " + d->shard_path(0) +
                           " holds int64 ids, which int32 may not hold; use int64");
    RF_ASSIGN_OR_RETURN(
        std::unique_ptr<SequenceSource> s,
        SequenceSource::Make(*d, spec.pipeline, so.length, so.eod_token, so.pad, spec.epochs));
    l->sources_.push_back(std::move(s));
  }
  l->drawn_.assign(l->sources_.size(), 0);
  l->device_ = device;
  if (l->device_ == nullptr) {
    RF_ASSIGN_OR_RETURN(l->owned_device_,
                        MakeLoaderDevice(spec.pipeline.device, spec.gpu, spec.stream));
    l->device_ = l->owned_device_.get();
  }
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
  l->packer_ = std::make_unique<SequencePacker>(threads);
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
  SequenceSource& single = *sources_[0];
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
    SequenceSource& s = *sources_[i];
    starts_.clear();
    uint64_t valid = 0;
    packer_->BeginRow();
    const Status st = s.Row(packer_.get(), r * row, &valid, &starts_);
    if (!st.ok()) {
      s.tok = SequenceSource::kNowhere;  // the next try seeks afresh
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
  // The node partition numbers an epoch's sequences by its machines (sequence_plan.h): an epoch
  // begun at M machines goes on at M; at another M only an epoch not begun.
  const uint32_t node_ranks = options_.pipeline.order.node_ranks;
  for (size_t i = 0; i < sources_.size(); ++i) {
    const SequenceSourceState& g = s.sources[i];
    const uint32_t world = g.world_size == 0 ? sources_[i]->world : g.world_size;
    const uint32_t saved = SequencePlan::Machines(world, s.node_ranks);
    const uint32_t now = sources_[i]->plan->machines();
    const bool begun = g.position > 0 || !g.list.empty();
    if (saved != now && begun)
      return Status::Usage(
          "the state's dataset " + std::to_string(i) + " is within epoch " +
          std::to_string(g.epoch) + ", begun on " + std::to_string(saved) +
          " machine(s) (world_size " + std::to_string(world) + ", node_ranks " +
          std::to_string(s.node_ranks) + "), whose sequences this loader's " + std::to_string(now) +
          " (node_ranks " + std::to_string(node_ranks) + ") number otherwise: resume it with " +
          std::to_string(saved) +
          " machine(s) under the same partition, or from a state of an epoch's start");
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
    SequenceSource& src = *sources_[i];
    const uint32_t world = g.world_size == 0 ? src.world : g.world_size;
    if (world == src.world && SequencePlan::Machines(world, s.node_ranks) == src.plan->machines()) {
      src.Enter(g);
    } else {
      // Another world: what no old rank took, split over this run's ranks.
      src.Enter({g.epoch, 0, src.world, src.plan->Remaining(g.list, world, g.position)});
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
  return sources_[i]->plan->Rows(g.list, world);
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
