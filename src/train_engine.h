// TrainEngine: the backend `ringfeed train` computes with, chosen once from --device, and the
// batch sources adapted to that backend's memory (host batches as they are for the CPU backend;
// device copies through a DeviceBatchStager for the CUDA backend). The training loop sees only
// Backend and BatchSource.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "pipeline/batch_source.h"

namespace rf {

struct EngineOptions {
  std::string device = "auto";  // auto (CUDA where a GPU is found), cuda, cpu
  // CUDA: "bf16" (bf16 conv blocks on the tensor cores, float32 elsewhere: kernels/
  // cuda_backend.h), "tf32" (float32 with TF32 tensor-core math) or "fp32" (full float32).
  std::string precision = "bf16";
  bool cuda_graph = true;  // CUDA: replay each full batch's forward + backward as a CUDA graph
};

struct EngineInputs {
  ModelConfig config;
  Normalization norm;
  uint32_t max_batch = 0;
  size_t sample_bytes = 0, label_bytes = 0;
  BatchSource* train = nullptr;  // host batches; must outlive the engine
  BatchSource* test = nullptr;   // optional
};

class TrainEngine {
 public:
  // InvalidArgument for an unknown --device, or cuda where this build or machine has none.
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineOptions& options,
                                                     const EngineInputs& in, const Tensors& params);
  virtual ~TrainEngine() = default;

  Backend& backend() { return *backend_; }
  BatchSource& train() { return *train_; }
  BatchSource* test() { return test_; }
  // One line: the backend, its device and math.
  const std::string& description() const { return description_; }
  // GPU memory this run holds (cudaMemGetInfo: free at start minus free now); 0 on the CPU.
  virtual uint64_t gpu_bytes() const { return 0; }

 protected:
  TrainEngine() = default;
  std::unique_ptr<Backend> backend_;
  BatchSource* train_ = nullptr;
  BatchSource* test_ = nullptr;
  std::string description_;
  std::vector<std::unique_ptr<BatchSource>> adapters_;  // declared after backend_: freed first
};

}  // namespace rf
