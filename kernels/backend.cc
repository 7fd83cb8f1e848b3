#include "kernels/backend.h"

#include <string>
#include <utility>
#include <vector>

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
  // A dataset's label dtypes, and int64: the library loader's decoded batches (decoded images).
  if (!IsIntegerDType(batch.label_dtype)) {
    return Status::InvalidArgument("labels of type " + std::string(DTypeName(batch.label_dtype)) +
                                   " are not a label type");
  }
  return Status::Ok();
}

namespace {

Status CheckAgainst(const std::vector<ParamShape>& shapes, const Tensors& t, const char* what) {
  if (t.t.size() != shapes.size()) {
    return Status::InvalidArgument(std::string(what) + " has " + std::to_string(t.t.size()) +
                                   " tensors; the model has " + std::to_string(shapes.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (t.t[i].size() != shapes[i].count()) {
      return Status::InvalidArgument(std::string(what) + " tensor " + shapes[i].name + " has " +
                                     std::to_string(t.t[i].size()) + " values; expected " +
                                     std::to_string(shapes[i].count()));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckShapes(const ModelConfig& c, const Tensors& t, const char* what) {
  return CheckAgainst(ParameterShapes(c), t, what);
}

Status CheckBackendInputs(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
                          const Tensors& initial_params, const char* backend) {
  RF_RETURN_IF_ERROR(config.Validate());
  if (max_batch == 0) {
    return Status::InvalidArgument(std::string("the ") + backend + " backend needs max_batch >= 1");
  }
  if (norm.mean.size() != config.channels || norm.stddev.size() != config.channels) {
    return Status::InvalidArgument("normalization has " + std::to_string(norm.mean.size()) +
                                   " means and " + std::to_string(norm.stddev.size()) +
                                   " stds; the input has " + std::to_string(config.channels) +
                                   " channels");
  }
  return CheckShapes(config, initial_params, "initial parameters");
}

Status CheckRunningStatShapes(const ModelConfig& c, const Tensors& t) {
  return CheckAgainst(RunningStatShapes(c), t, "batch norm statistics");
}

Result<size_t> CheckStateShapes(const ModelConfig& c, const Tensors& state) {
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  const size_t slots = state.t.size() / shapes.size();
  if (state.t.size() % shapes.size() != 0 || slots < 1 || slots > kMaxOptimizerSlots) {
    return Status::InvalidArgument("optimizer state has " + std::to_string(state.t.size()) +
                                   " tensors; the model's optimizers keep 1 or " +
                                   std::to_string(kMaxOptimizerSlots) + " per parameter tensor (" +
                                   std::to_string(shapes.size()) + ")");
  }
  for (size_t slot = 0; slot < slots; ++slot) {
    Tensors one;
    one.t.assign(state.t.begin() + slot * shapes.size(),
                 state.t.begin() + (slot + 1) * shapes.size());
    RF_RETURN_IF_ERROR(CheckShapes(c, one, "optimizer state"));
  }
  return slots;
}

Tensors OptimizerStateZeros(const ModelConfig& c, OptimizerKind kind) {
  Tensors t;
  for (size_t slot = 0; slot < OptimizerSlots(kind); ++slot) {
    for (auto& z : ZerosLike(c).t) t.t.push_back(std::move(z));
  }
  return t;
}

Status NonFiniteLossError(const std::string& when) {
  return Status::Aborted(
      "the training loss or its gradient is not finite (NaN or infinite), " + when +
      ": the run diverged; that batch changed no parameters. Lower --lr, or look for extreme "
      "values in the data");
}

}  // namespace rf
