#include "src/train_engine.h"

#include "cuda/device.h"
#include "kernels/cpu_backend.h"
#if RINGFEED_CUDA_BACKEND
#include "cuda/check.h"
#include "kernels/cuda_backend.h"
#include "pipeline/device_batch_stager.h"
#endif

namespace rf {

Status TrainEngine::MakeSources(const EngineOptions& o, const EngineInputs& in, DeviceKind device,
                                void* stream, BatchSource* test) {
  LoaderOptions lo = o.loader;
  lo.pipeline.device = device;
  lo.gpu = device == DeviceKind::kCuda ? 0 : -1;
  lo.stream = stream;
  lo.output_buffers = 0;  // the backends decode for themselves
  RF_ASSIGN_OR_RETURN(loader_, Loader::Create(*in.train, lo));
  test_ = test;
  return Status::Ok();
}

namespace {

class CpuEngine final : public TrainEngine {
 public:
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineOptions& o, const EngineInputs& in,
                                                     const Tensors& params) {
    std::unique_ptr<CpuEngine> e(new CpuEngine);
    RF_ASSIGN_OR_RETURN(
        e->backend_, CpuBackend::Create(in.config, in.norm, o.loader.pipeline.batch_size, params));
    e->description_ = "cpu (im2col + OpenBLAS sgemm)";
    RF_RETURN_IF_ERROR(e->MakeSources(o, in, DeviceKind::kCpu, nullptr, in.test));
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
    bo.tf32 = o.precision != Precision::kFp32;
    bo.bf16 = o.precision == Precision::kBf16;
    bo.cuda_graph = o.cuda_graph;
    const uint32_t max_batch = o.loader.pipeline.batch_size;
    RF_ASSIGN_OR_RETURN(auto backend,
                        CudaBackend::Create(in.config, in.norm, max_batch, params, bo));
    const cudaStream_t stream = backend->stream();
    e->description_ = backend->Describe();
    e->backend_ = std::move(backend);
    BatchSource* test = nullptr;
    if (in.test != nullptr) {
      RF_ASSIGN_OR_RETURN(
          e->test_adapter_,
          DeviceBatchStager::Create(*in.test, max_batch, in.sample_bytes, in.label_bytes, stream));
      test = e->test_adapter_.get();
    }
    RF_RETURN_IF_ERROR(e->MakeSources(o, in, DeviceKind::kCuda, stream, test));
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
  if (in.train == nullptr) return Status::InvalidArgument("no training dataset");
  const DeviceKind device = o.loader.pipeline.device;
#if RINGFEED_CUDA_BACKEND
  if (device == DeviceKind::kCuda || (device == DeviceKind::kAuto && CudaDevicePresent())) {
    if (!CudaDevicePresent()) return Status::Usage("--device cuda: no CUDA device found");
    return CudaEngine::Create(o, in, params);
  }
#else
  if (device == DeviceKind::kCuda) {
    return Status::Usage("--device cuda: this build has no CUDA backend");
  }
#endif
  if (o.loader.pipeline.mode == PipelineMode::kManaged) {
    return Status::Usage(
        "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
  }
  return CpuEngine::Create(o, in, params);
}

}  // namespace rf
