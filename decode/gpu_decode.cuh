// The decode of a Plan (decode/plan.h) on the GPU: decode/kernel.cuh's kernel, instantiated for
// every conversion and layout VisitPlan reaches, NaNs as the host makes them, so that its result
// equals decode/host_decode.h's DecodeOnHost bit for bit for every plan and input. The library
// loader's GPU decode (pipeline/output/cuda_batch_decode.h) is this function.
//
// Host launchers only (this header compiles as plain C++): no allocation, no synchronization,
// graph capturable. Thread safety: none beyond the stream's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/augment.h"
#include "core/dtype.h"
#include "decode/plan.h"

namespace rf::decode {

// The n labels a decode widens to int64 beside its n samples (out == nullptr: none): of an integer
// dtype (decode/dtypes.h's IntegerDTypes), read as WidenLabelsOnGpu reads them.
struct LabelsToWiden {
  DType dtype = DType::kInt64;
  const void* in = nullptr;
  int64_t* out = nullptr;
};

// Queues on `stream` the decode of n samples at `in` into `out`, as DecodeOnHost does, each sample
// through its transform where `augment` (its indices or transforms in device memory) has
// augmentation on; plan.stats in device memory; and, where `labels` names an output, the widening
// of the n labels, in the same launch (a plan that is a plain copy: one copy and one launch).
// Every array is device memory aligned to its element size; the caller keeps n * out_channels *
// height * width (and the input's count) below 2^31. cudaErrorInvalidValue where VisitPlan knows
// no such decode or the labels' dtype is no integer dtype; else the launch's (or copy's) status.
cudaError_t DecodeOnGpu(const Plan& plan, const void* in, uint32_t n, void* out,
                        const AugmentBatch& augment, cudaStream_t stream,
                        const LabelsToWiden& labels = {});

// Widens n labels (n below 2^31) of an integer dtype (decode/dtypes.h's IntegerDTypes) to int64 on
// `stream`, as decode/host_decode.h's ForEachLabel reads them. cudaErrorInvalidValue for another
// dtype; else the launch's status.
cudaError_t WidenLabelsOnGpu(DType dtype, const void* in, uint32_t n, int64_t* out,
                             cudaStream_t stream);

}  // namespace rf::decode
