// TrainEngine: the backend `ringfeed train` computes with, chosen once from --device, and the
// batch sources in that backend's memory:
//   training  streaming mode: a StreamingSource staging chunks where the backend computes (host
//             memory for the CPU backend; device memory and copy streams for the CUDA one);
//             managed mode (GPU only): a ManagedSource over one cudaMallocManaged allocation
//   test      an in-memory source (the test split is small), through a DeviceBatchStager on the
//             GPU
// The training loop sees only Backend and BatchSource.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "kernels/backend.h"
#include "pipeline/batch_source.h"
#include "pipeline/managed_source.h"
#include "pipeline/streaming_source.h"

namespace rf {

struct EngineOptions {
  std::string device = "auto";  // auto (CUDA where a GPU is found), cuda, cpu
  // CUDA: "bf16" (bf16 conv blocks on the tensor cores, float32 elsewhere: kernels/
  // cuda_backend.h), "tf32" (float32 with TF32 tensor-core math) or "fp32" (full float32).
  std::string precision = "bf16";
  bool cuda_graph = true;     // CUDA: replay each full batch's forward + backward as a CUDA graph
  uint32_t copy_streams = 2;  // CUDA: host-to-device copy streams of the streaming mode
  std::string mode = "streaming";  // or "managed"
};

struct EngineInputs {
  ModelConfig config;
  Normalization norm;
  uint32_t max_batch = 0;
  const Dataset* train = nullptr;  // must outlive the engine
  StreamingOptions streaming;
  ManagedOptions managed;
  BatchSource* test = nullptr;  // host batches, optional; must outlive the engine
  size_t sample_bytes = 0, label_bytes = 0;
};

class TrainEngine {
 public:
  // InvalidArgument for an unknown --device or precision, or cuda where this build or machine
  // has none.
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineOptions& options,
                                                     const EngineInputs& in, const Tensors& params);
  virtual ~TrainEngine() = default;

  Backend& backend() { return *backend_; }
  TrainingSource& train() { return *train_; }
  BatchSource* test() { return test_; }
  // One line: the backend, its device and math.
  const std::string& description() const { return description_; }
  // GPU memory this run holds (cudaMemGetInfo: free at start minus free now); 0 on the CPU.
  virtual uint64_t gpu_bytes() const { return 0; }

 protected:
  TrainEngine() = default;
  // The training source, staged by `make_staging`; the test source as `test` (or null).
  Status MakeSources(const EngineInputs& in, const StagingFactory& make_staging, BatchSource* test);

  std::unique_ptr<Backend> backend_;
  std::string description_;
  // Declared after backend_, so freed first: they may have work queued on its stream.
  std::unique_ptr<TrainingSource> train_;
  BatchSource* test_ = nullptr;
  std::unique_ptr<BatchSource> test_adapter_;
};

}  // namespace rf
