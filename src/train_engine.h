// TrainEngine: the backend `ringfeed train` computes with, chosen once from --device, and the
// batch sources in that backend's memory:
//   training  the library's Loader (pipeline/loader.h) on the backend's device and stream, at its
//             raw level: streaming mode stages chunks where the backend computes (host memory for
//             the CPU backend; device memory and copy streams for the CUDA one); managed mode (GPU
//             only) gathers from one cudaMallocManaged allocation
//   test      a second Loader at its raw level over the test split, on the same device and stream:
//             streamed in stored order as training streams (the test split need not fit in
//             memory), in streaming mode whatever the training mode
// The training loop sees only Backend and BatchSource. The mode, device and precision are chosen
// here, once, from EngineOptions.
//
// Data-parallel (a World of more than one rank): the engine gives the backend its gradient
// reducer (dist/): NCCL on the rank's GPU for the CUDA backend, the World's MPI collectives for
// the CPU one; the training loader reads the rank's part of every epoch (the pipeline config's
// rank and world size). The CPU backend of each rank uses its share of the machine's CPUs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "kernels/backend.h"
#include "parallel/world.h"
#include "pipeline/batch_source.h"
#include "pipeline/loader.h"
#include "pipeline/pipeline_config.h"

namespace rf {

// GPU math. kBf16: the conv blocks' activations and filters in bfloat16 on the tensor cores,
// float32 elsewhere (kernels/cuda_backend.h); kTf32: float32 with TF32 tensor-core products;
// kFp32: full float32.
enum class Precision { kBf16, kTf32, kFp32 };

// "bf16", "tf32", "fp32"; anything else is a Usage error naming --precision.
inline Result<Precision> ParsePrecision(const std::string& s) {
  if (s == "bf16") return Precision::kBf16;
  if (s == "tf32") return Precision::kTf32;
  if (s == "fp32") return Precision::kFp32;
  return Status::Usage("--precision must be bf16, tf32 or fp32, got \"" + s + "\"");
}
inline const char* PrecisionName(Precision p) {
  return p == Precision::kFp32 ? "fp32" : p == Precision::kTf32 ? "tf32" : "bf16";
}

// Made from a TrainConfig in one place (DeriveTrainComponents, src/train_config.h); the defaults
// of precision and cuda_graph are the config's.
struct EngineOptions {
  Precision precision = Precision::kBf16;  // CUDA only
  bool cuda_graph = true;  // CUDA: replay each full batch's forward + backward as a CUDA graph
  // Augmentation of the training batches (Backend::SetAugmentation), keyed by the loader's seed;
  // the test split is never augmented.
  AugmentParams augment;
  // The training data's pipeline (its device and mode choose the backend's): the library's
  // loader at its raw level (output_buffers 0: the backends decode the stored samples
  // themselves). Its batch size is the backend's largest batch.
  LoaderOptions loader;
  // CUDA: the GPU this rank computes on (an index into the visible devices); -1: the rank's
  // local rank modulo the visible devices.
  int gpu = -1;
  // The job's ranks; null or a world of one: no gradient reduction. Must outlive the engine.
  World* world = nullptr;
  // The test split's pipeline (its data, device, gpu and stream are the engine's to set): stored
  // order, every sample, one rank.
  LoaderOptions test;
};

// What the run has opened: the model, its input normalization, and the datasets.
struct EngineInputs {
  ModelConfig config;
  Normalization norm;
  const Dataset* train = nullptr;  // must outlive the engine
  const Dataset* test = nullptr;   // the test split, optional; must outlive the engine
};

class TrainEngine {
 public:
  // Usage where the options ask for a GPU this build or machine lacks (--device cuda, managed
  // mode).
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineOptions& options,
                                                     const EngineInputs& in, const Tensors& params);
  virtual ~TrainEngine() = default;

  Backend& backend() { return *backend_; }
  TrainingSource& train() { return loader_->source(); }
  BatchSource* test() { return test_; }
  // One line: the backend, its device and math.
  const std::string& description() const { return description_; }
  // GPU memory this run holds (cudaMemGetInfo: free at start minus free now); 0 on the CPU.
  virtual uint64_t gpu_bytes() const { return 0; }
  // Data-parallel: one line naming how gradients are reduced ("" on one rank).
  const std::string& reduction() const { return reduction_; }
  // The gradient reduction's asynchronous failure (NCCL's: a peer gone), without blocking, from
  // any thread; OK where there is none or it cannot fail that way.
  virtual Status CollectiveError() const { return Status::Ok(); }
  // Ends pending collectives (NCCL's kernels waiting for a peer) before the job is ended; any
  // thread.
  virtual void AbortCollectives() {}

 protected:
  TrainEngine() = default;
  // The training loader over `in.train` and the test loader over `in.test` (where given), on
  // `stream` (a cudaStream_t; null on the host).
  Status MakeSources(const EngineOptions& o, const EngineInputs& in, DeviceKind device,
                     void* stream);

  // Declared before backend_, so freed after it: the backend's queued steps use it.
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<Backend> backend_;
  std::string description_, reduction_;
  // Declared after backend_, so freed first: they may have work queued on its stream.
  std::unique_ptr<Loader> loader_;
  std::unique_ptr<Loader> test_loader_;
  BatchSource* test_ = nullptr;
};

}  // namespace rf
