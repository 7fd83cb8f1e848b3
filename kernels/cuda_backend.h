// CudaBackend: the model (model/model.h) on one NVIDIA GPU. Convolution blocks run through
// cuDNN's legacy API (kernels/cuda_conv_block.h), the fully connected layers through cuBLAS,
// and decoding, softmax cross-entropy, statistics and the SGD or AdamW update through our own
// kernels (kernels/cuda_kernels.cuh). It computes the same function as CpuBackend, to float
// rounding.
//
// Memory: Create() allocates everything for batches of up to max_batch samples: every activation
// and gradient, one cuDNN workspace sized for the largest chosen algorithm, a fixed cuBLAS
// workspace, and four flat buffers (parameters, gradients, and the optimizer state: momentum or
// AdamW's first moment, and AdamW's second moment) laid out in
// ParameterShapes order with each tensor starting on a 256-byte boundary (the gaps stay zero),
// so GetState/SetState are one copy each and SGD is one kernel. TrainStep, Evaluate and
// ComputeGradients allocate nothing on the device; descriptors for another batch size are
// re-set in place (host calls) when n changes.
//
// Streams and synchronization: all work is queued on one compute stream (stream()), and
// TrainStep and Evaluate return without waiting for it: the batch's device memory must stay
// valid, unmodified, until the work queued so far has run (record an event on stream() after
// the call). Statistics stay on the device until Take*Stats, which synchronizes; so do GetState,
// SetState and ComputeGradients.
//
// Labels: the host cannot see device labels without waiting, so a label outside [0, classes) is
// found on the GPU. That batch then changes neither the parameters nor the statistics, and the
// next TrainStep, Evaluate or ComputeGradients that finds the record returns InvalidArgument
// naming the sample and label (ComputeGradients waits, so it reports its own batch).
//
// Determinism: with deterministic (the default) every step is bit-reproducible on one GPU and
// library version: deterministic cuDNN backward algorithms and pooling, cuBLAS without atomics,
// our reductions in a fixed order, and the same algorithms in every process (float32: cuDNN's
// heuristic choice; bf16: the timed search, whose choice reproduced from run to run on the H200
// but is not promised to: kernels/cuda_conv_block.h).
//
// Thread safety: none; one thread drives a backend. Calls make options.device current.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda_conv_block.h"
#include "kernels/cuda_done_clock.h"
#include "kernels/cuda_kernels.cuh"
#include "kernels/dnn_handles.h"
#include "kernels/reduce_buckets.h"

namespace rf {

struct CudaBackendOptions {
  int device = 0;
  // Let cuDNN and cuBLAS use TF32 tensor ops for float math (10-bit mantissa products, float
  // sums): several times faster convolutions on Ampere and later, at about 1e-3 relative error.
  bool tf32 = true;
  // bf16 mixed precision: the conv blocks' activations and filters in bfloat16, NHWC, on the
  // tensor cores (float accumulation); master weights, gradients handed out, the fully connected
  // layers, the loss and SGD stay float32. About 1e-2 relative error against float32.
  bool bf16 = false;
  // Only deterministic cuDNN backward algorithms (the fastest non-deterministic one where none
  // works) and deterministic max-pooling.
  bool deterministic = true;
  // Capture forward + backward of full batches (n == max_batch) in a CUDA graph after the first
  // one, and replay it; decoding and the optimizer update stay outside (their arguments change:
  // the scheduled lr and AdamW's bias corrections reach the update kernel as launch arguments
  // each step, never through the graph).
  bool cuda_graph = false;
  // The largest cuDNN workspace an algorithm may use.
  size_t workspace_limit = size_t{256} << 20;
  // The compute stream; null: the backend creates and owns one (non-blocking).
  cudaStream_t stream = nullptr;
  // Data-parallel steps (a GradientReducer set): how the gradient's mean over the ranks is
  // queued. 1: one reduction of the whole flat gradient after the backward pass, on the compute
  // stream. N > 1: at most N buckets (kernels/reduce_buckets.h), each reduced on the backend's
  // reduce stream (highest priority) as soon as the backward pass has written its layers'
  // gradients, while the backward pass goes on; the compute stream waits for the last bucket
  // before the finite check. 0: auto (kernels/reduce_buckets.h). The CUDA graph captures the
  // buckets' reductions with the rest (a fork to the reduce stream and a join back, by events).
  uint32_t reduce_buckets = 0;
};

class CudaBackend final : public Backend {
 public:
  // Fails with InvalidArgument for what CpuBackend::Create rejects (config, max_batch 0,
  // normalization length, initial parameter shapes) and for tensors too large for cuDNN's int
  // sizes; with Aborted, naming the call, where the GPU or a library fails (no device, out of
  // memory, no algorithm). Argument checks come before any CUDA call.
  static Result<std::unique_ptr<CudaBackend>> Create(const ModelConfig& config,
                                                     const Normalization& norm, uint32_t max_batch,
                                                     const Tensors& initial_params,
                                                     const CudaBackendOptions& options = {});
  ~CudaBackend() override;  // waits for the stream's work, then frees

  const char* name() const override { return "cuda"; }

