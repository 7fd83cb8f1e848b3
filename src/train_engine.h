// TrainEngine: the backend `ringfeed train` computes with, chosen once from --device, and the
// batch sources in that backend's memory:
//   training  the library's Loader (pipeline/loader.h) on the backend's device and stream, at its
//             raw level: streaming mode stages chunks where the backend computes (host memory for
//             the CPU backend; device memory and copy streams for the CUDA one); managed mode (GPU
//             only) gathers from one cudaMallocManaged allocation; a mixture of datasets
//             (--weights) streams each and gathers the batch from them
//             (pipeline/sources/mixed_source.h)
//   test      a second Loader at its raw level over the test split, on the same device and stream:
//             streamed in stored order as training streams (the test split need not fit in
//             memory), in streaming mode whatever the training mode
// The training loop sees only Backend and BatchSource. The mode, device and precision are chosen
// here, once, from the run's TrainConfig (--mode, --device, --gpu, --precision, --cuda-graph,
// --augment).
//
// Data-parallel (a World of more than one rank): the engine gives the backend its gradient
// reducer (parallel/): NCCL on the rank's GPU for the CUDA backend, the World's MPI collectives for
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
#include "pipeline/loader.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/pipeline_config.h"
#include "src/train_config.h"

namespace rf {

// What the run has opened: the model, its input normalization, the datasets and the ranks.
struct EngineInputs {
  ModelConfig config;
  Normalization norm;
  const Dataset* train = nullptr;  // must outlive the engine
  // A mixture's datasets (c.pipeline.weights), train the first; each must outlive the engine.
  std::vector<const Dataset*> mixture;
  const Dataset* test = nullptr;  // the test split, optional; must outlive the engine
  // The job's ranks; null or a world of one: no gradient reduction. Must outlive the engine.
  World* world = nullptr;
};

class TrainEngine {
 public:
  // Usage where the config asks for a GPU this build or machine lacks (--device cuda, managed
  // mode), or a --gpu the machine does not have. `c` need not outlive the engine.
  static Result<std::unique_ptr<TrainEngine>> Create(const TrainConfig& c, const EngineInputs& in,
                                                     const Tensors& params);
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
  // `device`'s `gpu` (-1 on the host) and `stream` (a cudaStream_t; null on the host).
  Status MakeSources(const TrainConfig& c, const EngineInputs& in, DeviceKind device, int gpu,
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
