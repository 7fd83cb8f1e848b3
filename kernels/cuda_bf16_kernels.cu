#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "decode/kernel.cuh"
#include "kernels/cuda_bf16_kernels.cuh"
#include "model/model.h"

namespace rf::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;
// Blocks of the backward pass's bias-gradient reduction: its partial sums are [kPartials][C]. A
// constant, so the summation order (and the bits) do not depend on the GPU.
constexpr uint32_t kPartials = 512;

unsigned Blocks(size_t count) {
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

// Blocks of kThreads for one thread a channel.
unsigned ChannelBlocks(uint32_t channels) { return (channels + kThreads - 1) / kThreads; }

#define RF_GRID_STRIDE(i, count)                                              \
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < (count); \
       i += size_t{blockDim.x} * gridDim.x)

// Channel c's gain (1 without batch norm) and shift.
struct Affine {
  float gain, shift;
  __device__ Affine(const ChannelAffine& a, uint32_t c)
      : gain(a.gain != nullptr ? a.gain[c] : 1.f), shift(a.shift[c]) {}
  // y * 1 + shift rounds once, as y + shift does: without batch norm, the same bits as before.
  __device__ float operator()(bf16 y) const { return __fmaf_rn(__bfloat162float(y), gain, shift); }
};

// The 2x2 window at (ph, pw) of channel c in image s: its four values of v = y * gain + shift,
// row by row.
struct Window {
  float v[4];
  __device__ Window(const bf16* y, uint32_t height, uint32_t width, uint32_t channels, size_t s,
                    uint32_t ph, uint32_t pw, uint32_t c, const Affine& a) {
    const size_t row = size_t{width} * channels;
    const bf16* top = y + (s * height + 2 * ph) * row + size_t{2 * pw} * channels + c;
    v[0] = a(top[0]);
    v[1] = a(top[channels]);
    v[2] = a(top[row]);
    v[3] = a(top[row + channels]);
  }
  // The first of equal maxima, in window order.
  __device__ int ArgMax() const {
    int best = 0;
    for (int k = 1; k < 4; ++k) {
      if (v[k] > v[best]) best = k;
    }
    return best;
  }
};

__global__ void BiasReluPoolKernel(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                                   const bf16* y, ChannelAffine affine, bf16* pooled) {
  const uint32_t ph_count = height / 2, pw_count = width / 2;
  const size_t count = size_t{n} * ph_count * pw_count * channels;
  RF_GRID_STRIDE(i, count) {
    const auto c = static_cast<uint32_t>(i % channels);
    size_t rest = i / channels;
    const auto pw = static_cast<uint32_t>(rest % pw_count);
    rest /= pw_count;
    const auto ph = static_cast<uint32_t>(rest % ph_count);
    const size_t s = rest / ph_count;
    const Window w(y, height, width, channels, s, ph, pw, c, Affine(affine, c));
    pooled[i] = __float2bfloat16_rn(fmaxf(w.v[w.ArgMax()], 0.f));
  }
}