  // Batches are checked on the host before any work: 1 <= n <= max_batch, sample and label
  // dtypes the backend reads, pointers the GPU can read. Labels: see the file comment.
  Status TrainStep(const Batch& batch, const OptimizerConfig& opt) override;
  Status Evaluate(const Batch& batch) override;
  StepStats TakeTrainStats() override;
  StepStats TakeEvalStats() override;

  Status GetState(Tensors* params, Tensors* optimizer_state) override;
  Status SetState(const Tensors& params, const Tensors& optimizer_state) override;
  // Batch norm's running statistics: on the device, moved by each applied TrainStep (after its
  // update, by the same step_bad record that gates it); these copy them (and synchronize).
  Status GetRunningStats(Tensors* stats) override;
  Status SetRunningStats(const Tensors& stats) override;

  Status ComputeGradients(const Batch& batch, double* mean_loss, Tensors* grads) override;
  Status WhenDone(DoneFn fn, void* arg) override;
  // Drops the step graph captured so far (without the reduction): the next full batch captures
  // it again, the ranks' all-reduce inside.
  Status SetGradientReducer(GradientReducer* reducer) override;

  cudaStream_t stream() const { return stream_; }
  bool tf32() const { return options_.tf32; }
  // TrainSteps that ran forward + backward by replaying the CUDA graph (with cuda_graph, every
  // full batch: the graph is captured, and launched once, in Create's warm-up, or after
  // SetGradientReducer by the next full batch). For tests.
  uint64_t graph_replays() const { return graph_replays_; }
  // The device, the math and the algorithm chosen for each conv block, one line each.
  std::string Describe() const;
  // The gradient's reduce buckets (reduce_buckets 1: one); a data-parallel step reduces in
  // these.
  const std::vector<ReduceBucket>& reduce_buckets() const { return buckets_; }

 private:
  // What lives on the device beside the tensors: statistics and the bad-label records.
  struct DeviceState {
    cuda::DeviceStats train, eval, scratch;
    unsigned long long step_bad, sticky_bad;
    float smoothing_train, smoothing_none;  // label smoothing of the training loss; 0
  };
  // The pinned host copy of what the host reads back.
  struct HostState {
    cuda::DeviceStats stats;
    unsigned long long sticky_bad;
    float smoothing;  // the source of smoothing_train's copy
  };
  struct BlockBuffers {
    cuda::DeviceBuffer act, pooled, pooled_grad;
    cuda::DeviceBuffer filter_bf16, filter_grad_bf16;  // bf16 mode: [out][3][3][in]
    // Batch norm: CudaConvBlock::Buffers' bn_saved, and in float32 mode its `norm`.
    cuda::DeviceBuffer bn_saved, norm;
  };

  CudaBackend(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
              const CudaBackendOptions& options);
  Status Init(const Tensors& initial_params);
  Status AllocateBuffers();
  Status ChooseAlgorithms();
  Status WarmUp();

  // Start of every call: an error Take*Stats could not return, the device, a bad label found
  // since (without waiting), and the batch's own checks.
  Status Begin(const Batch* batch);
  Status CheckBatch(const Batch& batch) const;
  // After every step: queue the copy of the bad-label record that Begin looks at.
  Status EndStep();
  Status ReportBadLabel(bool wait);
  // Sets descriptors for n (when it changed), decodes samples and labels.
  Status LoadBatch(const Batch& batch, const AugmentBatch& augment);
  cuda::CudaConvBlock::Buffers BlockArgs(size_t b) const;
  // The network on the loaded batch; adds its statistics to *stats (device memory; null: adds
  // nothing yet, TrainStep's FinishGradients does). The loss is label-smoothed by *smoothing
  // (device memory: DeviceState's smoothing_train for training, smoothing_none, always 0,
  // otherwise).
  // `training`: batch norm by the batch's statistics (else by the running ones).
  Status Forward(uint32_t n, cuda::DeviceStats* stats, const float* smoothing, bool training);
  // `reduce`: queue each reduce bucket's mean over the ranks as soon as its gradients are written
  // (bucketed data-parallel steps only; ComputeGradients reduces nothing).
  Status Backward(uint32_t n, bool reduce);
  // Backward's hook after backward unit `unit` (kernels/reduce_buckets.h) is written: forks the
  // buckets that end there to the reduce stream, and after the last joins the compute stream
  // to it.
  Status ReduceFinished(size_t unit);
  // Whether data-parallel steps reduce in buckets on the reduce stream (a reducer and more than
  // one bucket).
  bool Bucketed() const { return reducer_ != nullptr && buckets_.size() > 1; }
  // The forward pass's loss and hits into *stats, unless the step is recorded bad (or its loss
  // sum is not finite, which it then records).
  Status CountStep(uint32_t n, cuda::DeviceStats* stats);
  // TrainStep's, after the backward pass (and the mean over the ranks, where there are ranks):
  // records the step bad where the gradient is not finite, then counts it (CountStep) unless it
  // is bad.
  Status FinishGradients(uint32_t n);
  // Forward, Backward, the mean over the ranks (where there is a reducer) and FinishGradients:
  // what a training step's CUDA graph holds.
  Status Gradients(uint32_t n);
  const float* FcInput() const;
  // bf16 mode: the conv blocks' float32 master filters -> their bf16 copies.
  Status FiltersToBf16();
  // Bytes of one activation value: 2 in bf16 mode, else 4.
  size_t act_bytes() const { return options_.bf16 ? 2 : 4; }
  // Input channels of block b, and as its convolution sees them: in bf16 mode the input's
  // channels are padded to a multiple of 8 (kernels/cuda_bf16_kernels.cuh says why).
  uint32_t InChannels(size_t b) const { return b == 0 ? config_.channels : config_.conv[b - 1]; }
  uint32_t ConvInChannels(size_t b) const {
    return b == 0 && options_.bf16 ? (config_.channels + 7) / 8 * 8 : InChannels(b);
  }
  // Gradients for TrainStep, through the CUDA graph where it applies.
  Status ForwardBackward(uint32_t n);
  // Copies the training loss's label smoothing to the device where it changed.
  Status SetSmoothing(float smoothing);
  Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
              const float* b, int ldb, float* c, int ldc);
  StepStats TakeStats(cuda::DeviceStats* stats);

