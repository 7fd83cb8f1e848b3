#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "decode/kernel.cuh"
#include "kernels/cuda_kernels.cuh"

namespace rf::cuda {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H100/H200 (132 SMs x 2048 threads) several times over; grid-stride
// loops cover anything larger.
constexpr size_t kMaxBlocks = 4096;

unsigned Blocks(size_t count) {
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

// A label outside [0, classes) is recorded (see DecodeLabels) and becomes 0, so later kernels
// index safely.
struct CheckedLabels {
  uint32_t classes;
  int32_t* out;
  unsigned long long* step_bad;
  unsigned long long* sticky_bad;
  __device__ void operator()(uint32_t i, int64_t label) const {
    if (label < 0 || label >= classes) {
      const unsigned long long record =
          (static_cast<unsigned long long>(i) << 32) | static_cast<uint32_t>(label);
      atomicMin(step_bad, record);
      atomicMin(sticky_bad, record);
      out[i] = 0;
    } else {
      out[i] = static_cast<int32_t>(label);
    }
  }
};

__global__ void AddBiasReluKernel(uint32_t rows, uint32_t cols, const float* bias, bool relu,
                                  float* y) {
  const size_t count = size_t{rows} * cols;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{blockDim.x} * gridDim.x) {
    const float v = y[i] + bias[i % cols];
    y[i] = relu ? fmaxf(v, 0.f) : v;
  }
}

__global__ void ReluBackwardKernel(size_t count, const float* out, float* grad) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{blockDim.x} * gridDim.x) {
    if (!(out[i] > 0.f)) grad[i] = 0.f;
  }
}

constexpr uint32_t kNoIndex = 0xffffffffu;

// One warp per row: lanes stride over the classes, then combine with shuffles.
__global__ void SoftmaxCrossEntropyKernel(uint32_t n, uint32_t classes, const float* logits,
                                          const int32_t* labels, float scale,
                                          const float* smoothing, float* grad, double* row_loss,
                                          uint32_t* row_correct) {
  const uint32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;
  if (row >= n) return;  // the whole warp leaves together: row is the same for all its lanes
  const float* z = logits + size_t{row} * classes;
  float* g = grad + size_t{row} * classes;

  // Arg-max, the first of equal maxima as the CPU's scan finds it.
  float best = 0.f;
  uint32_t best_at = kNoIndex;
  for (uint32_t c = lane; c < classes; c += 32) {
    if (best_at == kNoIndex || z[c] > best) {
      best = z[c];
      best_at = c;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const uint32_t other_at = __shfl_xor_sync(0xffffffffu, best_at, offset);
    const bool take = other_at != kNoIndex && (best_at == kNoIndex || other > best ||
                                               (other == best && other_at < best_at));
    if (take) {
      best = other;
      best_at = other_at;
    }
  }

  // Subtracting the maximum keeps every exp() in (0, 1]: no overflow for any logits.
  const double top = best;
  double sum = 0;
  for (uint32_t c = lane; c < classes; c += 32) sum += exp(static_cast<double>(z[c]) - top);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const double log_sum = log(sum);
  const auto label = static_cast<uint32_t>(labels[row]);
  // The target q = (1 - E) * onehot + E / K, as the CPU backend (kernels/cpu_layers.h).
  const double e = *smoothing;
  const double off = e / static_cast<double>(classes), on = 1.0 - e + off;
  for (uint32_t c = lane; c < classes; c += 32) {
    const double p = exp(static_cast<double>(z[c]) - top - log_sum);
    g[c] = static_cast<float>((p - (c == label ? on : off)) * scale);
  }
  double row_value = log_sum - (static_cast<double>(z[label]) - top);
  if (e != 0) {  // uniform across the warp: every lane read the same *smoothing
    double shifted = 0;
    for (uint32_t c = lane; c < classes; c += 32) shifted += static_cast<double>(z[c]) - top;
    for (int offset = 16; offset > 0; offset /= 2) {
      shifted += __shfl_xor_sync(0xffffffffu, shifted, offset);
    }
    row_value = (1.0 - e) * row_value + e * (log_sum - shifted / static_cast<double>(classes));
  }
  if (lane == 0) {
    row_loss[row] = row_value;
    row_correct[row] = best_at == label ? 1u : 0u;
  }
}

__global__ void AccumulateStatsKernel(uint32_t n, const double* row_loss,
                                      const uint32_t* row_correct, unsigned long long* step_bad,
                                      unsigned long long* sticky_bad, DeviceStats* stats) {
  __shared__ double loss[kThreads];
  __shared__ unsigned long long hits[kThreads];
  const uint32_t t = threadIdx.x;
  double l = 0;
  unsigned long long h = 0;
  for (uint32_t i = t; i < n; i += kThreads) {
    l += row_loss[i];
    h += row_correct[i];
  }
  loss[t] = l;
  hits[t] = h;
  __syncthreads();
  for (uint32_t s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) {
      loss[t] += loss[t + s];
      hits[t] += hits[t + s];
    }
    __syncthreads();
  }
  if (t == 0 && *step_bad == kNoBadLabel && !isfinite(loss[0])) {
    *step_bad = kNonFiniteLoss;
    atomicMin(sticky_bad, kNonFiniteLoss);
  } else if (t == 0 && *step_bad == kNoBadLabel) {
    stats->loss_sum += loss[0];
    stats->correct += hits[0];
    stats->samples += n;
  }
}