// Block (b, tile) takes the 32 channels of its tile (threadIdx.x) in 8 lanes (threadIdx.y) over
// windows b + kPartials * lane, then every 8 * kPartials-th: each writes the gradient of its
// window's four positions and adds what it routed to its channel's sum; the lanes are then added
// in order into partial[b][c]. The windows run over ceil(H/2) x ceil(W/2), so an odd last row or
// column, which no window pools, gets its zeros in the same pass.
__global__ void PoolReluBackwardKernel(uint32_t n, uint32_t height, uint32_t width,
                                       uint32_t channels, const bf16* y, ChannelAffine affine,
                                       const bf16* pooled_grad, bf16* y_grad, float* partial) {
  __shared__ float lanes[8][33];
  const uint32_t c = blockIdx.y * 32 + threadIdx.x;
  const uint32_t ph_count = height / 2, pw_count = width / 2;
  const uint32_t eh = (height + 1) / 2, ew = (width + 1) / 2;
  const size_t windows = size_t{n} * eh * ew, row = size_t{width} * channels;
  const bf16 zero = __float2bfloat16_rn(0.f);
  float sum = 0.f;
  if (c < channels) {
    const Affine a(affine, c);
    for (size_t w = blockIdx.x + size_t{threadIdx.y} * kPartials; w < windows; w += 8 * kPartials) {
      const auto pw = static_cast<uint32_t>(w % ew);
      const auto ph = static_cast<uint32_t>((w / ew) % eh);
      const size_t s = w / (size_t{ew} * eh);
      bf16* out = y_grad + (s * height + 2 * ph) * row + size_t{2 * pw} * channels + c;
      if (ph < ph_count && pw < pw_count) {
        const Window win(y, height, width, channels, s, ph, pw, c, a);
        const int best = win.ArgMax();
        bf16 g = zero;
        if (win.v[best] > 0.f) {
          g = pooled_grad[((s * ph_count + ph) * pw_count + pw) * channels + c];
          sum += __bfloat162float(g);
        }
        out[0] = best == 0 ? g : zero;
        out[channels] = best == 1 ? g : zero;
        out[row] = best == 2 ? g : zero;
        out[row + channels] = best == 3 ? g : zero;
      } else {
        const bool right = 2 * pw + 1 < width, below = 2 * ph + 1 < height;
        out[0] = zero;
        if (right) out[channels] = zero;
        if (below) out[row] = zero;
        if (right && below) out[row + channels] = zero;
      }
    }
  }
  lanes[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float total = 0.f;
    for (int l = 0; l < 8; ++l) total += lanes[l][threadIdx.x];
    partial[size_t{blockIdx.x} * channels + c] = total;
  }
}

// --- Channel reductions ----------------------------------------------------------------------
// Partial sums are [kPartials][C] floats (or two such arrays); a final kernel adds each channel's
// kPartials in a fixed order, one warp a channel: each lane every 32nd partial in double, then a
// shuffle tree of fixed shape. Warps of a block take consecutive channels.
constexpr uint32_t kWarpsPerBlock = kThreads / 32;

unsigned WarpBlocks(uint32_t channels) { return (channels + kWarpsPerBlock - 1) / kWarpsPerBlock; }

// Channel c's total of partial[b][c] over b, valid in lane 0 of the warp that calls it (whole
// warps only).
__device__ double WarpTotal(const float* partial, uint32_t channels, uint32_t c) {
  double total = 0;
  for (uint32_t b = threadIdx.x % 32; b < kPartials; b += 32) {
    total += partial[size_t{b} * channels + c];
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    total += __shfl_down_sync(0xffffffffu, total, offset);
  }
  return total;
}

// This warp's channel, or `channels` (past the end) for a warp beyond the last.
__device__ uint32_t WarpChannel(uint32_t channels) {
  const uint32_t c = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  return c < channels ? c : channels;
}

__global__ void ChannelTotalsKernel(uint32_t channels, const float* partial, float* bias_grad) {
  const uint32_t c = WarpChannel(channels);
  if (c == channels) return;  // the whole warp
  const double total = WarpTotal(partial, channels, c);
  if (threadIdx.x % 32 == 0) bias_grad[c] = static_cast<float>(total);
}

// --- Batch normalization -------------------------------------------------------------------

// What ChannelPartialsKernel sums over a channel's m values.
enum class Term {
  kMoments,        // d and d * d, d = y - y[0][c]: two sums, into partial and partial + P x C
  kGradTimesXhat,  // g * (y - mean) * invstd
};

