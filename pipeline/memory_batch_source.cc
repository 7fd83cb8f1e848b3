#include "pipeline/memory_batch_source.h"

#include <algorithm>
#include <cstring>

#include "pipeline/epoch_order.h"

namespace rf {

Result<std::unique_ptr<MemoryBatchSource>> MemoryBatchSource::Load(
    const Dataset& d, const BatchSourceOptions& options) {
  if (options.batch_size == 0) return Status::InvalidArgument("batch size must be at least 1");
  std::unique_ptr<MemoryBatchSource> s(new MemoryBatchSource());
  const format::Header& h = d.header();
  s->opts_ = options;
  s->count_ = d.sample_count();
  s->sample_bytes_ = h.SampleBytes();
  s->label_bytes_ = h.LabelBytes();
  s->sample_dtype_ = h.sample_dtype;
  s->label_dtype_ = h.label_dtype;
  s->samples_.resize(s->count_ * s->sample_bytes_);
  s->labels_.resize(s->count_ * s->label_bytes_);
  std::vector<uint8_t> chunk(d.max_chunk_bytes());
  for (size_t g = 0; g < d.chunk_count(); ++g) {
    RF_RETURN_IF_ERROR(d.ReadChunk(g, chunk.data()));
    const format::ChunkEntry& e = d.chunk(g).entry;
    std::memcpy(s->samples_.data() + e.first_sample * s->sample_bytes_, chunk.data(),
                e.sample_count * s->sample_bytes_);
    std::memcpy(s->labels_.data() + e.first_sample * s->label_bytes_,
                chunk.data() + d.LabelsOffset(g), e.sample_count * s->label_bytes_);
  }
  s->batch_samples_.resize(size_t{options.batch_size} * s->sample_bytes_);
  s->batch_labels_.resize(size_t{options.batch_size} * s->label_bytes_);
  s->position_ = s->epoch_samples();  // no epoch started: Next() returns end of epoch
  return s;
}

uint64_t MemoryBatchSource::epoch_samples() const {
  return EpochSamples(count_, opts_.batch_size, opts_.drop_last);
}

Status MemoryBatchSource::StartEpoch(uint64_t epoch, uint64_t position) {
  RF_RETURN_IF_ERROR(CheckEpochPosition(position, epoch_samples()));
  if (opts_.shuffle) order_ = EpochOrder(count_, opts_.seed, epoch);
  position_ = position;
  return Status::Ok();
}

Result<Batch> MemoryBatchSource::Next() {
  Batch b;
  b.sample_dtype = sample_dtype_;
  b.label_dtype = label_dtype_;
  b.samples = batch_samples_.data();
  b.labels = batch_labels_.data();
  b.n = BatchSizeAt(position_, opts_.batch_size, epoch_samples());
  for (uint32_t i = 0; i < b.n; ++i) {
    const uint64_t at = position_ + i;
    const uint64_t s = order_.empty() ? at : order_[at];
    std::memcpy(batch_samples_.data() + i * sample_bytes_, samples_.data() + s * sample_bytes_,
                sample_bytes_);
    std::memcpy(batch_labels_.data() + i * label_bytes_, labels_.data() + s * label_bytes_,
                label_bytes_);
  }
  position_ += b.n;
  return b;
}

}  // namespace rf
