// The decode on the GPU: one kernel template that makes every output element from
// decode/element.h's functions, one thread per output element, and one for labels. Instantiated
// per conversion and layout by the CUDA backend's float32 and bf16 inputs (kernels/) and by the
// library loader's GPU decode (decode/gpu_decode.cuh). Device code: include from .cu files only.
//
// Launches only: no allocation, no synchronization, so a CUDA graph may capture them. Every array
// is device memory aligned to its element size; `in` and `out` do not overlap. Each launch covers
// its elements with kThreads-thread blocks, at most kMaxBlocks of them (enough to fill an H100 or
// H200 several times over), looping over anything larger.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"
#include "decode/dtypes.h"
#include "decode/element.h"

namespace rf::decode {

constexpr unsigned kThreads = 256;
constexpr uint64_t kMaxBlocks = 4096;

inline unsigned Blocks(uint64_t count) {
  return static_cast<unsigned>(
      std::max<uint64_t>(1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

// Labels a decode launch widens to int64 beside its samples, so that a batch's decode is one
// launch, not two (each launch a driver call beside the model's own): n labels of integer dtype
// `dtype` (IntegerDTypes) at `in` into `out`. n == 0: none.
struct FusedLabels {
  const void* in = nullptr;
  int64_t* out = nullptr;
  uint32_t n = 0;
  DType dtype = DType::kInt64;
};

// The i-th label at `in` of integer dtype d (one of Entries), widened; 0 for another dtype (the
// launcher refuses those before).
template <typename... Entries>
__device__ int64_t WidenedLabel(DTypeList<Entries...> /*list*/, DType d, const void* in,
                                uint32_t i) {
  int64_t v = 0;
  (void)((d == Entries::kDType
              ? (v = LabelValue<Entries>(static_cast<const typename Entries::Type*>(in)[i]), true)
              : false) ||
         ...);
  return v;
}

// Consecutive threads make consecutive output elements, so the writes coalesce in every layout;
// NHWC's reads then fall in `channels` runs per warp, one in each channel plane (a batch of a few
// MB stays in L2, so every sector is still fetched from memory once). Index: the element index's
// type, uint32_t where the caller keeps the batch below 2^31 elements (cheaper division), else
// size_t.
template <typename Conv, typename L, typename Index>
__global__ void __launch_bounds__(kThreads)
    DecodeKernel(const typename Conv::Stored* __restrict__ in, BatchShape b, Index total,
                 Statistics stats, AugmentBatch augment, typename Conv::Output* __restrict__ out,
                 FusedLabels labels) {
  const Index plane = Index{b.height} * b.width;
  const Index stride = Index{gridDim.x} * kThreads;
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < labels.n;
       i += static_cast<uint32_t>(stride)) {
    labels.out[i] = WidenedLabel(IntegerDTypes{}, labels.dtype, labels.in, i);
  }
  for (Index o = Index{blockIdx.x} * kThreads + threadIdx.x; o < total; o += stride) {
    const Element<Index> e = L::At(o, b, plane);
    Index from = 0;
    bool read;
    // Two calls, not one with a pointer that is either t's or null: that would keep t in local
    // memory (32 bytes of stack a thread, ptxas -v says).
    if (augment.params.enabled()) {
      const SampleTransform t = TransformOf(augment, e.sample, b.height, b.width);
      read = StoredIndex(b, plane, e, &t, &from);
    } else {
      read = StoredIndex(b, plane, e, static_cast<const SampleTransform*>(nullptr), &from);
    }
    out[o] = read ? Conv::Convert(in[from], Conv::kNormalize ? stats.Of(e.channel) : ChannelNorm{})
                  : Conv::Zero();
  }
}

// Queues the decode of the b.n samples at `in` into `out` (b.n * b.out_channels * height * width
// elements), each through its transform where `augment` (its indices or transforms in device
// memory) has augmentation on, and the widening of `labels` in the same launch.
template <typename Conv, typename L, typename Index>
void LaunchDecode(const void* in, const BatchShape& b, const Statistics& stats,
                  const AugmentBatch& augment, void* out, cudaStream_t stream,
                  const FusedLabels& labels = {}) {
  const Index total = Index{b.n} * b.out_channels * b.height * b.width;
  DecodeKernel<Conv, L, Index>
      <<<Blocks(std::max<uint64_t>(total, labels.n)), kThreads, 0, stream>>>(
          static_cast<const typename Conv::Stored*>(in), b, total, stats, augment,
          static_cast<typename Conv::Output*>(out), labels);
}

// The CUDA backend's input: samples of any image dtype (VisitImageDType), normalized into float
// dtype Out in layout L, NaNs as kNan says. cudaErrorInvalidValue for a dtype that is no image
// dtype (the backends refuse those before); else the launch's status.
template <typename Out, typename L, NanBits kNan, typename Index>
cudaError_t LaunchImageDecode(DType stored, const void* in, const BatchShape& b,
                              const Statistics& stats, const AugmentBatch& augment, void* out,
                              cudaStream_t stream) {
  const bool known = VisitImageDType(stored, [&](auto in_dtype) {
    LaunchDecode<ToFloat<decltype(in_dtype), Out, true, kNan>, L, Index>(in, b, stats, augment, out,
                                                                         stream);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

// sink(i, label) for each of the n labels of dtype E at `in` (label an int64_t: LabelValue).
template <typename E, typename Sink>
__global__ void __launch_bounds__(kThreads)
    LabelKernel(const typename E::Type* __restrict__ in, uint32_t n, Sink sink) {
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += stride) {
    sink(i, LabelValue<E>(in[i]));
  }
}

// Queues LabelKernel for the n labels at `labels` (n below 2^31) of integer dtype `dtype`
// (IntegerDTypes). cudaErrorInvalidValue for another dtype; else the launch's status.
template <typename Sink>
cudaError_t LaunchLabels(DType dtype, const void* labels, uint32_t n, Sink sink,
                         cudaStream_t stream) {
  const bool known = VisitDType(IntegerDTypes{}, dtype, [&](auto e) {
    using E = decltype(e);
    LabelKernel<E, Sink>
        <<<Blocks(n), kThreads, 0, stream>>>(static_cast<const typename E::Type*>(labels), n, sink);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace rf::decode