// Block (b, tile) takes the 32 channels of its tile (threadIdx.x) in 8 lanes (threadIdx.y) over
// pixels b + kPartials * lane, then every 8 * kPartials-th, as PoolReluBackwardKernel does, and
// writes the lanes' sums, added in order, to partial[b][c]. y and g are bf16 [pixels][C]; mean
// and invstd are read where the term needs them.
//
// The moments are taken about the channel's first value (a shift, not the mean: one pass), so
// the variance S2 / m - (S1 / m)^2 does not cancel away as raw sums of squares would where a
// channel's mean is large next to its spread.
template <Term T>
__global__ void ChannelPartialsKernel(size_t pixels, uint32_t channels, const bf16* y,
                                      const bf16* g, const float* mean, const float* invstd,
                                      float* partial) {
  __shared__ float lanes[2][8][33];
  const uint32_t c = blockIdx.y * 32 + threadIdx.x;
  float sum = 0.f, sum2 = 0.f;
  if (c < channels) {
    if constexpr (T == Term::kMoments) {
      const float shift = __bfloat162float(y[c]);
      for (size_t p = blockIdx.x + size_t{threadIdx.y} * kPartials; p < pixels;
           p += 8 * kPartials) {
        const float d = __bfloat162float(y[p * channels + c]) - shift;
        sum += d;
        sum2 += d * d;
      }
    } else {
      const float mu = mean[c], is = invstd[c];
      for (size_t p = blockIdx.x + size_t{threadIdx.y} * kPartials; p < pixels;
           p += 8 * kPartials) {
        const float v = __bfloat162float(y[p * channels + c]);
        sum += __bfloat162float(g[p * channels + c]) * ((v - mu) * is);
      }
    }
  }
  lanes[0][threadIdx.y][threadIdx.x] = sum;
  lanes[1][threadIdx.y][threadIdx.x] = sum2;
  __syncthreads();
  if (threadIdx.y < (T == Term::kMoments ? 2 : 1) && c < channels) {
    float total = 0.f;
    for (int l = 0; l < 8; ++l) total += lanes[threadIdx.y][l][threadIdx.x];
    partial[(size_t{threadIdx.y} * kPartials + blockIdx.x) * channels + c] = total;
  }
}

template <Term T>
void LaunchChannelPartials(size_t pixels, uint32_t channels, const bf16* y, const bf16* g,
                           const float* mean, const float* invstd, float* partial,
                           cudaStream_t stream) {
  const dim3 grid(kPartials, (channels + 31) / 32), block(32, 8);
  ChannelPartialsKernel<T>
      <<<grid, block, 0, stream>>>(pixels, channels, y, g, mean, invstd, partial);
}

// saved = [mean | invstd | gain | shift], C floats each (see the header).
__global__ void BatchStatsKernel(uint32_t channels, double m, const bf16* y, const float* partial,
                                 const float* scale, const float* bias, float* saved,
                                 float* batch_mean, float* batch_var) {
  const uint32_t c = WarpChannel(channels);
  if (c == channels) return;
  const double s1 = WarpTotal(partial, channels, c) / m;
  const double s2 = WarpTotal(partial + size_t{kPartials} * channels, channels, c) / m;
  if (threadIdx.x % 32 != 0) return;
  const auto mean = static_cast<float>(__bfloat162float(y[c]) + s1);
  const auto var = static_cast<float>(fmax(s2 - s1 * s1, 0.0));
  const float invstd = 1.f / sqrtf(var + kBatchNormEps);
  const float gain = scale[c] * invstd;
  saved[c] = mean;
  saved[channels + c] = invstd;
  saved[2 * channels + c] = gain;
  saved[3 * channels + c] = bias[c] - mean * gain;
  batch_mean[c] = mean;
  const float unbias = m > 1 ? static_cast<float>(m / (m - 1)) : 1.f;
  batch_var[c] = var * unbias;
}

__global__ void RunningAffineKernel(uint32_t channels, const float* scale, const float* bias,
                                    const float* running_mean, const float* running_var,
                                    float* saved) {
  const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  const float gain = scale[c] * (1.f / sqrtf(running_var[c] + kBatchNormEps));
  saved[2 * channels + c] = gain;
  saved[3 * channels + c] = bias[c] - running_mean[c] * gain;
}

__global__ void BatchNormGradKernel(size_t count, uint32_t channels, float m, const bf16* y,
                                    const float* saved, const float* scale, const float* shift_grad,
                                    const float* scale_grad, bf16* grad) {
  RF_GRID_STRIDE(i, count) {  // i indexes [pixel][c]
    const auto c = static_cast<uint32_t>(i % channels);
    const float mean = saved[c], invstd = saved[channels + c];
    const float xhat = (__bfloat162float(y[i]) - mean) * invstd;
    const float dv = __bfloat162float(grad[i]);
    const float mean_dv = shift_grad[c] / m, mean_dot = scale_grad[c] / m;
    grad[i] = __float2bfloat16_rn(scale[c] * invstd * (dv - mean_dv - xhat * mean_dot));
  }
}

