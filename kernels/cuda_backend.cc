// CudaBackend's creation, argument checks, state and statistics. The step itself (forward,
// backward, the CUDA graph) is in kernels/cuda_backend_step.cc.
#include "kernels/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <string>
#include <utility>

#include "kernels/cuda_bf16_kernels.cuh"
#include "kernels/dnn_check.h"

namespace rf {
namespace {

// Every tensor in the flat buffers starts on a 256-byte boundary (64 floats), as cudaMalloc's
// own alignment, so cuDNN and cuBLAS see aligned pointers and SGD can read float4s.
constexpr size_t kAlignFloats = 64;
// cuBLAS's recommended workspace on Hopper; set explicitly so that cuBLAS never allocates one
// lazily (in a step, or during graph capture).
constexpr size_t kCublasWorkspace = size_t{32} << 20;

// Whether a kernel can read `p`: device, managed or pinned host memory (not plain host memory).
bool GpuReadable(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; clear it so the next check does not see it
    return false;
  }
  return a.type != cudaMemoryTypeUnregistered;
}

}  // namespace

Result<std::unique_ptr<CudaBackend>> CudaBackend::Create(const ModelConfig& config,
                                                         const Normalization& norm,
                                                         uint32_t max_batch,
                                                         const Tensors& initial_params,
                                                         const CudaBackendOptions& options) {
  RF_RETURN_IF_ERROR(CheckBackendInputs(config, norm, max_batch, initial_params, "CUDA"));
  // cuDNN's legacy descriptors take int sizes and strides: the largest activation is the first
  // block's (or the input, with more channels than the first block).
  const uint64_t widest = std::max((config.channels + 7) / 8 * 8, config.conv[0]);
  uint64_t elems = 0;  // checked: batch x widest x height x width can exceed 2^64
  if (__builtin_mul_overflow(uint64_t{max_batch} * widest, uint64_t{config.height} * config.width,
                             &elems) ||
      elems > INT_MAX) {
    return Status::InvalidArgument("batch size " + std::to_string(max_batch) +
                                   " is too large for the CUDA backend at this input size "
                                   "(batch x channels x height x width must stay below 2^31)");
  }
  if (options.workspace_limit < (size_t{1} << 20)) {
    return Status::InvalidArgument("the CUDA backend needs a workspace limit of at least 1 MiB");
  }
  std::unique_ptr<CudaBackend> be(new CudaBackend(config, norm, max_batch, options));
  RF_RETURN_IF_ERROR(be->Init(initial_params));
  return be;
}

