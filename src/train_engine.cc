#include "src/train_engine.h"

#include "cuda/device.h"
#include "kernels/cpu_backend.h"
#if RINGFEED_CUDA_BACKEND
#include "cuda/check.h"
#include "kernels/cuda_backend.h"
#include "pipeline/cuda_chunk_staging.h"
#include "pipeline/device_batch_stager.h"
#endif

namespace rf {

Status TrainEngine::MakeSources(const EngineOptions& o, const EngineInputs& in,
                                const StagingFactory& make_staging, BatchSource* test) {
  RF_ASSIGN_OR_RETURN(auto source, StreamingSource::Create(*in.train, o.streaming, make_staging));
  train_ = std::move(source);
  test_ = test;
  return Status::Ok();
}

namespace {

class CpuEngine final : public TrainEngine {
 public:
  static Result<std::unique_ptr<TrainEngine>> Create(const EngineOptions& o, const EngineInputs& in,
                                                     const Tensors& params) {
    std::unique_ptr<CpuEngine> e(new CpuEngine);
    RF_ASSIGN_OR_RETURN(e->backend_, CpuBackend::Create(in.config, in.norm, o.max_batch, params));
    e->description_ = "cpu (im2col + OpenBLAS sgemm)";
    RF_RETURN_IF_ERROR(e->MakeSources(
        o, in,
        [](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
          RF_ASSIGN_OR_RETURN(auto s, HostChunkStaging::Create(l));
          return std::unique_ptr<ChunkStaging>(std::move(s));
        },
        in.test));
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
    RF_ASSIGN_OR_RETURN(auto backend,
                        CudaBackend::Create(in.config, in.norm, o.max_batch, params, bo));
    const cudaStream_t stream = backend->stream();
    e->description_ = backend->Describe();
    e->backend_ = std::move(backend);
    BatchSource* test = nullptr;
    if (in.test != nullptr) {
      RF_ASSIGN_OR_RETURN(e->test_adapter_,
                          DeviceBatchStager::Create(*in.test, o.max_batch, in.sample_bytes,
                                                    in.label_bytes, stream));
      test = e->test_adapter_.get();
    }
    if (o.mode == PipelineMode::kManaged) {
      RF_ASSIGN_OR_RETURN(auto managed, ManagedSource::Create(*in.train, o.managed, stream));
      e->train_ = std::move(managed);
      e->test_ = test;
      return std::unique_ptr<TrainEngine>(std::move(e));
    }
    const uint32_t copy_streams = o.copy_streams;
    RF_RETURN_IF_ERROR(e->MakeSources(
        o, in,
        [stream, copy_streams](const StagingLayout& l) -> Result<std::unique_ptr<ChunkStaging>> {
          RF_ASSIGN_OR_RETURN(auto s, CudaChunkStaging::Create(l, stream, copy_streams));
          return std::unique_ptr<ChunkStaging>(std::move(s));
        },
        test));
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
  if (o.max_batch == 0 || o.streaming.batch_size != o.max_batch ||
      o.managed.batch_size != o.max_batch) {
    return Status::InvalidArgument("engine options: the sources' batch sizes (" +
                                   std::to_string(o.streaming.batch_size) + ", " +
                                   std::to_string(o.managed.batch_size) +
                                   ") must equal max_batch " + std::to_string(o.max_batch));
  }
#if RINGFEED_CUDA_BACKEND
  if (o.device == DeviceKind::kCuda || (o.device == DeviceKind::kAuto && CudaDevicePresent())) {
    if (!CudaDevicePresent()) return Status::Usage("--device cuda: no CUDA device found");
    return CudaEngine::Create(o, in, params);
  }
#else
  if (o.device == DeviceKind::kCuda) {
    return Status::Usage("--device cuda: this build has no CUDA backend");
  }
#endif
  if (o.mode == PipelineMode::kManaged) {
    return Status::Usage(
        "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
  }
  return CpuEngine::Create(o, in, params);
}

}  // namespace rf