__global__ void CheckFiniteKernel(size_t count4, const float4* values, unsigned long long* step_bad,
                                  unsigned long long* sticky_bad) {
  bool bad = false;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count4;
       i += size_t{blockDim.x} * gridDim.x) {
    const float4 v = values[i];
    bad |= !isfinite(v.x) || !isfinite(v.y) || !isfinite(v.z) || !isfinite(v.w);
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) {
    atomicMin(step_bad, kNonFiniteLoss);
    atomicMin(sticky_bad, kNonFiniteLoss);
  }
}

__device__ float SgdOne(float w, float g, float& v, float lr, float momentum, float wd) {
  const float gi = __fadd_rn(g, __fmul_rn(wd, w));
  v = __fadd_rn(__fmul_rn(momentum, v), gi);
  return __fsub_rn(w, __fmul_rn(lr, v));
}

__global__ void SgdMomentumKernel(size_t count4, float lr, float momentum, float wd,
                                  const float4* grad, float4* weights, float4* velocity,
                                  const unsigned long long* step_bad) {
  if (*step_bad != kNoBadLabel) return;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count4;
       i += size_t{blockDim.x} * gridDim.x) {
    const float4 g = grad[i];
    float4 w = weights[i], v = velocity[i];
    w.x = SgdOne(w.x, g.x, v.x, lr, momentum, wd);
    w.y = SgdOne(w.y, g.y, v.y, lr, momentum, wd);
    w.z = SgdOne(w.z, g.z, v.z, lr, momentum, wd);
    w.w = SgdOne(w.w, g.w, v.w, lr, momentum, wd);
    weights[i] = w;
    velocity[i] = v;
  }
}

__global__ void UpdateRunningStatsKernel(size_t count, float momentum, const float* batch,
                                         float* running, const unsigned long long* step_bad) {
  if (*step_bad != kNoBadLabel) return;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{blockDim.x} * gridDim.x) {
    running[i] = __fadd_rn(running[i], __fmul_rn(momentum, __fsub_rn(batch[i], running[i])));
  }
}

// One AdamW element, each operation rounded as the CPU backend's loop (model/model.h).
__device__ float AdamWOne(float w, float g, float& m, float& v, const AdamWArgs& a) {
  const float wi = __fmul_rn(w, a.decay);
  m = __fadd_rn(__fmul_rn(a.beta1, m), __fmul_rn(a.one_minus_beta1, g));
  v = __fadd_rn(__fmul_rn(a.beta2, v), __fmul_rn(a.one_minus_beta2, __fmul_rn(g, g)));
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), a.sqrt_bc2), a.eps);
  return __fsub_rn(wi, __fmul_rn(a.step_size, __fdiv_rn(m, denom)));
}

__global__ void AdamWKernel(size_t count4, AdamWArgs a, const float4* grad, float4* weights,
                            float4* first, float4* second, const unsigned long long* step_bad) {
  if (*step_bad != kNoBadLabel) return;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count4;
       i += size_t{blockDim.x} * gridDim.x) {
    const float4 g = grad[i];
    float4 w = weights[i], m = first[i], v = second[i];
    w.x = AdamWOne(w.x, g.x, m.x, v.x, a);
    w.y = AdamWOne(w.y, g.y, m.y, v.y, a);
    w.z = AdamWOne(w.z, g.z, m.z, v.z, a);
    w.w = AdamWOne(w.w, g.w, m.w, v.w, a);
    weights[i] = w;
    first[i] = m;
    second[i] = v;
  }
}

}  // namespace

cudaError_t DecodeSamples(const void* samples, DType dtype, uint32_t n, uint32_t channels,
                          uint32_t height, uint32_t width, const float* mean, const float* stddev,
                          const AugmentBatch& augment, float* out, cudaStream_t stream) {
  return decode::LaunchImageDecode<decode::Float32, decode::Nchw, decode::NanBits::kGpuNative,
                                   size_t>(dtype, samples, {n, channels, channels, height, width},
                                           {mean, stddev}, augment, out, stream);
}

