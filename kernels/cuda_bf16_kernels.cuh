// Kernels of the CUDA backend's bf16 mode (CudaBackendOptions::bf16): the conv blocks keep their
// activations in bfloat16, NHWC (channels last), where cuDNN's tensor-core convolutions are
// fastest, while master weights, the fully connected layers, the loss and SGD stay in float32.
// These kernels do what sits between cuDNN's convolutions and the float32 rest:
//
//   decode   stored samples (NCHW, any dtype) -> normalized bf16 NHWC input
//   forward  y = conv(x) (cuDNN) -> pooled = maxpool2x2(relu(y + bias))     one fused pass
//   backward pooled_grad -> grad of y (through pool and ReLU, recomputed from y and bias)
//            -> bias gradient (a fixed-order reduction over n x H x W)
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

#include "io/augment.h"
#include "io/dtype.h"

namespace rf::cuda {

// out[s][h][w][c] = bf16((sample[s][c][h][w] - mean[c]) / stddev[c]) for c < channels, and 0
// for channels <= c < out_channels: the first block's input is padded to a multiple of 8
// channels, which cuDNN's tensor-core kernels need (their fallbacks are several times slower).
// Where `augment` has augmentation on, pixel (h, w) reads the sample pixel io/augment.h's
// transform says instead (0 in every channel where it says none); augment.indices in device
// memory. The value before the rounding to bf16 is the CPU backend's, bit for bit.
cudaError_t DecodeSamplesBf16Nhwc(const void* samples, DType dtype, uint32_t n, uint32_t channels,
                                  uint32_t out_channels, uint32_t height, uint32_t width,
                                  const float* mean, const float* stddev,
                                  const AugmentBatch& augment, void* out, cudaStream_t stream);

// pooled[n][H/2][W/2][C] = max over each 2x2 window of relu(y + bias[c]), y bf16 [n][H][W][C].
cudaError_t BiasReluPoolBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                             const void* y, const float* bias, void* pooled, cudaStream_t stream);

// y_grad (bf16 [n][H][W][C]) = the gradient w.r.t. y given pooled_grad (bf16
// [n][H/2][W/2][C]): pooled_grad at each window's arg-max where its value is positive, else 0
// (also 0 in an odd last row or column, which no window covers). Then bias_grad[c] = sum of
// y_grad over n, H, W, through `partial` (float scratch of BiasGradPartials(...) values).
cudaError_t PoolReluBackwardBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                                 const void* y, const float* bias, const void* pooled_grad,
                                 void* y_grad, float* partial, float* bias_grad,
                                 cudaStream_t stream);
size_t BiasGradPartials(uint32_t channels);

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
