// The CUDA backend's own kernels, for the work cuDNN and cuBLAS do not do: decoding stored samples
// and labels, the fully connected layers' bias and ReLU, softmax cross-entropy with its
// statistics, and the SGD update. Host-side launchers only (this header compiles as plain C++);
// each queues its kernel on `stream` and returns the launch's status for RF_CUDA_CHECK. None
// synchronizes, allocates or reads device memory on the host, so all of them may be captured in
// a CUDA graph.
//
// Determinism: every kernel gives bit-identical results for the same inputs; reductions run in a
// fixed order that depends only on the sizes (no floating-point atomics).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"

namespace rf::cuda {

// Loss and accuracy sums kept on the device between the host's Take*Stats calls.
struct DeviceStats {
  double loss_sum;
  unsigned long long correct;
  unsigned long long samples;
};

// A bad label, recorded on the device as (sample index << 32) | (label as uint32) and combined
// with atomicMin, so the lowest sample index wins whatever the thread order. kNoBadLabel: none.
constexpr unsigned long long kNoBadLabel = ~0ull;
// The record of a batch whose loss or gradient is not finite (a diverged run): above every label
// record (no batch has 2^32 - 1 samples), so a bad label in the same batch is the one reported.
constexpr unsigned long long kNonFiniteLoss = ~0ull - 1;

// out[i] = (sample[i] - mean[c]) / stddev[c] for the n x channels x height x width values of a
// batch (NCHW, c the channel of element i), read as `dtype` (uint8, float16, bfloat16 or float32);
// a stddev of 0 is taken as 1. Where `augment` has augmentation on, element i reads the sample
// element core/augment.h's transform says instead (and is 0 where it says none); augment.indices
// (or augment.transforms) in device memory. decode/'s decode (decode/kernel.cuh), as the CPU
// backend's: the decoded input is bit-identical to its, NaNs aside (NanBits::kGpuNative).
cudaError_t DecodeSamples(const void* samples, DType dtype, uint32_t n, uint32_t channels,
                          uint32_t height, uint32_t width, const float* mean, const float* stddev,
                          const AugmentBatch& augment, float* out, cudaStream_t stream);

// out[i] = labels[i] as int32 (labels in uint8, uint16, int32 or int64; decode/kernel.cuh's label
// kernel, cudaErrorInvalidValue for another dtype). A label outside [0, classes)
// becomes 0 in `out` (so later kernels index safely) and is recorded, by atomicMin, in both
// *step_bad (which the caller resets to kNoBadLabel before each batch) and *sticky_bad (which
// only the host resets, once it has reported the error).
cudaError_t DecodeLabels(const void* labels, DType dtype, uint32_t n, uint32_t classes,
                         int32_t* out, unsigned long long* step_bad, unsigned long long* sticky_bad,
                         cudaStream_t stream);

// Row-major y[rows][cols] += bias[cols], then ReLU if `relu` (fully connected layers).
cudaError_t AddBiasRelu(uint32_t rows, uint32_t cols, const float* bias, bool relu, float* y,
                        cudaStream_t stream);
// grad[i] = 0 where out[i] (a ReLU's output) is not positive.
cudaError_t ReluBackward(size_t count, const float* out, float* grad, cudaStream_t stream);

// Per row of logits[n][classes], as the CPU backend (kernels/cpu_layers.h) computes it: the
// cross-entropy against q = (1 - E) * onehot(labels[i]) + E / classes, E = *smoothing (device
// memory, so a captured graph reads the current value), through a double log-sum-exp, into
// row_loss[i]; whether the arg-max (the first of equal maxima) is the label, into
// row_correct[i]; and grad = (softmax - q) * scale.
cudaError_t SoftmaxCrossEntropy(uint32_t n, uint32_t classes, const float* logits,
                                const int32_t* labels, float scale, const float* smoothing,
                                float* grad, double* row_loss, uint32_t* row_correct,
                                cudaStream_t stream);

// Adds the n rows' loss and correct counts, and n samples, to *stats, unless *step_bad records a
// bad label in this batch (which then counts nothing). One block, fixed summation order. A batch
// whose loss sum is not finite counts nothing either and is recorded as kNonFiniteLoss in
// *step_bad (so SgdMomentum leaves the parameters as they were) and, by atomicMin, *sticky_bad.
cudaError_t AccumulateStats(uint32_t n, const double* row_loss, const uint32_t* row_correct,
                            unsigned long long* step_bad, unsigned long long* sticky_bad,
                            DeviceStats* stats, cudaStream_t stream);

// Records kNonFiniteLoss in *step_bad and *sticky_bad (atomicMin: a bad label's record stays)
// where any of the `count` floats (a multiple of 4, 16-byte aligned) is NaN or infinite: a
// gradient that a ReLU or a pooling window hid from the loss (an infinite input that some
// convolution algorithms turn into NaN, which ReLU maps to 0) still stops the step.
cudaError_t CheckFinite(size_t count, const float* values, unsigned long long* step_bad,
                        unsigned long long* sticky_bad, cudaStream_t stream);

// torch.optim.SGD over one flat buffer of `count` floats (a multiple of 4, 16-byte aligned):
// g' = g + weight_decay * w; v = momentum * v + g'; w -= lr * v. Each product and sum is rounded
// separately (no fused multiply-add), as the CPU backend's loop, so both give the same bits for
// the same inputs. Does nothing when *step_bad records a bad label or a non-finite step.
cudaError_t SgdMomentum(size_t count, float lr, float momentum, float weight_decay,
                        const float* grad, float* weights, float* velocity,
                        const unsigned long long* step_bad, cudaStream_t stream);

// torch.optim.AdamW over one flat buffer of `count` floats (a multiple of 4, 16-byte aligned),
// with the factors model/model.h's OptimizerFactors computes on the host each step:
//   w *= decay; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g g;
//   w -= step_size * m / (sqrt(v) / sqrt_bc2 + eps)
// each operation rounded separately, as the CPU backend's loop. Does nothing when *step_bad
// records a bad label in this batch.
struct AdamWArgs {
  float decay, beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, sqrt_bc2, eps;
};
cudaError_t AdamW(size_t count, const AdamWArgs& args, const float* grad, float* weights,
                  float* first_moment, float* second_moment, const unsigned long long* step_bad,
                  cudaStream_t stream);

// Batch normalization's running statistics (model/model.h): running[i] += momentum *
// (batch[i] - running[i]) for the `count` floats, each operation rounded as the CPU backend's
// loop: one call moves every block's means and variances, laid out alike in both buffers.
// Does nothing when *step_bad records a bad label or a non-finite step: the statistics move
// only with the steps that are applied.
cudaError_t UpdateRunningStats(size_t count, float momentum, const float* batch, float* running,
                               const unsigned long long* step_bad, cudaStream_t stream);

}  // namespace rf::cuda
