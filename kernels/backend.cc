#include "kernels/backend.h"

#include <string>

namespace rf {

Status CheckBatch(const Batch& batch, uint32_t max_batch, const char* backend) {
  if (batch.n == 0 || batch.n > max_batch) {
    return Status::InvalidArgument("batch of " + std::to_string(batch.n) + " samples; the " +
                                   backend + " backend takes 1 to " + std::to_string(max_batch));
  }
  if (batch.samples == nullptr || batch.labels == nullptr) {
    return Status::InvalidArgument("batch without samples or labels");
  }
  if (!IsImageDType(batch.sample_dtype)) {
    return Status::InvalidArgument("samples of type " + std::string(DTypeName(batch.sample_dtype)) +
                                   " are not one the model reads (uint8, float16, bfloat16, "
                                   "float32)");
  }
  if (!IsLabelDType(batch.label_dtype)) {
    return Status::InvalidArgument("labels of type " + std::string(DTypeName(batch.label_dtype)) +
                                   " are not a label type");
  }
  return Status::Ok();
}

Status NonFiniteLossError(const std::string& when) {
  return Status::Aborted(
      "the training loss or its gradient is not finite (NaN or infinite), " + when +
      ": the run diverged; that batch changed no parameters. Lower --lr, or look for extreme "
      "values in the data");
}

}  // namespace rf
