#include "pipeline/sources/managed_source.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/units.h"
#include "cuda/check.h"
#include "io/chunk_fetcher.h"
#include "io/file.h"

namespace rf {
namespace {

// MemAvailable from /proc/meminfo, in bytes (0 where it cannot be read).
uint64_t HostAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

}  // namespace

ManagedSource::ManagedSource(const Dataset& d, const ManagedOptions& o, WindowOrder order)
    : dataset_(d), options_(o), order_(std::move(order)), cursor_(order_), ahead_(order_) {}

ManagedSource::~ManagedSource() {
  if (compute_ != nullptr) (void)cudaStreamSynchronize(compute_);
  if (prefetch_stream_) (void)cudaStreamSynchronize(prefetch_stream_.get());
}

Result<std::unique_ptr<ManagedSource>> ManagedSource::Create(const Dataset& dataset,
                                                             const ManagedOptions& options,
                                                             cudaStream_t compute) {
  if (options.order.batch_size == 0)
    return Status::InvalidArgument("batch size must be at least 1");
  std::unique_ptr<ManagedSource> s(
      new ManagedSource(dataset, options, WindowOrder(dataset.ChunkSampleCounts(), options.order)));
  s->compute_ = compute;
  RF_CUDA_CHECK(cudaGetDevice(&s->device_));
  for (size_t g = 0; g < dataset.chunk_count(); ++g) {
    s->offset_.push_back(s->total_bytes_);
    s->total_bytes_ += dataset.chunk(g).entry.data_bytes;  // decompressed (format version 2)
  }
  // Safety first: a managed allocation past what the GPU has free can hang a shared GPU.
  size_t gpu_free = 0, gpu_total = 0;
  RF_CUDA_CHECK(cudaMemGetInfo(&gpu_free, &gpu_total));
  const uint64_t host_available = HostAvailableBytes();
  if (s->total_bytes_ > gpu_free && !options.oversubscribe) {
    return Status::InvalidArgument(
        "managed mode: " + dataset.shard_path(0) + " needs " + FormatBytes(s->total_bytes_) +
        " of managed memory and the GPU has " + FormatBytes(gpu_free) +
        " free; use --mode streaming, or --managed-oversubscribe to page it through GPU memory "
        "on purpose");
  }
  if (host_available != 0 && s->total_bytes_ > host_available) {
    return Status::InvalidArgument(
        "managed mode: " + dataset.shard_path(0) + " needs " + FormatBytes(s->total_bytes_) +
        " of managed memory and the host has " + FormatBytes(host_available) +
        " available; use --mode streaming");
  }
  RF_ASSIGN_OR_RETURN(s->data_, cuda::ManagedBuffer::Allocate(
                                    std::max<uint64_t>(s->total_bytes_, 1), "the dataset"));
  void* p = s->data_.data();
  RF_ASSIGN_OR_RETURN(s->prefetch_stream_, cuda::CreateStream());
  StagingLayout layout;
  layout.max_batch = options.order.batch_size;
  layout.sample_bytes = dataset.header().SampleBytes();
  layout.label_bytes = dataset.header().LabelBytes();
  layout.sample_dtype = dataset.header().sample_dtype;
  layout.label_dtype = dataset.header().label_dtype;
  RF_ASSIGN_OR_RETURN(CudaBatchGather gather, CudaBatchGather::Create(layout, compute));
  s->gather_ = std::make_unique<CudaBatchGather>(std::move(gather));
  s->refs_.resize(options.order.batch_size);
  s->prefetched_window_.assign(dataset.chunk_count(), 0);
  RF_RETURN_IF_ERROR(s->Load());
  if (options.advise) {
    const cudaMemLocation gpu{cudaMemLocationTypeDevice, s->device_};
    RF_CUDA_CHECK(cudaMemAdvise(p, s->total_bytes_, cudaMemAdviseSetReadMostly, gpu));
    RF_CUDA_CHECK(cudaMemAdvise(p, s->total_bytes_, cudaMemAdviseSetPreferredLocation, gpu));
    RF_CUDA_CHECK(cudaMemAdvise(p, s->total_bytes_, cudaMemAdviseSetAccessedBy, gpu));
  }
  return s;
}

Status ManagedSource::Load() {
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto work = [&] {
    auto fetcher = ChunkFetcher::Create(dataset_);  // this thread's files and codec contexts
    if (!fetcher.ok()) {
      std::lock_guard lock(mu);
      if (first_error.ok()) first_error = fetcher.status();
      return;
    }
    for (size_t g = next++; g < dataset_.chunk_count(); g = next++) {
      // Decompressed as it is loaded: the allocation holds the chunks' data.
      Status st = fetcher->Fetch(g, data_.as<uint8_t>() + offset_[g], options_.verify);
      if (!st.ok()) {
        std::lock_guard lock(mu);
        if (first_error.ok()) first_error = std::move(st);
        next = dataset_.chunk_count();  // the others stop at their next chunk
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < std::max<uint32_t>(1, options_.load_threads); ++i) {
    threads.emplace_back(work);
  }
  for (std::thread& t : threads) t.join();
  RF_RETURN_IF_ERROR(first_error);
  loaded_bytes_ = 0;  // what the disk gave: the stored extents
  for (size_t g = 0; g < dataset_.chunk_count(); ++g)
    loaded_bytes_ += dataset_.chunk(g).entry.stored_bytes;
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

std::string ManagedSource::Describe() const {
  return "managed: " + FormatBytes(total_bytes_) +
         " in one cudaMallocManaged allocation, loaded in " +
         std::to_string(load_seconds_).substr(0, 5) + " s (" +
         std::to_string(total_bytes_ / std::max(load_seconds_, 1e-9) / 1e9).substr(0, 5) +
         " GB/s)" + (options_.verify ? ", checksums verified" : "") +
         (order_.world_size() > 1 ? ", training rank " + std::to_string(order_.rank()) + " of " +
                                        std::to_string(order_.world_size()) + "'s part"
                                  : "") +
         (options_.advise ? ", advised read-mostly on the GPU" : "") +
         (options_.prefetch_batches
              ? ", prefetching " + std::to_string(options_.prefetch_batches) + " batches ahead"
              : "");
}

uint64_t ManagedSource::epoch_samples() const { return EpochSamplesOf(epoch_); }

uint64_t ManagedSource::EpochSamplesOf(uint64_t epoch) const {
  return EpochSamples(order_.EpochSampleCount(epoch), options_.order.batch_size,
                      options_.order.drop_last);
}

Status ManagedSource::StartEpoch(uint64_t epoch, uint64_t position) {
  RF_RETURN_IF_ERROR(CheckEpochHandedOut(epoch));
  RF_RETURN_IF_ERROR(CheckEpochPosition(position, EpochSamplesOf(epoch)));
  epoch_ = epoch;
  cursor_.Start(epoch, position);
  position_ = position;
  std::fill(prefetched_window_.begin(), prefetched_window_.end(), 0);
  ahead_ = cursor_;
  return PrefetchAhead(options_.prefetch_batches * options_.order.batch_size);
}

Status ManagedSource::PrefetchAhead(uint32_t samples) {
  if (options_.prefetch_batches == 0) return Status::Ok();
  WindowCursor::Sample s;
  for (uint32_t i = 0; i < samples && ahead_.Step(&s); ++i) {
    if (prefetched_window_[s.chunk] == ahead_.window() + 1) continue;
    prefetched_window_[s.chunk] = ahead_.window() + 1;
    const cudaMemLocation gpu{cudaMemLocationTypeDevice, device_};
    RF_CUDA_CHECK(cudaMemPrefetchAsync(data_.as<uint8_t>() + offset_[s.chunk],
                                       dataset_.chunk(s.chunk).entry.data_bytes, gpu, 0,
                                       prefetch_stream_.get()));
  }
  return Status::Ok();
}

Result<Batch> ManagedSource::Next() {
  batch_samples_.clear();
  const uint32_t n = BatchSizeAt(position_, options_.order.batch_size, epoch_samples());
  if (n == 0) return Batch{};
  WindowCursor::Sample s;
  for (uint32_t i = 0; i < n; ++i) {
    if (!cursor_.Step(&s)) return Status::Aborted("managed order ended early");
    refs_[i] = RefTo(dataset_, s.chunk, offset_[s.chunk], s.sample);
    batch_samples_.push_back(order_.GlobalSample(s.chunk, s.sample));
  }
  position_ += n;
  RF_RETURN_IF_ERROR(PrefetchAhead(n));
  RF_ASSIGN_OR_RETURN(Batch b,
                      gather_->Gather(data_.as<uint8_t>(), refs_.data(), batch_samples_.data(), n));
  b.epoch = epoch_;
  return b;
}

}  // namespace rf
