#include "src/train_engine.h"

#include <algorithm>

#include "cuda/device.h"
#include "kernels/cpu_backend.h"
#include "kernels/cpu_workers.h"
#include "parallel/host_reducer.h"
#if RINGFEED_CUDA_BACKEND
#include "cuda/check.h"
#if RINGFEED_NCCL
#include "parallel/nccl_reducer.h"
#endif
#include "kernels/cuda_backend.h"
#endif

namespace rf {

Status TrainEngine::MakeSources(const TrainConfig& c, const EngineInputs& in, DeviceKind device,
                                int gpu, void* stream) {
  const auto on_device = [&](LoaderOptions lo) {
    lo.pipeline.device = device;
    lo.gpu = device == DeviceKind::kCuda ? gpu : -1;
    lo.stream = stream;
    return lo;
  };
  // Image/jpeg records are decoded by the loader (its decode threads, ahead of training) into
  // uint8 images the backend normalizes as it does stored ones.
  LoaderOptions train = TrainLoaderOptions(c);
  if (format::HoldsImageRecords(in.train->header()))
    train = DecodedImageOptions(train, c, ImageCrop::kRandomResized);
  if (in.mixture.empty()) {
    RF_ASSIGN_OR_RETURN(loader_, Loader::Create(*in.train, on_device(train)));
  } else {
    RF_ASSIGN_OR_RETURN(loader_, Loader::Create(in.mixture, on_device(train)));
  }
  if (in.test != nullptr) {
    LoaderOptions test = TestLoaderOptions(c);
    if (format::HoldsImageRecords(in.test->header()))
      test = DecodedImageOptions(test, c, ImageCrop::kCenter);
    RF_ASSIGN_OR_RETURN(test_loader_, Loader::Create(*in.test, on_device(test)));
    test_ = &test_loader_->source();
  }
  // The training batches carry their samples' indices and epoch; the backend draws each sample's
  // transform from them inside its decode. Evaluate never augments.
  backend_->SetAugmentation(c.augment, c.pipeline.order.seed);
  return Status::Ok();
}

namespace {

bool DataParallel(const EngineInputs& in) { return in.world != nullptr && in.world->size() > 1; }

class CpuEngine final : public TrainEngine {
 public:
  static Result<std::unique_ptr<TrainEngine>> Create(const TrainConfig& c, const EngineInputs& in,
                                                     const Tensors& params) {
    std::unique_ptr<CpuEngine> e(new CpuEngine);
    // The ranks on one machine share its CPUs.
    const unsigned local_ranks = in.world != nullptr ? in.world->local_size() : 1;
    const unsigned threads = std::max(1u, cpu::CpuWorkers::AvailableCpus() / local_ranks);
    RF_ASSIGN_OR_RETURN(
        e->backend_,
        CpuBackend::Create(in.config, in.norm, c.pipeline.order.batch_size, params, threads));
    e->description_ = "cpu (im2col + OpenBLAS sgemm, " + std::to_string(threads) + " threads)";
    if (DataParallel(in)) {
      e->reducer_ = std::make_unique<HostReducer>(*in.world);
      RF_RETURN_IF_ERROR(e->backend_->SetGradientReducer(e->reducer_.get()));
      e->reduction_ = "gradients averaged over " + in.world->Describe();
    }
    RF_RETURN_IF_ERROR(e->MakeSources(c, in, DeviceKind::kCpu, -1, nullptr));
    return std::unique_ptr<TrainEngine>(std::move(e));
  }
};

#if RINGFEED_CUDA_BACKEND
class CudaEngine final : public TrainEngine {
 public:
  static Result<std::unique_ptr<TrainEngine>> Create(const TrainConfig& c, const EngineInputs& in,
                                                     const Tensors& params) {
    std::unique_ptr<CudaEngine> e(new CudaEngine);
    int devices = 0;
    RF_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (c.gpu >= devices) {
      return Status::Usage("--gpu " + std::to_string(c.gpu) + ": this machine has " +
                           std::to_string(devices) + " GPUs (0 to " + std::to_string(devices - 1) +
                           ")");
    }
    const int gpu = c.gpu >= 0
                        ? c.gpu
                        : static_cast<int>((in.world != nullptr ? in.world->local_rank() : 0) %
                                           static_cast<uint32_t>(devices));
    RF_CUDA_CHECK(cudaSetDevice(gpu));
    size_t total = 0;
    RF_CUDA_CHECK(cudaMemGetInfo(&e->free_at_start_, &total));
    CudaBackendOptions bo;
    bo.tf32 = c.precision != Precision::kFp32;
    bo.bf16 = c.precision == Precision::kBf16;
    bo.cuda_graph = c.cuda_graph;
    bo.reduce_buckets = c.reduce_buckets;
    bo.device = gpu;
    const uint32_t max_batch = c.pipeline.order.batch_size;
    RF_ASSIGN_OR_RETURN(auto backend,
                        CudaBackend::Create(in.config, in.norm, max_batch, params, bo));
    const cudaStream_t stream = backend->stream();
    const std::string buckets = ReduceBucketsText(backend->reduce_buckets());
    e->description_ = backend->Describe();
    e->backend_ = std::move(backend);
    if (DataParallel(in)) {
#if RINGFEED_NCCL
      RF_ASSIGN_OR_RETURN(auto nccl, NcclReducer::Create(*in.world, gpu));
      e->nccl_ = nccl.get();
      e->reduction_ = "gradients averaged by " + nccl->Describe() + " over " +
                      in.world->Describe() + ", " + buckets;
      e->reducer_ = std::move(nccl);
      RF_RETURN_IF_ERROR(e->backend_->SetGradientReducer(e->reducer_.get()));
#else
      return Status::Usage(
          "several ranks on GPUs need NCCL, which this build lacks; use "
          "--device cpu or one rank");
#endif
    }
    RF_RETURN_IF_ERROR(e->MakeSources(c, in, DeviceKind::kCuda, gpu, stream));
    return std::unique_ptr<TrainEngine>(std::move(e));
  }

  uint64_t gpu_bytes() const override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    return free_at_start_ > free ? free_at_start_ - free : 0;
  }
#if RINGFEED_NCCL
  Status CollectiveError() const override {
    return nccl_ != nullptr ? nccl_->AsyncError() : Status::Ok();
  }
  void AbortCollectives() override {
    if (nccl_ != nullptr) nccl_->Abort();
  }
#endif

 private:
  size_t free_at_start_ = 0;
#if RINGFEED_NCCL
  NcclReducer* nccl_ = nullptr;  // reducer_, where it is NCCL
#endif
};
#endif

}  // namespace

Result<std::unique_ptr<TrainEngine>> TrainEngine::Create(const TrainConfig& c,
                                                         const EngineInputs& in,
                                                         const Tensors& params) {
  if (in.train == nullptr) return Status::InvalidArgument("no training dataset");
  const DeviceKind device = c.pipeline.device;
#if RINGFEED_CUDA_BACKEND
  if (device == DeviceKind::kCuda || (device == DeviceKind::kAuto && CudaDevicePresent())) {
    if (!CudaDevicePresent()) return Status::Usage("--device cuda: no CUDA device found");
    return CudaEngine::Create(c, in, params);
  }
#else
  if (device == DeviceKind::kCuda) {
    return Status::Usage("--device cuda: this build has no CUDA backend");
  }
#endif
  if (c.pipeline.mode == PipelineMode::kManaged) {
    return Status::Usage(
        "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
  }
  return CpuEngine::Create(c, in, params);
}

}  // namespace rf
