#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "decode/gpu_image_resample.h"

namespace rf::decode {
namespace {

// One output's taps on one axis, as ResampleAxis::Build makes them: source pixels first ..
// first + count - 1, pixel x weighted by Raw(x) / sum (in double, then float).
struct Taps {
  int32_t first = 0, count = 1;
  double centre = 0, widen = 1, sum = 1;
  bool nearest = false;  // the centre lies outside the clip range: its nearest pixel alone

  __device__ double Raw(int32_t x) const {
    return fmax(0.0, 1.0 - fabs((x + 0.5 - centre) / widen));
  }
  __device__ float Weight(int32_t x) const {
    return nearest ? 1.f : static_cast<float>(Raw(x) / sum);
  }
};

__device__ Taps TapsOf(const GpuAxis& a, uint32_t o) {
  Taps t;
  t.widen = fmax(a.step, 1.0);
  const int32_t bound = static_cast<int32_t>(ceil(2 * t.widen)) + 2;
  t.centre = a.origin + (o + 0.5) * a.step;
  int32_t lo = static_cast<int32_t>(floor(t.centre - t.widen + 0.5));
  int32_t hi = static_cast<int32_t>(floor(t.centre + t.widen + 0.5));
  lo = min(max(lo, a.lo), a.hi - 1);
  hi = min(max(hi, lo + 1), min(a.hi, lo + bound));
  double sum = 0;
  for (int32_t x = lo; x < hi; ++x) sum += t.Raw(x);
  if (sum == 0) {
    t.nearest = true;
    t.first = min(max(static_cast<int32_t>(floor(t.centre)), a.lo), a.hi - 1);
    t.count = 1;
    return t;
  }
  t.sum = sum;
  // Taps of weight 0 at either end read nothing: drop them.
  while (lo < hi - 1 && t.Raw(lo) == 0) ++lo;
  while (hi - 1 > lo && t.Raw(hi - 1) == 0) --hi;
  t.first = lo;
  t.count = hi - lo;
  return t;
}

__device__ inline int32_t Pixel(float v) {
  const int32_t p = static_cast<int32_t>(__fadd_rn(v, 0.5f));
  return min(max(p, 0), 255);
}

template <typename T>
__device__ inline T Element(int32_t p, uint32_t c, const GpuImageOutput& o) {
  float v = static_cast<float>(p);
  if (o.normalize) v = __fdiv_rn(__fsub_rn(v, o.mean[c]), o.stddev[c]);
  if constexpr (sizeof(T) == 1) {
    return static_cast<T>(p);
  } else if constexpr (sizeof(T) == 4) {
    return v;
  } else {
    return T(v);  // __nv_bfloat16 / __half from float: round to nearest even
  }
}

// One thread an output pixel (its channels): blockIdx.y the image, x within the sample.
template <typename T>
__global__ void ResampleCrops(const uint8_t* __restrict__ area, const GpuCrop* __restrict__ crops,
                              GpuImageOutput o, T* __restrict__ out) {
  const GpuCrop& crop = crops[blockIdx.y];
  const uint32_t size = o.size;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= size * size) return;
  const uint32_t y = i / size, xo = i % size;
  const uint32_t x = crop.flip ? size - 1 - xo : xo;
  const Taps ty = TapsOf(crop.rows, y), tx = TapsOf(crop.cols, x);
  const uint8_t* src = area + crop.offset;
  const size_t pitch = crop.pitch;
  float acc[3] = {0.f, 0.f, 0.f};
  for (int32_t cx = tx.first; cx < tx.first + tx.count; ++cx) {
    // The column's vertical pass (decode/image_resample.cc's Vertical), then its share of the
    // horizontal one: multiplies and adds rounded apart, as the host's are (no contraction).
    const uint8_t* p = src + size_t(ty.first) * pitch + size_t(cx) * 3;
    const float w0 = ty.Weight(ty.first);
    float col[3];
    for (int c = 0; c < 3; ++c) col[c] = __fmul_rn(w0, static_cast<float>(p[c]));
    for (int32_t k = 1; k < ty.count; ++k) {
      const uint8_t* pk = p + size_t(k) * pitch;
      const float wk = ty.Weight(ty.first + k);
      for (int c = 0; c < 3; ++c)
        col[c] = __fadd_rn(col[c], __fmul_rn(wk, static_cast<float>(pk[c])));
    }
    const float wx = tx.Weight(cx);
    for (int c = 0; c < 3; ++c) acc[c] = __fadd_rn(acc[c], __fmul_rn(wx, col[c]));
  }
  const uint32_t channels = o.channels;
  T* sample = out + size_t(crop.slot) * channels * size * size;
  for (uint32_t c = 0; c < channels; ++c) {
    const T e = Element<T>(c < 3 ? Pixel(acc[c]) : 255, c, o);  // alpha: opaque
    if (o.channels_last) {
      sample[(size_t(y) * size + xo) * channels + c] = e;
    } else {
      sample[size_t(c) * size * size + size_t(y) * size + xo] = e;
    }
  }
}

template <typename T>
cudaError_t Launch(const uint8_t* area, const GpuCrop* crops, uint32_t n, const GpuImageOutput& o,
                   void* out, cudaStream_t stream) {
  constexpr uint32_t kThreads = 256;
  const dim3 grid((o.size * o.size + kThreads - 1) / kThreads, n);
  ResampleCrops<T><<<grid, kThreads, 0, stream>>>(area, crops, o, static_cast<T*>(out));
  return cudaGetLastError();
}

}  // namespace

cudaError_t ResampleCropsOnGpu(const uint8_t* area, const GpuCrop* crops, uint32_t n,
                               const GpuImageOutput& o, void* out, cudaStream_t stream) {
  if (n == 0 || o.size == 0) return cudaSuccess;
  if (n > 65535) return cudaErrorInvalidValue;  // grid.y
  switch (o.element) {
    case GpuImageOutput::kUInt8:
      return Launch<uint8_t>(area, crops, n, o, out, stream);
    case GpuImageOutput::kFloat32:
      return Launch<float>(area, crops, n, o, out, stream);
    case GpuImageOutput::kBFloat16:
      return Launch<__nv_bfloat16>(area, crops, n, o, out, stream);
    case GpuImageOutput::kFloat16:
      return Launch<__half>(area, crops, n, o, out, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace rf::decode
