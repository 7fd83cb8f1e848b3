// The model ringfeed trains, described independently of any backend: a small CNN of N blocks
// (3x3 convolution with padding 1, bias, ReLU, 2x2 max-pool with stride 2, rounding down; with
// batch_norm, batch normalization between the convolution and the ReLU),
// then fully connected -> ReLU -> fully connected, trained with softmax cross-entropy (label
// smoothing optional) and SGD with momentum and weight decay or AdamW (OptimizerConfig). The same
// description drives the CUDA backend (cuDNN, cuBLAS) and the CPU reference backend (im2col +
// OpenBLAS sgemm), so both compute the same function and a checkpoint of one loads in the other.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace rf {

struct ModelConfig {
  // Input shape and class count: from the dataset header.
  uint32_t channels = 3, height = 32, width = 32;
  uint32_t classes = 10;
  // Output channels of each conv block, and the width of the hidden fully connected layer.
  std::vector<uint32_t> conv = {32, 64, 128};
  uint32_t hidden = 256;
  // Batch normalization after each convolution (per channel over the batch and the plane):
  //   training:   z = scale * (x - mean_B) / sqrt(var_B + eps) + bias, with the batch's mean and
  //               (biased) variance, each step moving the running statistics
  //               r_mean += momentum * (mean_B - r_mean), r_var += momentum * (var_B' - r_var),
  //               var_B' the unbiased variance (m / (m - 1) var_B, m = batch x plane);
  //   evaluation: the same with the running statistics (start: mean 0, variance 1).
  // The conv block's bias is then the normalization's shift (added after it, as without it); its
  // scale is a parameter tensor of its own (ParameterShapes). eps and momentum: below (PyTorch's
  // BatchNorm2d defaults). Under data parallelism each rank normalizes by its own batch and
  // keeps its own running statistics (rank 0's go into checkpoints and evaluation).
  bool batch_norm = false;

  // Spatial size after block i's pooling (i = -1: the input).
  uint32_t HeightAfter(int block) const;
  uint32_t WidthAfter(int block) const;
  // Inputs of the first fully connected layer: last conv channels x H x W after the last pool.
  // (Validate checks that it fits.)
  uint32_t FlatFeatures() const;
  // InvalidArgument unless: every count > 0, at least 2 classes, every pooled size >= 1, and the
  // model's size computed without overflow: FlatFeatures() and every parameter tensor, and their
  // sum, at most kMaxModelParameters (the backends' BLAS and cuDNN calls take int sizes). So a
  // model it accepts sizes nothing that wraps, whatever its fields came from (flags or a file).
  Status Validate() const;
};

// The most parameters a model may have (2^31 - 1: 8 GiB of float32 per copy, and the largest
// count the BLAS and cuDNN calls can take).
inline constexpr uint64_t kMaxModelParameters = 0x7fffffffu;

inline constexpr float kBatchNormEps = 1e-5f;
inline constexpr float kBatchNormMomentum = 0.1f;

// One parameter tensor. Order and layout are fixed and shared by every backend:
//   for each block i: conv{i}.weight [out, in, 3, 3], conv{i}.bias [out]
//   fc1.weight [hidden, flat], fc1.bias [hidden], fc2.weight [classes, hidden], fc2.bias [classes]
//   with batch_norm, then for each block i: bn{i}.scale [out]
// (row-major; "flat" is the last block's output in C, H, W order).
struct ParamShape {
  std::string name;
  std::vector<uint32_t> dims;
  size_t count() const;
};
std::vector<ParamShape> ParameterShapes(const ModelConfig& c);
size_t ParameterCount(const ModelConfig& c);

// Host copies of the parameters (and, for the optimizer, momentum buffers), one flat vector per
// tensor in ParameterShapes order.
struct Tensors {
  std::vector<std::vector<float>> t;
};

// Deterministic initialization, the same on every backend: weights uniform in
// +-sqrt(6 / fan_in) (He-uniform), biases zero, batch-norm scales one.
Tensors InitialParameters(const ModelConfig& c, uint64_t seed);
Tensors ZerosLike(const ModelConfig& c);

// Batch normalization's running statistics (not parameters: no gradient, no optimizer state):
// with batch_norm, bn{i}.running_mean [out] for each block, then bn{i}.running_var [out] for each
// block; none without it. InitialRunningStats: means 0, variances 1.
std::vector<ParamShape> RunningStatShapes(const ModelConfig& c);
Tensors InitialRunningStats(const ModelConfig& c);

// How stored samples become the network's float input: x = (v - mean[c]) / std[c] per channel
// (std 0 is treated as 1), with the dataset header's statistics.
struct Normalization {
  std::vector<float> mean, stddev;
};

// The optimizer a training step applies after the backward pass, and the loss it differentiates.
enum class OptimizerKind : uint32_t { kSgd = 0, kAdamW = 1 };
// Tensors of optimizer state per parameter tensor: SGD's velocity; AdamW's first and second
// moments.
inline size_t OptimizerSlots(OptimizerKind k) { return k == OptimizerKind::kAdamW ? 2 : 1; }

// What a training step does besides forward and backward. The trainer passes one per step, with
// lr from the schedule (model/lr_schedule.h) and adam_step set.
//
// SGD (torch.optim.SGD, dampening 0, no Nesterov):
//   g' = g + weight_decay * w;  v = momentum * v + g';  w -= lr * v
// AdamW (torch.optim.AdamW, amsgrad off), t = adam_step:
//   w *= 1 - lr * weight_decay                      (decoupled: not through the moments)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   w -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// with every product, quotient and sum rounded to float in that order on both backends (the
// factors lr * weight_decay, lr / (1 - beta1^t) and sqrt(1 - beta2^t) are computed on the host
// once per step: OptimizerFactors).
// Label smoothing E: the training loss is the cross-entropy against (1 - E) * onehot + E / K
// (K classes); evaluation reports the plain cross-entropy.
struct OptimizerConfig {
  float lr = 0.01f;
  float momentum = 0.9f;       // SGD only
  float weight_decay = 5e-4f;  // SGD: added to the gradient; AdamW: decoupled, scaled by lr
  OptimizerKind kind = OptimizerKind::kSgd;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // AdamW only
  float label_smoothing = 0.f;                      // 0 <= E < 1
  uint64_t adam_step = 1;  // AdamW: this update's 1-based count t, for the bias corrections
};

// AdamW's per-step factors (see OptimizerConfig), computed in double and rounded to float once.
struct AdamWFactors {
  float decay;  // 1 - lr * weight_decay
  float one_minus_beta1, one_minus_beta2;
  float step_size;  // lr / (1 - beta1^t)
  float sqrt_bc2;   // sqrt(1 - beta2^t)
};
AdamWFactors OptimizerFactors(const OptimizerConfig& o);

}  // namespace rf