CudaBackend::CudaBackend(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
                         const CudaBackendOptions& options)
    : config_(config),
      mean_(norm.mean),
      stddev_(norm.stddev),
      max_batch_(max_batch),
      flat_(config.FlatFeatures()),
      options_(options),
      shapes_(ParameterShapes(config)) {
  for (const ParamShape& s : shapes_) {
    offsets_.push_back(padded_count_);
    padded_count_ += (s.count() + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  }
  host_stage_.assign(padded_count_, 0.f);
  buckets_ = PlanReduceBuckets(config_, offsets_, padded_count_, options_.reduce_buckets);
}

CudaBackend::~CudaBackend() {
  // Queued kernels may still use the buffers freed below (a failed step may have left reductions
  // that the compute stream never joined).
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (reduce_stream_) (void)cudaStreamSynchronize(reduce_stream_.get());
}

Status CudaBackend::Init(const Tensors& initial_params) {
  RF_CUDA_CHECK(cudaSetDevice(options_.device));
  if (options_.stream != nullptr) {
    stream_ = options_.stream;
  } else {
    RF_ASSIGN_OR_RETURN(owned_stream_, cuda::CreateStream());
    stream_ = owned_stream_.get();
  }
  RF_ASSIGN_OR_RETURN(cudnn_, cuda::CreateCudnn());
  RF_CUDA_CHECK(cudnnSetStream(cudnn_.get(), stream_));
  RF_ASSIGN_OR_RETURN(cublas_, cuda::CreateCublas());
  // cublasSetStream resets the workspace to cuBLAS's own pool: set the stream first.
  RF_CUDA_CHECK(cublasSetStream(cublas_.get(), stream_));
  RF_ASSIGN_OR_RETURN(cublas_workspace_,
                      cuda::DeviceBuffer::Allocate(kCublasWorkspace, "the cuBLAS workspace"));
  RF_CUDA_CHECK(cublasSetWorkspace(cublas_.get(), cublas_workspace_.data(), kCublasWorkspace));
  RF_ASSIGN_OR_RETURN(bad_copied_, cuda::CreateEvent(/*timing=*/false));

  for (size_t i = 0; i < config_.conv.size(); ++i) {
    cuda::CudaConvBlock::Shape s;
    s.in_channels = ConvInChannels(i);
    s.out_channels = config_.conv[i];
    s.height = config_.HeightAfter(static_cast<int>(i) - 1);
    s.width = config_.WidthAfter(static_cast<int>(i) - 1);
    RF_ASSIGN_OR_RETURN(auto block,
                        cuda::CudaConvBlock::Create(s, options_.tf32, options_.deterministic,
                                                    options_.bf16, config_.batch_norm));
    blocks_.push_back(std::move(block));
  }
  RF_RETURN_IF_ERROR(AllocateBuffers());

  // The initial state: parameters as given, optimizer state and gradients (gaps included) zero.
  RF_RETURN_IF_ERROR(SetState(initial_params, ZerosLike(config_)));
  RF_RETURN_IF_ERROR(SetRunningStats(InitialRunningStats(config_)));
  RF_CUDA_CHECK(cudaMemsetAsync(grads_.data(), 0, grads_.bytes(), stream_));
  RF_CUDA_CHECK(cudaMemcpyAsync(norm_.as<float>(), mean_.data(), mean_.size() * sizeof(float),
                                cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaMemcpyAsync(norm_.as<float>() + config_.channels, stddev_.data(),
                                stddev_.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  const std::vector<float> ones(max_batch_, 1.f);
  RF_CUDA_CHECK(
      cudaMemcpyAsync(ones_.data(), ones.data(), ones_.bytes(), cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaMemsetAsync(state_.data(), 0, sizeof(DeviceState), stream_));
  RF_CUDA_CHECK(cudaMemsetAsync(&state()->step_bad, 0xff, 2 * sizeof(unsigned long long), stream_));
  if (options_.bf16) RF_RETURN_IF_ERROR(FiltersToBf16());  // real filters for the search
  RF_RETURN_IF_ERROR(ChooseAlgorithms());
  RF_RETURN_IF_ERROR(WarmUp());
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `ones` and the staging copies die here
  return Status::Ok();
}

Status CudaBackend::WarmUp() {
  // Forward and backward passes of a full batch of zeros (labels 0): lazy kernel loading, the
  // libraries' first-call set-up and, with cuda_graph, the graph's capture happen here rather
  // than in the first training steps (about 0.45 s on an H100, measured with --trace). No SGD:
  // the parameters are untouched; the gradients are overwritten by every backward pass; the
  // statistics are reset after.
  const auto t0 = std::chrono::steady_clock::now();
  RF_CUDA_CHECK(cudaMemsetAsync(input_.data(), 0, input_.bytes(), stream_));
  RF_CUDA_CHECK(cudaMemsetAsync(labels_.data(), 0, labels_.bytes(), stream_));
  for (int pass = 0; pass < (options_.cuda_graph ? 2 : 1); ++pass) {  // eager, then captured
    RF_RETURN_IF_ERROR(ForwardBackward(max_batch_));
  }
  RF_CUDA_CHECK(cudaMemsetAsync(&state()->train, 0, sizeof(cuda::DeviceStats), stream_));
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  warm_up_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

Status CudaBackend::AllocateBuffers() {
  using cuda::DeviceBuffer;
  const size_t b = max_batch_, f = sizeof(float), a = act_bytes();
  RF_ASSIGN_OR_RETURN(params_, DeviceBuffer::Allocate(padded_count_ * f, "parameters"));
  RF_ASSIGN_OR_RETURN(grads_, DeviceBuffer::Allocate(padded_count_ * f, "gradients"));
  RF_ASSIGN_OR_RETURN(momentum_, DeviceBuffer::Allocate(padded_count_ * f, "momentum"));
  RF_ASSIGN_OR_RETURN(second_moment_, DeviceBuffer::Allocate(padded_count_ * f, "second moment"));
  const size_t input = b * ConvInChannels(0) * config_.height * config_.width;
  RF_ASSIGN_OR_RETURN(input_, DeviceBuffer::Allocate(input * a, "the decoded input"));
  RF_ASSIGN_OR_RETURN(labels_, DeviceBuffer::Allocate(b * sizeof(int32_t), "labels"));
  RF_ASSIGN_OR_RETURN(
      transforms_, DeviceBuffer::Allocate(b * sizeof(SampleTransform), "augmentation transforms"));
  size_t act_grad = 0;
  for (size_t i = 0; i < config_.conv.size(); ++i) {
    const int at = static_cast<int>(i);
    const size_t act =
        b * config_.conv[i] * config_.HeightAfter(at - 1) * config_.WidthAfter(at - 1);
    const size_t pooled = b * config_.conv[i] * config_.HeightAfter(at) * config_.WidthAfter(at);
    const std::string name = "conv" + std::to_string(i);
    BlockBuffers bb;
    RF_ASSIGN_OR_RETURN(bb.act, DeviceBuffer::Allocate(act * a, (name + " activations").c_str()));
    RF_ASSIGN_OR_RETURN(bb.pooled, DeviceBuffer::Allocate(pooled * a, (name + " pooled").c_str()));
    RF_ASSIGN_OR_RETURN(bb.pooled_grad,
                        DeviceBuffer::Allocate(pooled * a, (name + " pooled gradient").c_str()));
    if (options_.bf16) {
      const size_t filter = size_t{config_.conv[i]} * ConvInChannels(i) * 9 * a;
      RF_ASSIGN_OR_RETURN(bb.filter_bf16,
                          DeviceBuffer::Allocate(filter, (name + " bf16 filter").c_str()));
      RF_ASSIGN_OR_RETURN(bb.filter_grad_bf16,
                          DeviceBuffer::Allocate(filter, (name + " bf16 filter gradient").c_str()));
      // Zeroed once (like pooled_grad below), as grads_ is: compute-sanitizer's initcheck does
      // not see cuDNN's sm90 kernels write these buffers and reported every later read of them
      // (900K a test) as uninitialized, though the gradients match the CPU's
      // (CudaBackendGradients); zeroed, a real report cannot hide among them.
      RF_CUDA_CHECK(cudaMemsetAsync(bb.filter_grad_bf16.data(), 0, filter, stream_));
    }
    RF_CUDA_CHECK(cudaMemsetAsync(bb.pooled_grad.data(), 0, bb.pooled_grad.bytes(), stream_));
    // Zeroed so that the algorithm search times real arithmetic, not garbage (NaN, denormals).
    RF_CUDA_CHECK(cudaMemsetAsync(bb.act.data(), 0, bb.act.bytes(), stream_));
    RF_CUDA_CHECK(cudaMemsetAsync(bb.pooled.data(), 0, bb.pooled.bytes(), stream_));
    if (config_.batch_norm) {
      RF_ASSIGN_OR_RETURN(bb.bn_saved, DeviceBuffer::Allocate(4 * size_t{config_.conv[i]} * f,
                                                              (name + " batch norm").c_str()));
      RF_CUDA_CHECK(cudaMemsetAsync(bb.bn_saved.data(), 0, bb.bn_saved.bytes(), stream_));
      if (!options_.bf16) {
        RF_ASSIGN_OR_RETURN(bb.norm,
                            DeviceBuffer::Allocate(act * f, (name + " normalized").c_str()));
        RF_CUDA_CHECK(cudaMemsetAsync(bb.norm.data(), 0, bb.norm.bytes(), stream_));
      }
      bn_offsets_.push_back(bn_channels_);
      bn_channels_ += config_.conv[i];
    }
    block_buffers_.push_back(std::move(bb));
    act_grad = std::max(act_grad, act);
  }
  RF_CUDA_CHECK(cudaMemsetAsync(input_.data(), 0, input_.bytes(), stream_));
  // One activation gradient serves every block: each block's is used only inside its backward.
  RF_ASSIGN_OR_RETURN(act_grad_, DeviceBuffer::Allocate(act_grad * a, "activation gradients"));
  RF_CUDA_CHECK(
      cudaMemsetAsync(act_grad_.data(), 0, act_grad_.bytes(), stream_));  // as pooled_grad
  if (options_.bf16) {
    RF_ASSIGN_OR_RETURN(fc_in_, DeviceBuffer::Allocate(b * flat_ * f, "fc1 input"));
    RF_ASSIGN_OR_RETURN(fc_in_grad_, DeviceBuffer::Allocate(b * flat_ * f, "fc1 input gradient"));
    const uint32_t widest = *std::max_element(config_.conv.begin(), config_.conv.end());
    const size_t partials =
        config_.batch_norm ? cuda::BatchNormPartials(widest) : cuda::BiasGradPartials(widest);
    RF_ASSIGN_OR_RETURN(bias_partial_,
                        DeviceBuffer::Allocate(partials * f, "per-channel partial sums"));
  }
  RF_ASSIGN_OR_RETURN(hidden_, DeviceBuffer::Allocate(b * config_.hidden * f, "fc1 output"));
  RF_ASSIGN_OR_RETURN(hidden_grad_,
                      DeviceBuffer::Allocate(b * config_.hidden * f, "fc1 output gradient"));
  RF_ASSIGN_OR_RETURN(logits_, DeviceBuffer::Allocate(b * config_.classes * f, "logits"));
  RF_ASSIGN_OR_RETURN(logits_grad_,
                      DeviceBuffer::Allocate(b * config_.classes * f, "logit gradients"));
  RF_ASSIGN_OR_RETURN(row_loss_, DeviceBuffer::Allocate(b * sizeof(double), "per-sample losses"));
  RF_ASSIGN_OR_RETURN(row_correct_,
                      DeviceBuffer::Allocate(b * sizeof(uint32_t), "per-sample hits"));
  RF_ASSIGN_OR_RETURN(ones_, DeviceBuffer::Allocate(b * f, "a vector of ones"));
  RF_ASSIGN_OR_RETURN(norm_, DeviceBuffer::Allocate(2 * config_.channels * f, "normalization"));
  if (config_.batch_norm) {
    RF_ASSIGN_OR_RETURN(running_,
                        DeviceBuffer::Allocate(2 * bn_channels_ * f, "running statistics"));
    RF_ASSIGN_OR_RETURN(bn_batch_,
                        DeviceBuffer::Allocate(2 * bn_channels_ * f, "batch statistics"));
    RF_CUDA_CHECK(cudaMemsetAsync(bn_batch_.data(), 0, bn_batch_.bytes(), stream_));
  }
  RF_ASSIGN_OR_RETURN(state_, DeviceBuffer::Allocate(sizeof(DeviceState), "statistics"));
  RF_ASSIGN_OR_RETURN(host_, cuda::PinnedBuffer::Allocate(sizeof(HostState), "statistics"));
  host()->sticky_bad = cuda::kNoBadLabel;
  return Status::Ok();
}

Status CudaBackend::ChooseAlgorithms() {
  for (auto& block : blocks_) RF_RETURN_IF_ERROR(block.SetBatch(cudnn_.get(), max_batch_, 0));
  // A search workspace as large as allowed (smaller if the GPU has less free), for this search
  // only; the one kept is sized for what the chosen algorithms need.
  cuda::DeviceBuffer search;
  for (size_t bytes = options_.workspace_limit; bytes >= (size_t{1} << 20); bytes /= 4) {
    auto buf = cuda::DeviceBuffer::Allocate(bytes, "the cuDNN algorithm search");
    if (buf.ok()) {
      search = std::move(*buf);
      break;
    }
  }
  size_t needed = 0;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    RF_RETURN_IF_ERROR(blocks_[b].FindAlgorithms(cudnn_.get(), BlockArgs(b), /*need_x_grad=*/b > 0,
                                                 search.data(), search.bytes()));
    needed = std::max(needed, blocks_[b].workspace_needed());
  }
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the search ran on the stream
  search = cuda::DeviceBuffer();
  RF_ASSIGN_OR_RETURN(workspace_, cuda::DeviceBuffer::Allocate(needed, "the cuDNN workspace"));
  for (auto& block : blocks_) {
    RF_RETURN_IF_ERROR(block.SetBatch(cudnn_.get(), max_batch_, workspace_.bytes()));
  }
  batch_n_ = max_batch_;
  return Status::Ok();
}

Status CudaBackend::CheckBatch(const Batch& batch) const {
  RF_RETURN_IF_ERROR(rf::CheckBatch(batch, max_batch_, "CUDA"));
  if (!GpuReadable(batch.samples) || !GpuReadable(batch.labels)) {
    return Status::InvalidArgument(
        "the batch's samples or labels are in plain host memory; the CUDA backend reads device "
        "(or pinned) memory");
  }
  return Status::Ok();
}

Status CudaBackend::Begin(const Batch* batch) {
  RF_RETURN_IF_ERROR(std::exchange(deferred_, Status::Ok()));
  RF_CUDA_CHECK(cudaSetDevice(options_.device));
  if (batch == nullptr) return Status::Ok();
  RF_RETURN_IF_ERROR(ReportBadLabel(/*wait=*/false));
  return CheckBatch(*batch);
}

Status CudaBackend::EndStep() {
  RF_CUDA_CHECK(cudaMemcpyAsync(&host()->sticky_bad, &state()->sticky_bad,
                                sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream_));
  RF_CUDA_CHECK(cudaEventRecord(bad_copied_.get(), stream_));
  bad_copy_pending_ = true;
  return Status::Ok();
}

Status CudaBackend::ReportBadLabel(bool wait) {
  if (!bad_copy_pending_) return Status::Ok();
  if (wait) {
    RF_CUDA_CHECK(cudaEventSynchronize(bad_copied_.get()));
  } else {
    const cudaError_t e = cudaEventQuery(bad_copied_.get());
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: keep it from the next launch check
      return Status::Ok();       // look again at the next call
    }
    RF_CUDA_CHECK(e);
  }
  // The copy landed, and nothing queued since has written the record: safe to read and reset.
  bad_copy_pending_ = false;
  const unsigned long long record = host()->sticky_bad;
  if (record == cuda::kNoBadLabel) return Status::Ok();
  host()->sticky_bad = cuda::kNoBadLabel;
  RF_CUDA_CHECK(cudaMemsetAsync(&state()->sticky_bad, 0xff, sizeof(unsigned long long), stream_));
  if (record == cuda::kNonFiniteLoss)
    return NonFiniteLossError("found on the GPU after it was queued");
  const auto label = static_cast<int32_t>(static_cast<uint32_t>(record & 0xffffffffu));
  return Status::InvalidArgument(
      "label " + std::to_string(label) + " of sample " + std::to_string(record >> 32) +
      " in the batch is outside [0, " + std::to_string(config_.classes) +
      "); found on the GPU after the batch was queued, so it changed no parameters or statistics");
}

StepStats CudaBackend::TakeStats(cuda::DeviceStats* stats) {
  const Status st = [&]() -> Status {
    RF_CUDA_CHECK(cudaSetDevice(options_.device));
    RF_CUDA_CHECK(cudaMemcpyAsync(&host()->stats, stats, sizeof(cuda::DeviceStats),
                                  cudaMemcpyDeviceToHost, stream_));
    RF_CUDA_CHECK(cudaMemsetAsync(stats, 0, sizeof(cuda::DeviceStats), stream_));
    RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (done_clock_) RF_RETURN_IF_ERROR(done_clock_->Poll(/*wait=*/true));
    return Status::Ok();
  }();
  if (!st.ok()) {
    if (deferred_.ok()) deferred_ = st;  // StepStats has no room for it: the next call says it
    return StepStats{};
  }
  const cuda::DeviceStats& s = host()->stats;
  return StepStats{s.loss_sum, s.correct, s.samples};
}

StepStats CudaBackend::TakeTrainStats() { return TakeStats(&state()->train); }
StepStats CudaBackend::TakeEvalStats() { return TakeStats(&state()->eval); }

Status CudaBackend::GetState(Tensors* params, Tensors* optimizer_state) {
  RF_RETURN_IF_ERROR(Begin(nullptr));
  // Parameters into *params; then each slot in use, appended to *optimizer_state.
  const cuda::DeviceBuffer* slots[] = {&momentum_, &second_moment_};
  if (optimizer_state != nullptr) optimizer_state->t.clear();
  for (size_t k = 0; k <= slots_; ++k) {
    Tensors* out = k == 0 ? params : optimizer_state;
    const cuda::DeviceBuffer* src = k == 0 ? &params_ : slots[k - 1];
    if (out == nullptr) continue;
    RF_CUDA_CHECK(cudaMemcpyAsync(host_stage_.data(), src->data(), src->bytes(),
                                  cudaMemcpyDeviceToHost, stream_));
    RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (k <= 1) out->t.clear();
    for (size_t t = 0; t < shapes_.size(); ++t) {
      const float* from = host_stage_.data() + offsets_[t];
      out->t.emplace_back(from, from + shapes_[t].count());
    }
  }
  return Status::Ok();
}

Status CudaBackend::GetRunningStats(Tensors* stats) {
  RF_RETURN_IF_ERROR(Begin(nullptr));
  stats->t.clear();
  if (!config_.batch_norm) return Status::Ok();
  std::vector<float> flat(2 * bn_channels_);
  RF_CUDA_CHECK(cudaMemcpyAsync(flat.data(), running_.data(), running_.bytes(),
                                cudaMemcpyDeviceToHost, stream_));
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (size_t half = 0; half < 2; ++half) {  // means, then variances
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const float* from = flat.data() + half * bn_channels_ + bn_offsets_[b];
      stats->t.emplace_back(from, from + config_.conv[b]);
    }
  }
  return Status::Ok();
}

Status CudaBackend::SetRunningStats(const Tensors& stats) {
  RF_RETURN_IF_ERROR(Begin(nullptr));
  RF_RETURN_IF_ERROR(CheckRunningStatShapes(config_, stats));
  if (!config_.batch_norm) return Status::Ok();
  std::vector<float> flat(2 * bn_channels_);
  for (size_t half = 0; half < 2; ++half) {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const std::vector<float>& in = stats.t[half * blocks_.size() + b];
      std::copy(in.begin(), in.end(), flat.begin() + half * bn_channels_ + bn_offsets_[b]);
    }
  }
  RF_CUDA_CHECK(cudaMemcpyAsync(running_.data(), flat.data(), running_.bytes(),
                                cudaMemcpyHostToDevice, stream_));
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `flat` dies here
  return Status::Ok();
}

Status CudaBackend::SetGradientReducer(GradientReducer* reducer) {
  if (reducer != reducer_ && graph_) {
    // Captured with the old reducer; a launch of it may still be queued (rare: once per run).
    RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    graph_ = cuda::CudaGraphExec();
  }
  reducer_ = reducer;
  if (Bucketed() && !reduce_stream_) {
    RF_CUDA_CHECK(cudaSetDevice(options_.device));
    RF_ASSIGN_OR_RETURN(reduce_stream_, cuda::CreateStream(/*highest_priority=*/true));
    for (size_t k = 0; k < buckets_.size(); ++k) {
      RF_ASSIGN_OR_RETURN(cuda::CudaEvent e, cuda::CreateEvent(/*timing=*/false));
      bucket_ready_.push_back(std::move(e));
    }
    RF_ASSIGN_OR_RETURN(reduced_, cuda::CreateEvent(/*timing=*/false));
  }
  return Status::Ok();
}

Status CudaBackend::SetState(const Tensors& params, const Tensors& optimizer_state) {
  RF_RETURN_IF_ERROR(Begin(nullptr));
  RF_RETURN_IF_ERROR(CheckShapes(config_, params, "parameters"));
  RF_ASSIGN_OR_RETURN(const size_t slots, CheckStateShapes(config_, optimizer_state));
  const cuda::DeviceBuffer* buffers[] = {&params_, &momentum_, &second_moment_};
  for (size_t k = 0; k < 3; ++k) {
    const cuda::DeviceBuffer* dst = buffers[k];
    if (k > slots) {  // a slot not given starts at zero
      RF_CUDA_CHECK(cudaMemsetAsync(dst->data(), 0, dst->bytes(), stream_));
      continue;
    }
    for (size_t t = 0; t < shapes_.size(); ++t) {
      const std::vector<float>& in =
          k == 0 ? params.t[t] : optimizer_state.t[(k - 1) * shapes_.size() + t];
      std::copy(in.begin(), in.end(), host_stage_.begin() + offsets_[t]);
    }
    RF_CUDA_CHECK(cudaMemcpyAsync(dst->data(), host_stage_.data(), dst->bytes(),
                                  cudaMemcpyHostToDevice, stream_));
    // host_stage_ is reused for the next buffer: wait until the copy has read it.
    RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  slots_ = slots;
  return Status::Ok();
}

Status CudaBackend::WhenDone(DoneFn fn, void* arg) {
  if (!done_clock_) {  // made on first use: only traced runs need it
    RF_ASSIGN_OR_RETURN(auto clock, cuda::CudaDoneClock::Create(stream_, kDoneMarks));
    done_clock_ = std::make_unique<cuda::CudaDoneClock>(std::move(clock));
  }
  return done_clock_->Mark(fn, arg);
}

std::string CudaBackend::Describe() const {
  cudaDeviceProp prop{};
  const bool known = cudaGetDeviceProperties(&prop, options_.device) == cudaSuccess;
  std::string s = "cuda device " + std::to_string(options_.device) + " (" +
                  (known ? prop.name : "?") + "), cuDNN " + std::to_string(cudnnGetVersion()) +
                  ", " + (options_.bf16 ? "bf16 conv blocks" : "float32 conv blocks") + ", tf32 " +
                  (options_.tf32 ? "on" : "off") + ", deterministic " +
                  (options_.deterministic ? "on" : "off") + ", cuda graph " +
                  (options_.cuda_graph ? "on" : "off") +
                  (config_.batch_norm ? ", batch norm" : "") + ", workspace " +
                  std::to_string(workspace_.bytes()) + " bytes, warm-up " +
                  std::to_string(static_cast<int>(warm_up_ms_)) + " ms";
  for (const auto& b : blocks_) s += "\n  " + b.Describe();
  return s;
}

}  // namespace rf
