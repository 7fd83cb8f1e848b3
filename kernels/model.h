// The model ringfeed trains, described independently of any backend: a small CNN of N blocks
// (3x3 convolution with padding 1, bias, ReLU, 2x2 max-pool with stride 2, rounding down),
// then fully connected -> ReLU -> fully connected, trained with softmax cross-entropy and SGD
// with momentum and weight decay. The same description drives the CUDA backend (cuDNN, cuBLAS)
// and the CPU reference backend (im2col + OpenBLAS sgemm), so both compute the same function
// and a checkpoint of one loads in the other.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/dtype.h"
#include "io/status.h"

namespace rf {

struct ModelConfig {
  // Input shape and class count: from the dataset header.
  uint32_t channels = 3, height = 32, width = 32;
  uint32_t classes = 10;
  // Output channels of each conv block, and the width of the hidden fully connected layer.
  std::vector<uint32_t> conv = {32, 64, 128};
  uint32_t hidden = 256;

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

// One parameter tensor. Order and layout are fixed and shared by every backend:
//   for each block i: conv{i}.weight [out, in, 3, 3], conv{i}.bias [out]
//   fc1.weight [hidden, flat], fc1.bias [hidden], fc2.weight [classes, hidden], fc2.bias [classes]
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
// +-sqrt(6 / fan_in) (He-uniform), biases zero.
Tensors InitialParameters(const ModelConfig& c, uint64_t seed);
Tensors ZerosLike(const ModelConfig& c);

// How stored samples become the network's float input: x = (v - mean[c]) / std[c] per channel
// (std 0 is treated as 1), with the dataset header's statistics.
struct Normalization {
  std::vector<float> mean, stddev;
};

struct SgdConfig {
  float lr = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;  // added to the gradient of every parameter, as torch.optim.SGD
};

}  // namespace rf
