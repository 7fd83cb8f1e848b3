// CpuBackend: the reference implementation of the model (model/model.h) on the host, with
// im2col + OpenBLAS sgemm convolutions and sgemm fully connected layers. It is what runs the main
// job on machines without a GPU, and the yardstick the CUDA backend is checked against.
//
// Memory: Create() allocates every activation, gradient and workspace for batches of up to
// max_batch samples; TrainStep, Evaluate and ComputeGradients allocate nothing. Batch points to
// host memory, read only during the call.
//
// Threads: the batch is cut into chunks of kChunkImages images, and each block's work on a chunk
// (im2col, sgemm, pooling, and their backward passes) is one task for CpuWorkers, one thread per
// CPU this process may use. OpenBLAS itself is pinned to one thread per call (process-wide).
//
// Determinism: results are bit-identical for the same parameters, optimizer state and batch,
// whatever the thread count. The chunking depends only on the batch size; each task is a fixed
// sequence of float operations whichever thread runs it; the weight gradients of the chunks are
// summed in chunk order. (With OpenBLAS's own threading they were not: on one CPU one and two
// OpenBLAS threads gave different losses.) A checkpoint restored with SetState therefore continues
// bit-exactly on any machine with the same OpenBLAS kernel; across CPU models (AVX2 vs AVX-512
// kernels) results agree only to rounding.
//
// Thread safety: none; one thread drives a backend (which uses its own workers inside a call).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "kernels/backend.h"
#include "kernels/cpu_layers.h"
#include "kernels/cpu_workers.h"

namespace rf {

class CpuBackend final : public Backend {
 public:
  // Fails with InvalidArgument when the config is invalid, max_batch is 0, the normalization
  // does not have one mean and one std per channel, or initial_params do not match
  // ParameterShapes(config). The optimizer state starts at zero. threads: CPUs to use (0: every CPU
  // this process may run on); results do not depend on it.
  static Result<std::unique_ptr<CpuBackend>> Create(const ModelConfig& config,
                                                    const Normalization& norm, uint32_t max_batch,
                                                    const Tensors& initial_params,
                                                    unsigned threads = 0);

  const char* name() const override { return "cpu"; }

  // Batches are checked before any work: 1 <= n <= max_batch, a sample and a label dtype the
  // backend reads, and every label in [0, classes); a failed check changes nothing.
  Status TrainStep(const Batch& batch, const OptimizerConfig& opt) override;
  Status Evaluate(const Batch& batch) override;
  StepStats TakeTrainStats() override;
  StepStats TakeEvalStats() override;

  Status GetState(Tensors* params, Tensors* optimizer_state) override;
  Status SetState(const Tensors& params, const Tensors& optimizer_state) override;
  Status GetRunningStats(Tensors* stats) override;
  Status SetRunningStats(const Tensors& stats) override;

  Status ComputeGradients(const Batch& batch, double* mean_loss, Tensors* grads) override;
  // Sizes the flat buffer the gradient tensors are reduced through (one call per step).
  Status SetGradientReducer(GradientReducer* reducer) override;
  Status WhenDone(DoneFn fn, void* arg) override {
    fn(arg, SteadyNowNs());
    return Status::Ok();
  }

 private:
  // Images per task. Small enough to spread a batch of 64 over several CPUs, large enough that
  // each sgemm is wide (16 x 7 x 7 = 784 columns for a 28x28 input's third block).
  static constexpr uint32_t kChunkImages = 16;

  // One conv block's buffers, sized for max_batch; each CNHW (see kernels/cpu_layers.h).
  struct Block {
    cpu::ConvShape shape;    // channels and size; n and stride are set per call
    std::vector<float> out;  // the convolution before its bias: [Cout][N][H][W]
    // Batch norm: the statistics the last forward pass normalized each channel with.
    std::vector<float> bn_mean, bn_var, bn_invstd;
    std::vector<float> pooled;       // ReLU(pool(out) + bias): [Cout][N][H/2][W/2]
    std::vector<uint32_t> argmax;    // per pooled element, its source index in the `out` plane
    std::vector<float> out_grad;     // gradient w.r.t. out
    std::vector<float> pooled_grad;  // gradient w.r.t. pooled
    // Each chunk's share of the weight and bias gradients, [chunk][...], summed in chunk order.
    std::vector<float> weight_grad_parts;
    std::vector<double> bias_grad_parts;
  };

  CpuBackend(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
             const Tensors& initial_params, unsigned threads);

