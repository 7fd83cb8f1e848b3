#include "cuda/augment_transforms.cuh"

namespace rf::cuda {
namespace {

__global__ void DrawBatchTransformsKernel(AugmentBatch a, uint32_t n, uint32_t height,
                                          uint32_t width, SampleTransform* out) {
  const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < n) out[s] = DrawTransform(a.params, a.seed, a.epoch, a.indices[s], height, width);
}

}  // namespace

cudaError_t DrawBatchTransforms(AugmentBatch* a, uint32_t n, uint32_t height, uint32_t width,
                                SampleTransform* scratch, cudaStream_t stream) {
  if (!a->params.enabled() || n == 0) return cudaSuccess;
  constexpr uint32_t kThreads = 128;
  DrawBatchTransformsKernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(*a, n, height,
                                                                                    width, scratch);
  a->transforms = scratch;
  return cudaGetLastError();
}

}  // namespace rf::cuda
