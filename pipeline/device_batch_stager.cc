#include "pipeline/device_batch_stager.h"

#include <cstring>
#include <string>

#include "cuda/check.h"

namespace rf {

Result<std::unique_ptr<DeviceBatchStager>> DeviceBatchStager::Create(BatchSource& host,
                                                                     uint32_t max_batch,
                                                                     size_t sample_bytes,
                                                                     size_t label_bytes,
                                                                     cudaStream_t stream) {
  if (max_batch == 0 || sample_bytes == 0 || label_bytes == 0) {
    return Status::InvalidArgument("the device batch stager needs a batch, sample and label size");
  }
  std::unique_ptr<DeviceBatchStager> s(
      new DeviceBatchStager(host, sample_bytes, label_bytes, stream));
  const size_t samples = size_t{max_batch} * sample_bytes, labels = size_t{max_batch} * label_bytes;
  for (Buffers& b : s->buffers_) {
    RF_ASSIGN_OR_RETURN(b.pinned_samples, cuda::PinnedBuffer::Allocate(samples, "batch staging"));
    RF_ASSIGN_OR_RETURN(b.pinned_labels, cuda::PinnedBuffer::Allocate(labels, "label staging"));
    RF_ASSIGN_OR_RETURN(b.samples, cuda::DeviceBuffer::Allocate(samples, "a device batch"));
    RF_ASSIGN_OR_RETURN(b.labels, cuda::DeviceBuffer::Allocate(labels, "device labels"));
    RF_ASSIGN_OR_RETURN(b.done, cuda::CreateEvent(/*timing=*/false));
  }
  return s;
}

DeviceBatchStager::~DeviceBatchStager() {
  // The stream may still be reading the buffers freed after this.
  for (Buffers& b : buffers_) {
    if (b.in_flight) (void)cudaEventSynchronize(b.done.get());
  }
  (void)cudaStreamSynchronize(stream_);
}

Result<Batch> DeviceBatchStager::Next() {
  if (handed_out_ >= 0) {
    // Everything queued so far includes the consumer's work on the batch it holds.
    Buffers& held = buffers_[handed_out_];
    RF_CUDA_CHECK(cudaEventRecord(held.done.get(), stream_));
    held.in_flight = true;
    handed_out_ = -1;
  }
  RF_ASSIGN_OR_RETURN(Batch h, host_.Next());
  if (h.n == 0) return h;
  Buffers& b = buffers_[next_];
  if (b.in_flight) RF_CUDA_CHECK(cudaEventSynchronize(b.done.get()));  // step k-2 is done
  b.in_flight = false;
  const size_t samples = size_t{h.n} * sample_bytes_, labels = size_t{h.n} * label_bytes_;
  if (samples > b.samples.bytes() || labels > b.labels.bytes()) {
    return Status::InvalidArgument("a batch of " + std::to_string(h.n) +
                                   " samples is larger than the device batch stager's buffers");
  }
  std::memcpy(b.pinned_samples.as<uint8_t>(), h.samples, samples);
  std::memcpy(b.pinned_labels.as<uint8_t>(), h.labels, labels);
  RF_CUDA_CHECK(cudaMemcpyAsync(b.samples.data(), b.pinned_samples.as<uint8_t>(), samples,
                                cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaMemcpyAsync(b.labels.data(), b.pinned_labels.as<uint8_t>(), labels,
                                cudaMemcpyHostToDevice, stream_));
  handed_out_ = next_;
  next_ ^= 1;
  h.samples = b.samples.data();
  h.labels = b.labels.data();
  return h;
}

}  // namespace rf