  Status CheckBatch(const Batch& batch) const;
  // Decodes the samples into input_ (decode/host_decode.h: normalized float32, CNHW), each through
  // its augmentation where `augment` has one on, and the labels into labels_. The batch must have
  // passed CheckBatch.
  void LoadBatch(const Batch& batch, const AugmentBatch& augment);
  // Runs the network on the loaded batch of n samples; returns the summed loss (label smoothing
  // `smoothing`), fills logits_grad_ with the gradient of the MEAN loss w.r.t. the logits and
  // *correct. evaluating: batch norm by the running statistics, not the batch's.
  double Forward(uint32_t n, uint64_t* correct, double smoothing, bool evaluating = false);
  // The update, from grads_ (model/model.h's OptimizerConfig states each).
  void ApplySgd(const OptimizerConfig& opt);
  void ApplyAdamW(const OptimizerConfig& opt);
  // Backpropagates logits_grad_ into grads_ (without weight decay).
  void Backward(uint32_t n);
  // Block b's work on chunk `chunk` of a batch of n: the convolution into `out`, and the tail
  // (+ bias, ReLU, pool) from `z` (out, or with batch norm norm_); backward, the tail's gradient
  // into out_grad, and the convolution's from it.
  void ConvForward(size_t b, uint32_t n, uint32_t chunk);
  void TailForward(size_t b, uint32_t n, uint32_t chunk, const float* z);
  void TailBackward(size_t b, uint32_t n, uint32_t chunk);
  void ConvBackward(size_t b, uint32_t n, uint32_t chunk);
  // Batch norm of block b's channel c over the batch of n, out -> norm_ (with the batch's
  // statistics, or the running ones while evaluating), and its backward pass on out_grad.
  void NormForward(size_t b, uint32_t n, uint32_t c, bool evaluating);
  void NormBackward(size_t b, uint32_t n, uint32_t c);
  // After an applied training step: the running statistics move toward the batch's.
  void UpdateRunningStats(uint32_t n);
  static uint32_t Chunks(uint32_t n) { return (n + kChunkImages - 1) / kChunkImages; }
  // With a reducer: grads_ -> reduce_buf_ -> the mean over the ranks -> grads_.
  Status ReduceGradients();
  // Block b's shape for chunk `chunk` of a batch of n.
  cpu::ConvShape ChunkShape(size_t b, uint32_t n, uint32_t chunk) const;

  // Parameter index of each tensor, in ParameterShapes order.
  size_t ConvWeight(size_t block) const { return 2 * block; }
  size_t ConvBias(size_t block) const { return 2 * block + 1; }
  size_t Fc1Weight() const { return 2 * blocks_.size(); }
  size_t Fc1Bias() const { return Fc1Weight() + 1; }
  size_t Fc2Weight() const { return Fc1Weight() + 2; }
  size_t Fc2Bias() const { return Fc1Weight() + 3; }
  size_t BnScale(size_t block) const { return Fc1Weight() + 4 + block; }

  ModelConfig config_;
  std::vector<float> mean_, stddev_;  // per channel, as given (the decode takes a 0 stddev as 1)
  uint32_t max_batch_;
  uint32_t flat_;  // inputs of fc1

  Tensors params_, grads_;
  // Optimizer state: kMaxOptimizerSlots slots of ParameterShapes tensors, allocated once; the first
  // slots_ are in use (SGD's velocity; AdamW's first, then second moments).
  Tensors state_;
  size_t slots_ = 1;
  std::vector<float> reduce_buf_;  // every gradient tensor back to back, for the reducer

  Tensors running_;          // batch norm's running statistics (RunningStatShapes)
  std::vector<float> norm_;  // batch norm's output, the largest block's [Cout][N][H][W]

  std::vector<float> input_;  // [C][N][H][W], normalized
  std::vector<int32_t> labels_;
  std::vector<Block> blocks_;
  std::vector<float> col_;  // im2col workspace [rows][N*H*W], the largest block's; chunks use
                            // their own columns, and reuse them for the col gradient
  std::vector<float> flat_rows_, flat_grad_;  // [N][flat]: the last pooled output as rows
  std::vector<float> hidden_, hidden_grad_;   // [N][hidden], after ReLU
  std::vector<float> logits_, logits_grad_;   // [N][classes]

  StepStats train_stats_, eval_stats_;
  std::unique_ptr<cpu::CpuWorkers> workers_;
};

}  // namespace rf