cudaError_t DecodeLabels(const void* labels, DType dtype, uint32_t n, uint32_t classes,
                         int32_t* out, unsigned long long* step_bad, unsigned long long* sticky_bad,
                         cudaStream_t stream) {
  if (!IsIntegerDType(dtype)) return cudaErrorInvalidValue;  // int64: decoded images' batches
  return decode::LaunchLabels(dtype, labels, n, CheckedLabels{classes, out, step_bad, sticky_bad},
                              stream);
}

cudaError_t AddBiasRelu(uint32_t rows, uint32_t cols, const float* bias, bool relu, float* y,
                        cudaStream_t stream) {
  AddBiasReluKernel<<<Blocks(size_t{rows} * cols), kThreads, 0, stream>>>(rows, cols, bias, relu,
                                                                          y);
  return cudaGetLastError();
}

cudaError_t ReluBackward(size_t count, const float* out, float* grad, cudaStream_t stream) {
  ReluBackwardKernel<<<Blocks(count), kThreads, 0, stream>>>(count, out, grad);
  return cudaGetLastError();
}

cudaError_t SoftmaxCrossEntropy(uint32_t n, uint32_t classes, const float* logits,
                                const int32_t* labels, float scale, const float* smoothing,
                                float* grad, double* row_loss, uint32_t* row_correct,
                                cudaStream_t stream) {
  constexpr uint32_t kRowsPerBlock = kThreads / 32;
  SoftmaxCrossEntropyKernel<<<(n + kRowsPerBlock - 1) / kRowsPerBlock, kThreads, 0, stream>>>(
      n, classes, logits, labels, scale, smoothing, grad, row_loss, row_correct);
  return cudaGetLastError();
}

cudaError_t AccumulateStats(uint32_t n, const double* row_loss, const uint32_t* row_correct,
                            unsigned long long* step_bad, unsigned long long* sticky_bad,
                            DeviceStats* stats, cudaStream_t stream) {
  AccumulateStatsKernel<<<1, kThreads, 0, stream>>>(n, row_loss, row_correct, step_bad, sticky_bad,
                                                    stats);
  return cudaGetLastError();
}

cudaError_t CheckFinite(size_t count, const float* values, unsigned long long* step_bad,
                        unsigned long long* sticky_bad, cudaStream_t stream) {
  if (count % 4 != 0) return cudaErrorInvalidValue;  // the backend pads every tensor
  const size_t count4 = count / 4;
  CheckFiniteKernel<<<Blocks(count4), kThreads, 0, stream>>>(
      count4, reinterpret_cast<const float4*>(values), step_bad, sticky_bad);
  return cudaGetLastError();
}

cudaError_t SgdMomentum(size_t count, float lr, float momentum, float weight_decay,
                        const float* grad, float* weights, float* velocity,
                        const unsigned long long* step_bad, cudaStream_t stream) {
  if (count % 4 != 0) return cudaErrorInvalidValue;  // the backend pads every tensor
  const size_t count4 = count / 4;
  SgdMomentumKernel<<<Blocks(count4), kThreads, 0, stream>>>(
      count4, lr, momentum, weight_decay, reinterpret_cast<const float4*>(grad),
      reinterpret_cast<float4*>(weights), reinterpret_cast<float4*>(velocity), step_bad);
  return cudaGetLastError();
}

cudaError_t AdamW(size_t count, const AdamWArgs& args, const float* grad, float* weights,
                  float* first_moment, float* second_moment, const unsigned long long* step_bad,
                  cudaStream_t stream) {
  if (count % 4 != 0) return cudaErrorInvalidValue;  // the backend pads every tensor
  const size_t count4 = count / 4;
  AdamWKernel<<<Blocks(count4), kThreads, 0, stream>>>(
      count4, args, reinterpret_cast<const float4*>(grad), reinterpret_cast<float4*>(weights),
      reinterpret_cast<float4*>(first_moment), reinterpret_cast<float4*>(second_moment), step_bad);
  return cudaGetLastError();
}

cudaError_t UpdateRunningStats(size_t count, float momentum, const float* batch, float* running,
                               const unsigned long long* step_bad, cudaStream_t stream) {
  UpdateRunningStatsKernel<<<Blocks(count), kThreads, 0, stream>>>(count, momentum, batch, running,
                                                                   step_bad);
  return cudaGetLastError();
}

}  // namespace rf::cuda