__global__ void FilterToBf16Kernel(uint32_t out_channels, uint32_t in_channels, uint32_t padded_in,
                                   const float* w, bf16* w_bf16) {
  const size_t count = size_t{out_channels} * padded_in * 9;
  RF_GRID_STRIDE(i, count) {  // i indexes the [k][r*3+s][c] output, c < padded_in
    const auto c = static_cast<uint32_t>(i % padded_in);
    const auto rs = static_cast<uint32_t>((i / padded_in) % 9);
    const size_t k = i / (size_t{padded_in} * 9);
    w_bf16[i] = __float2bfloat16_rn(c < in_channels ? w[(k * in_channels + c) * 9 + rs] : 0.f);
  }
}

__global__ void FilterGradToFloatKernel(uint32_t out_channels, uint32_t in_channels,
                                        uint32_t padded_in, const bf16* g_bf16, float* g) {
  const size_t count = size_t{out_channels} * in_channels * 9;
  RF_GRID_STRIDE(i, count) {  // i indexes the [k][c][r*3+s] output
    const auto rs = static_cast<uint32_t>(i % 9);
    const auto c = static_cast<uint32_t>((i / 9) % in_channels);
    const size_t k = i / (size_t{in_channels} * 9);
    g[i] = __bfloat162float(g_bf16[(k * 9 + rs) * padded_in + c]);
  }
}

__global__ void NhwcToFlatKernel(size_t count, uint32_t plane, uint32_t channels, const bf16* x,
                                 float* out) {
  RF_GRID_STRIDE(i, count) {  // i indexes the [s][c][p] output
    const auto p = static_cast<uint32_t>(i % plane);
    const auto c = static_cast<uint32_t>((i / plane) % channels);
    const size_t s = i / (size_t{plane} * channels);
    out[i] = __bfloat162float(x[(s * plane + p) * channels + c]);
  }
}

__global__ void FlatToNhwcKernel(size_t count, uint32_t plane, uint32_t channels, const float* g,
                                 bf16* x_grad) {
  RF_GRID_STRIDE(i, count) {  // i indexes the [s][p][c] output
    const auto c = static_cast<uint32_t>(i % channels);
    const auto p = static_cast<uint32_t>((i / channels) % plane);
    const size_t s = i / (size_t{plane} * channels);
    x_grad[i] = __float2bfloat16_rn(g[(s * channels + c) * plane + p]);
  }
}

}  // namespace

cudaError_t DecodeSamplesBf16Nhwc(const void* samples, DType dtype, uint32_t n, uint32_t channels,
                                  uint32_t out_channels, uint32_t height, uint32_t width,
                                  const float* mean, const float* stddev,
                                  const AugmentBatch& augment, void* out, cudaStream_t stream) {
  if (out_channels < channels) return cudaErrorInvalidValue;
  return decode::LaunchImageDecode<decode::BFloat16, decode::Nhwc, decode::NanBits::kGpuNative,
                                   size_t>(dtype, samples,
                                           {n, channels, out_channels, height, width},
                                           {mean, stddev}, augment, out, stream);
}

cudaError_t BiasReluPoolBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                             const void* y, const ChannelAffine& affine, void* pooled,
                             cudaStream_t stream) {
  const size_t count = size_t{n} * (height / 2) * (width / 2) * channels;
  BiasReluPoolKernel<<<Blocks(count), kThreads, 0, stream>>>(
      n, height, width, channels, static_cast<const bf16*>(y), affine, static_cast<bf16*>(pooled));
  return cudaGetLastError();
}

size_t BiasGradPartials(uint32_t channels) { return size_t{kPartials} * channels; }
size_t BatchNormPartials(uint32_t channels) { return 2 * BiasGradPartials(channels); }

cudaError_t PoolReluBackwardBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                                 const void* y, const ChannelAffine& affine,
                                 const void* pooled_grad, void* v_grad, float* partial,
                                 float* shift_grad, cudaStream_t stream) {
  const dim3 grid(kPartials, (channels + 31) / 32), block(32, 8);
  PoolReluBackwardKernel<<<grid, block, 0, stream>>>(
      n, height, width, channels, static_cast<const bf16*>(y), affine,
      static_cast<const bf16*>(pooled_grad), static_cast<bf16*>(v_grad), partial);
  ChannelTotalsKernel<<<WarpBlocks(channels), kThreads, 0, stream>>>(channels, partial, shift_grad);
  return cudaGetLastError();
}

