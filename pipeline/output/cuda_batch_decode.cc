#include "pipeline/output/cuda_batch_decode.h"

#include <string>
#include <vector>

#include "cuda/augment_transforms.cuh"
#include "cuda/check.h"
#include "decode/dtypes.h"
#include "decode/gpu_decode.cuh"

namespace rf {

Result<std::unique_ptr<CudaBatchDecoder>> CudaBatchDecoder::Create(const DecodeSpec& spec,
                                                                   uint32_t max_batch) {
  RF_RETURN_IF_ERROR(spec.Validate());
  if (max_batch == 0) return Status::InvalidArgument("a batch decode needs max_batch >= 1");
  std::unique_ptr<CudaBatchDecoder> d(new CudaBatchDecoder);
  d->spec_ = spec;
  d->max_batch_ = max_batch;
  if (spec.augment.enabled()) {
    RF_ASSIGN_OR_RETURN(d->transforms_,
                        cuda::DeviceBuffer::Allocate(size_t{max_batch} * sizeof(SampleTransform),
                                                     "augmentation transforms"));
  }
  if (spec.normalize) {
    std::vector<float> norm(spec.mean.begin(), spec.mean.end());
    norm.insert(norm.end(), spec.stddev.begin(), spec.stddev.end());
    const size_t bytes = norm.size() * sizeof(float);
    RF_ASSIGN_OR_RETURN(d->norm_,
                        cuda::DeviceBuffer::Allocate(bytes, "the decode's means and stddevs"));
    RF_CUDA_CHECK(cudaMemcpy(d->norm_.data(), norm.data(), bytes, cudaMemcpyHostToDevice));
  }
  return d;
}

Status CudaBatchDecoder::Decode(const void* stored, const void* labels, DType label_dtype,
                                uint32_t n, void* out, int64_t* labels_out, cudaStream_t stream,
                                const AugmentBatch& augment) const {
  if (n == 0) return Status::Ok();
  if (!decode::VisitDType(decode::IntegerDTypes{}, label_dtype, [](auto) {})) {
    return Status::InvalidArgument("cannot decode labels of dtype " +
                                   std::string(DTypeName(label_dtype)) + " (" +
                                   std::to_string(static_cast<uint32_t>(label_dtype)) + ")");
  }
  if (stored == nullptr || labels == nullptr || out == nullptr || labels_out == nullptr) {
    return Status::InvalidArgument("a batch decode needs its samples, labels and both outputs");
  }
  if (n > max_batch_) {
    return Status::InvalidArgument("a batch of " + std::to_string(n) +
                                   " samples is larger than the decoder's " +
                                   std::to_string(max_batch_));
  }
  const uint64_t plane = uint64_t{spec_.height} * spec_.width;
  const uint64_t total = uint64_t{n} * spec_.channels * plane;
  if (total >= (uint64_t{1} << 31)) {
    return Status::InvalidArgument("a batch of " + std::to_string(total) +
                                   " elements is too large to decode (at most 2^31 - 1)");
  }
  decode::Plan plan = spec_.ToPlan();
  if (spec_.normalize) plan.stats = {norm_.as<float>(), norm_.as<float>() + spec_.channels};
  AugmentBatch a = augment;
  // Without the buffer (augmentation the spec does not have), each element draws its own.
  if (transforms_.data() != nullptr) {
    RF_CUDA_CHECK(cuda::DrawBatchTransforms(&a, n, spec_.height, spec_.width,
                                            transforms_.as<SampleTransform>(), stream));
  }
  // One launch for the samples and their labels (a driver call less a batch beside the model's).
  RF_CUDA_CHECK(
      decode::DecodeOnGpu(plan, stored, n, out, a, stream, {label_dtype, labels, labels_out}));
  return Status::Ok();
}

}  // namespace rf
