#include "pipeline/chunk_staging.h"

#include <cstring>
#include <string>

namespace rf {

Result<std::unique_ptr<HostChunkStaging>> HostChunkStaging::Create(const StagingLayout& layout) {
  if (layout.slots == 0 || layout.slot_bytes == 0 || layout.max_batch == 0) {
    return Status::InvalidArgument("chunk staging needs slots, a slot size and a batch size");
  }
  std::unique_ptr<HostChunkStaging> s(new HostChunkStaging());
  s->layout_ = layout;
  RF_ASSIGN_OR_RETURN(
      s->area_, HostBuffer::Allocate(uint64_t{layout.slots} * layout.slot_bytes, PinMode::kOff));
  s->samples_.reset(new uint8_t[size_t{layout.max_batch} * layout.sample_bytes]);
  s->labels_.reset(new uint8_t[size_t{layout.max_batch} * layout.label_bytes]);
  return s;
}

Status HostChunkStaging::CopyIn(uint32_t slot, const uint8_t* src, size_t bytes, ReleaseFn release,
                                void* arg) {
  if (slot >= layout_.slots || bytes > layout_.slot_bytes) {
    return Status::InvalidArgument("chunk of " + std::to_string(bytes) +
                                   " bytes does not fit staging slot " + std::to_string(slot));
  }
  std::memcpy(area_.data() + slot * layout_.slot_bytes, src, bytes);
  release(arg);
  return Status::Ok();
}

Result<Batch> HostChunkStaging::Gather(const SampleRef* refs, const uint64_t* indices, uint32_t n) {
  if (n > layout_.max_batch) return Status::InvalidArgument("batch larger than the staging's");
  const uint8_t* area = area_.data();
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(samples_.get() + i * layout_.sample_bytes, area + refs[i].sample_offset,
                layout_.sample_bytes);
    std::memcpy(labels_.get() + i * layout_.label_bytes, area + refs[i].label_offset,
                layout_.label_bytes);
  }
  Batch b = layout_.BatchAt(samples_.get(), labels_.get(), n);
  b.sample_indices = indices;  // host memory already, valid until the next Gather (the contract)
  return b;
}

}  // namespace rf
