#include "src/train_engine.h"

#include "kernels/cpu_backend.h"
#include "pipeline/host_buffer.h"
#if RINGFEED_CUDA_BACKEND
#include "kernels/cuda_backend.h"
#include "kernels/cuda_check.h"
#include "pipeline/device_batch_stager.h"
#endif

namespace rf {
namespace {

class CpuEngine final : public TrainEngine {
 public:
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineInputs& in,
                                                     const Tensors& params) {
    std::unique_ptr<CpuEngine> e(new CpuEngine);
    RF_ASSIGN_OR_RETURN(e->backend_, CpuBackend::Create(in.config, in.norm, in.max_batch, params));
    e->train_ = in.train;
    e->test_ = in.test;
    e->description_ = "cpu (im2col + OpenBLAS sgemm)";
    return std::unique_ptr<TrainEngine>(std::move(e));
  }
};

#if RINGFEED_CUDA_BACKEND
class CudaEngine final : public TrainEngine {
 public:
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineOptions& o, const EngineInputs& in,
                                                     const Tensors& params) {
    std::unique_ptr<CudaEngine> e(new CudaEngine);
    RF_CUDA_CHECK(cudaSetDevice(0));
    size_t total = 0;
    RF_CUDA_CHECK(cudaMemGetInfo(&e->free_at_start_, &total));
    CudaBackendOptions bo;
    bo.tf32 = o.precision != "fp32";
    bo.bf16 = o.precision == "bf16";
    bo.cuda_graph = o.cuda_graph;
    RF_ASSIGN_OR_RETURN(auto backend,
                        CudaBackend::Create(in.config, in.norm, in.max_batch, params, bo));
    const cudaStream_t stream = backend->stream();
    e->description_ = backend->Describe();
    e->backend_ = std::move(backend);
    for (BatchSource* host : {in.train, in.test}) {
      if (host == nullptr) continue;
      RF_ASSIGN_OR_RETURN(
          auto stager,
          DeviceBatchStager::Create(*host, in.max_batch, in.sample_bytes, in.label_bytes, stream));
      (host == in.train ? e->train_ : e->test_) = stager.get();
      e->adapters_.push_back(std::move(stager));
    }
    return std::unique_ptr<TrainEngine>(std::move(e));
  }

  uint64_t gpu_bytes() const override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    return free_at_start_ > free ? free_at_start_ - free : 0;
  }

 private:
  size_t free_at_start_ = 0;
};
#endif

}  // namespace

Result<std::unique_ptr<TrainEngine>> TrainEngine::Create(const EngineOptions& o,
                                                         const EngineInputs& in,
                                                         const Tensors& params) {
  if (o.device != "auto" && o.device != "cuda" && o.device != "cpu") {
    return Status::InvalidArgument("--device must be auto, cuda or cpu, got \"" + o.device + "\"");
  }
  if (o.precision != "tf32" && o.precision != "fp32" && o.precision != "bf16") {
    return Status::InvalidArgument("--precision must be bf16, tf32 or fp32, got \"" + o.precision +
                                   "\"");
  }
#if RINGFEED_CUDA_BACKEND
  if (o.device == "cuda" || (o.device == "auto" && CudaDevicePresent())) {
    if (!CudaDevicePresent()) return Status::InvalidArgument("--device cuda: no CUDA device found");
    return CudaEngine::Create(o, in, params);
  }
#else
  if (o.device == "cuda") {
    return Status::InvalidArgument("--device cuda: this build has no CUDA backend");
  }
#endif
  return CpuEngine::Create(in, params);
}

}  // namespace rf
