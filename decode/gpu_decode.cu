#include "decode/gpu_decode.cuh"
#include "decode/kernel.cuh"

namespace rf::decode {
namespace {

struct WidenTo64 {
  int64_t* out;
  __device__ void operator()(uint32_t i, int64_t label) const { out[i] = label; }
};

}  // namespace

cudaError_t DecodeOnGpu(const Plan& plan, const void* in, uint32_t n, void* out,
                        const AugmentBatch& augment, cudaStream_t stream,
                        const LabelsToWiden& labels) {
  if (n == 0) return cudaSuccess;
  const bool widen = labels.out != nullptr;
  if (widen && !VisitDType(IntegerDTypes{}, labels.dtype, [](auto) {})) {
    return cudaErrorInvalidValue;
  }
  if (plan.IsCopy(augment) && IsSampleDType(plan.stored)) {
    const cudaError_t e = cudaMemcpyAsync(
        out, in, size_t{n} * plan.channels * plan.height * plan.width * DTypeSize(plan.stored),
        cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess || !widen) return e;
    return WidenLabelsOnGpu(labels.dtype, labels.in, n, labels.out, stream);
  }
  const FusedLabels fused{labels.in, labels.out, widen ? n : 0, labels.dtype};
  const bool known = VisitPlan<NanBits::kHost>(plan, [&](auto conv, auto layout) {
    LaunchDecode<decltype(conv), decltype(layout), uint32_t>(in, plan.Shape(n), plan.stats, augment,
                                                             out, stream, fused);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t WidenLabelsOnGpu(DType dtype, const void* in, uint32_t n, int64_t* out,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return LaunchLabels(dtype, in, n, WidenTo64{out}, stream);
}

}  // namespace rf::decode
