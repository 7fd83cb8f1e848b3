// Kernels of the CUDA backend's bf16 mode (CudaBackendOptions::bf16): the conv blocks keep their
// activations in bfloat16, NHWC (channels last), where cuDNN's tensor-core convolutions are
// fastest, while master weights, the fully connected layers, the loss and SGD stay in float32.
// These kernels do what sits between cuDNN's convolutions and the float32 rest:
//
//   decode   stored samples (NCHW, any dtype) -> normalized bf16 NHWC input
//   forward  y = conv(x) (cuDNN) -> pooled = maxpool2x2(relu(y + bias))     one fused pass
//            (with batch norm: statistics of y in one pass first, then the same pass with
//            relu(y * gain + shift))
//   backward pooled_grad -> grad of y (through pool and ReLU, recomputed from y and bias)
//            -> bias gradient (a fixed-order reduction over n x H x W); with batch norm then
//            the scale's gradient (one more reduction) and y's through the normalization
//   weights  float32 [K][C][3][3] master <-> bf16 [K][3][3][C] (cuDNN's NHWC filter layout)
//   flatten  last block's bf16 NHWC output <-> float32 [n][C*H*W] in C, H, W order (fc1's input)
//
// As in kernels/cuda_kernels.cuh: host launchers only, no synchronization or allocation, graph
// capturable, and deterministic (no floating-point atomics). Pooling takes the first of equal
// maxima in window order (row by row), as the CPU backend does.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"

namespace rf::cuda {

// out[s][h][w][c] = bf16((sample[s][c][h][w] - mean[c]) / stddev[c]) for c < channels, and 0
// for channels <= c < out_channels: the first block's input is padded to a multiple of 8
// channels, which cuDNN's tensor-core kernels need (their fallbacks are several times slower).
// A stddev of 0 is taken as 1. Where `augment` has augmentation on, pixel (h, w) reads the sample
// pixel core/augment.h's transform says instead (0 in every channel where it says none);
// augment.indices (or augment.transforms) in device memory. decode/'s decode (decode/kernel.cuh):
// the value before the rounding to bf16 is the CPU backend's, bit for bit, NaNs aside.
cudaError_t DecodeSamplesBf16Nhwc(const void* samples, DType dtype, uint32_t n, uint32_t channels,
                                  uint32_t out_channels, uint32_t height, uint32_t width,
                                  const float* mean, const float* stddev,
                                  const AugmentBatch& augment, void* out, cudaStream_t stream);

// The per-channel map between the convolution's output y and the ReLU's input v:
// v = y * gain[c] + shift[c]. Without batch norm gain is null (1) and shift the conv bias; with
// it, BatchNormStatsBf16 or BatchNormRunningAffineBf16 below write both.
struct ChannelAffine {
  const float* gain = nullptr;   // [C], or null for 1
  const float* shift = nullptr;  // [C]
};

// pooled[n][H/2][W/2][C] = max over each 2x2 window of relu(v), v = y * gain + shift as above,
// y bf16 [n][H][W][C].
cudaError_t BiasReluPoolBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                             const void* y, const ChannelAffine& affine, void* pooled,
                             cudaStream_t stream);

// v_grad (bf16 [n][H][W][C]) = the gradient w.r.t. v given pooled_grad (bf16
// [n][H/2][W/2][C]): pooled_grad at each window's arg-max where its value is positive, else 0
// (also 0 in an odd last row or column, which no window covers). Then shift_grad[c] = sum of
// v_grad over n, H, W (the conv bias's gradient), through `partial` (float scratch of
// BiasGradPartials(...) values). Without batch norm v_grad is also y's gradient.
cudaError_t PoolReluBackwardBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                                 const void* y, const ChannelAffine& affine,
                                 const void* pooled_grad, void* v_grad, float* partial,
                                 float* shift_grad, cudaStream_t stream);
size_t BiasGradPartials(uint32_t channels);

// Batch normalization (model/model.h) of y over its m = n x H x W values a channel, as the
// CPU backend computes it, with float sums of a fixed order in place of its double ones (and its
// variance from moments about a channel's first value rather than a second pass).
// `saved` holds 4 x C floats: the batch's mean, 1 / sqrt(var + eps) (var its biased variance),
// then the ChannelAffine gain and shift: gain = scale * invstd, shift = bias - mean * gain.
//
// Training: writes all four from the batch (one pass over y, through `partial`: scratch of
// BatchNormPartials(C) floats), and the running statistics' targets: batch_mean[c] (= the mean)
// and batch_var[c] (the unbiased variance, var * m / (m - 1) with the factor rounded to float, 1
// where m = 1).
cudaError_t BatchNormStatsBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                               const void* y, const float* scale, const float* bias, float* partial,
                               float* saved, float* batch_mean, float* batch_var,
                               cudaStream_t stream);
size_t BatchNormPartials(uint32_t channels);
// Evaluation: the gain and shift from the running statistics (saved's mean and invstd unused).
cudaError_t BatchNormRunningAffineBf16(uint32_t channels, const float* scale, const float* bias,
                                       const float* running_mean, const float* running_var,
                                       float* saved, cudaStream_t stream);
// The backward pass through the normalization, after PoolReluBackwardBf16: v_grad in, y_grad
// out (in place), with xhat = (y - mean) * invstd from the training forward's `saved`:
//   scale_grad[c] = sum of v_grad * xhat;
//   y_grad = scale * invstd * (v_grad - shift_grad / m - xhat * scale_grad / m).
cudaError_t BatchNormBackwardBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                                  const void* y, const float* saved, const float* scale,
                                  const float* shift_grad, void* grad, float* partial,
                                  float* scale_grad, cudaStream_t stream);

// w_bf16[k][r][s][c] = bf16(w[k][c][r][s]) for a 3x3 filter bank of in_channels inputs, stored
// with padded_in >= in_channels channels (the padding's weights 0).
cudaError_t FilterToBf16Khwc(uint32_t out_channels, uint32_t in_channels, uint32_t padded_in,
                             const float* w, void* w_bf16, cudaStream_t stream);
// g[k][c][r][s] = float(g_bf16[k][r][s][c]) for c < in_channels (the padding's are dropped).
cudaError_t FilterGradToFloatKchw(uint32_t out_channels, uint32_t in_channels, uint32_t padded_in,
                                  const void* g_bf16, float* g, cudaStream_t stream);

// out[s][c][h][w] = float(x[s][h][w][c]), and back: x_grad[s][h][w][c] = bf16(g[s][c][h][w]).
cudaError_t NhwcBf16ToFlat(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                           const void* x, float* out, cudaStream_t stream);
cudaError_t FlatToNhwcBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                           const float* g, void* x_grad, cudaStream_t stream);

}  // namespace rf::cuda