cudaError_t BatchNormStatsBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                               const void* y, const float* scale, const float* bias, float* partial,
                               float* saved, float* batch_mean, float* batch_var,
                               cudaStream_t stream) {
  const size_t pixels = size_t{n} * height * width;
  const auto* v = static_cast<const bf16*>(y);
  LaunchChannelPartials<Term::kMoments>(pixels, channels, v, nullptr, nullptr, nullptr, partial,
                                        stream);
  BatchStatsKernel<<<WarpBlocks(channels), kThreads, 0, stream>>>(
      channels, static_cast<double>(pixels), v, partial, scale, bias, saved, batch_mean, batch_var);
  return cudaGetLastError();
}

cudaError_t BatchNormRunningAffineBf16(uint32_t channels, const float* scale, const float* bias,
                                       const float* running_mean, const float* running_var,
                                       float* saved, cudaStream_t stream) {
  RunningAffineKernel<<<ChannelBlocks(channels), kThreads, 0, stream>>>(
      channels, scale, bias, running_mean, running_var, saved);
  return cudaGetLastError();
}

cudaError_t BatchNormBackwardBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                                  const void* y, const float* saved, const float* scale,
                                  const float* shift_grad, void* grad, float* partial,
                                  float* scale_grad, cudaStream_t stream) {
  const size_t pixels = size_t{n} * height * width;
  const auto* v = static_cast<const bf16*>(y);
  auto* g = static_cast<bf16*>(grad);
  LaunchChannelPartials<Term::kGradTimesXhat>(pixels, channels, v, g, saved, saved + channels,
                                              partial, stream);
  ChannelTotalsKernel<<<WarpBlocks(channels), kThreads, 0, stream>>>(channels, partial, scale_grad);
  const size_t count = pixels * channels;
  BatchNormGradKernel<<<Blocks(count), kThreads, 0, stream>>>(
      count, channels, static_cast<float>(pixels), v, saved, scale, shift_grad, scale_grad, g);
  return cudaGetLastError();
}

cudaError_t FilterToBf16Khwc(uint32_t out_channels, uint32_t in_channels, uint32_t padded_in,
                             const float* w, void* w_bf16, cudaStream_t stream) {
  if (padded_in < in_channels) return cudaErrorInvalidValue;
  FilterToBf16Kernel<<<Blocks(size_t{out_channels} * padded_in * 9), kThreads, 0, stream>>>(
      out_channels, in_channels, padded_in, w, static_cast<bf16*>(w_bf16));
  return cudaGetLastError();
}

cudaError_t FilterGradToFloatKchw(uint32_t out_channels, uint32_t in_channels, uint32_t padded_in,
                                  const void* g_bf16, float* g, cudaStream_t stream) {
  if (padded_in < in_channels) return cudaErrorInvalidValue;
  FilterGradToFloatKernel<<<Blocks(size_t{out_channels} * in_channels * 9), kThreads, 0, stream>>>(
      out_channels, in_channels, padded_in, static_cast<const bf16*>(g_bf16), g);
  return cudaGetLastError();
}

cudaError_t NhwcBf16ToFlat(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                           const void* x, float* out, cudaStream_t stream) {
  const size_t count = size_t{n} * height * width * channels;
  NhwcToFlatKernel<<<Blocks(count), kThreads, 0, stream>>>(count, height * width, channels,
                                                           static_cast<const bf16*>(x), out);
  return cudaGetLastError();
}

cudaError_t FlatToNhwcBf16(uint32_t n, uint32_t height, uint32_t width, uint32_t channels,
                           const float* g, void* x_grad, cudaStream_t stream) {
  const size_t count = size_t{n} * height * width * channels;
  FlatToNhwcKernel<<<Blocks(count), kThreads, 0, stream>>>(count, height * width, channels, g,
                                                           static_cast<bf16*>(x_grad));
  return cudaGetLastError();
}

}  // namespace rf::cuda