  float* Param(size_t t) const { return params_.as<float>() + offsets_[t]; }
  float* Grad(size_t t) const { return grads_.as<float>() + offsets_[t]; }
  DeviceState* state() const { return state_.as<DeviceState>(); }
  HostState* host() const { return host_.as<HostState>(); }

  ModelConfig config_;
  std::vector<float> mean_, stddev_;  // as given (the decode takes a 0 stddev as 1)
  uint32_t max_batch_;
  uint32_t flat_;
  CudaBackendOptions options_;
  std::vector<ParamShape> shapes_;
  std::vector<size_t> offsets_;    // of each tensor in the flat buffers, in floats
  size_t padded_count_ = 0;        // floats in each flat buffer
  std::vector<float> host_stage_;  // GetState/SetState's host side of the flat buffers

  // Declared first so it is destroyed last: everything below may have work queued on it.
  cuda::CudaStream owned_stream_;
  cudaStream_t stream_ = nullptr;
  // Bucketed reductions: the stream they run on (created with the first reducer that needs it),
  // an event a bucket (its gradients written, on stream_) and the join (the last reduction
  // done, on reduce_stream_).
  cuda::CudaStream reduce_stream_;
  std::vector<ReduceBucket> buckets_;
  std::vector<cuda::CudaEvent> bucket_ready_;
  cuda::CudaEvent reduced_;
  cuda::CudnnHandle cudnn_;
  cuda::CublasHandle cublas_;
  std::vector<cuda::CudaConvBlock> blocks_;
  std::vector<BlockBuffers> block_buffers_;
  cuda::DeviceBuffer params_, grads_, momentum_;
  cuda::DeviceBuffer second_moment_;  // AdamW's v (momentum_ holds its m)
  size_t slots_ = 1;                  // optimizer state slots in use (Backend::GetState)
  // The training loss's label smoothing as last copied to DeviceState::smoothing_train (the
  // captured graph reads it there, so it is never baked into the graph).
  float smoothing_ = 0.f;
  cuda::DeviceBuffer input_, labels_, act_grad_;
  cuda::DeviceBuffer transforms_;  // augmentation: a batch's SampleTransforms, drawn per batch
  // bf16 mode: fc1's float input and its gradient ([n][flat], C, H, W order), and the conv
  // blocks' bias-gradient scratch.
  cuda::DeviceBuffer fc_in_, fc_in_grad_, bias_partial_;
  cuda::DeviceBuffer hidden_, hidden_grad_, logits_, logits_grad_;
  cuda::DeviceBuffer row_loss_, row_correct_, ones_, norm_;
  // Batch norm: the running statistics (RunningStatShapes order, packed: every block's means,
  // then every block's variances; block b's at bn_offsets_[b] within each half) and, laid out
  // alike, each training forward's batch mean and unbiased variance, their update's targets.
  cuda::DeviceBuffer running_, bn_batch_;
  std::vector<size_t> bn_offsets_;
  size_t bn_channels_ = 0;  // the blocks' channels in all: floats in each half
  cuda::DeviceBuffer workspace_, cublas_workspace_, state_;
  cuda::PinnedBuffer host_;
  cuda::CudaEvent bad_copied_;
  bool bad_copy_pending_ = false;
  uint32_t batch_n_ = 0;  // the batch size the descriptors are set for
  cuda::CudaGraphExec graph_;
  bool graph_warmed_ = false;   // a full batch has run eagerly (lazy loading done)
  uint64_t graph_replays_ = 0;  // launches of graph_ after the one that follows its capture
  Status deferred_;             // a failure inside Take*Stats, returned by the next call
  double warm_up_ms_ = 0;
  // WhenDone's marks: more than the steps the host runs ahead (pipeline/stage/cuda_batch_gather.h).
  static constexpr uint32_t kDoneMarks = 32;
  std::unique_ptr<cuda::CudaDoneClock> done_clock_;
};

}  // namespace rf
