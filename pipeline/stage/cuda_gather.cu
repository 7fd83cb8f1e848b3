#include "pipeline/stage/cuda_gather.cuh"

namespace rf::cuda {
namespace {

constexpr int kThreads = 128;
// uint64s per ref (pipeline/stage/chunk_staging.h's SampleRef: sample, label, record bytes).
constexpr int kRefWords = 3;

__global__ void GatherKernel(const uint8_t* base, const uint64_t* refs, const uint64_t* indices_in,
                             size_t sample_bytes, size_t label_bytes, bool vector, uint8_t* samples,
                             uint8_t* labels, uint64_t* indices_out) {
  const uint32_t i = blockIdx.x;
  if (threadIdx.x == 0) indices_out[i] = indices_in[i];
  const uint8_t* src = base + refs[kRefWords * i];
  uint8_t* dst = samples + i * sample_bytes;
  if (vector) {  // sample_bytes, both offsets and both bases are multiples of 16
    const auto* s = reinterpret_cast<const uint4*>(src);
    auto* d = reinterpret_cast<uint4*>(dst);
    for (size_t k = threadIdx.x; k < sample_bytes / 16; k += kThreads) d[k] = s[k];
  } else {
    for (size_t k = threadIdx.x; k < sample_bytes; k += kThreads) dst[k] = src[k];
  }
  if (threadIdx.x < label_bytes) {
    labels[i * label_bytes + threadIdx.x] = base[refs[kRefWords * i + 1] + threadIdx.x];
  }
}

}  // namespace

cudaError_t GatherSamples(const uint8_t* base, const uint64_t* refs, const uint64_t* indices_in,
                          uint32_t n, size_t sample_bytes, size_t label_bytes, uint8_t* samples,
                          uint8_t* labels, uint64_t* indices_out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (label_bytes > kThreads) return cudaErrorInvalidValue;
  // Sample offsets are slot or chunk starts (4096-aligned) plus multiples of sample_bytes.
  const bool vector = sample_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(base) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(samples) % 16 == 0;
  GatherKernel<<<n, kThreads, 0, stream>>>(base, refs, indices_in, sample_bytes, label_bytes,
                                           vector, samples, labels, indices_out);
  return cudaGetLastError();
}

}  // namespace rf::cuda
