// DLPack export of a decoded batch (pipeline/loader.h's LoadedBatch): its samples or its labels as
// a DLManagedTensor (dlpack.h, 0.6 and later) that views the batch's own buffer, no copy. The
// Python module wraps it in the "dltensor" capsule `__dlpack__` returns; it is plain C++ here so
// the C++ tests reach every rule without Python.
//
// Ownership: the DLManagedTensor holds the batch (a shared_ptr; samples and labels exported from
// one batch share it). Its deleter is the only way the batch goes back: when the consumer calls
// it (or the capsule is destroyed unconsumed), the holder is dropped, and with the last holder the
// buffer returns to the loader's pool. The deleter may run on any thread, with or without Python's
// GIL: it touches no Python object (a LoadedBatch's release may run on any thread).
//
// Streams (CUDA), the array API's `__dlpack__(stream=...)` rules: before the export the
// consumer's stream is made to wait for the batch (LoadedBatch::WaitOn: an event wait queued on
// that stream, never a host or device-wide synchronization), so work the consumer queues on it
// afterwards sees the batch written.
//
// Thread safety: the functions keep no state.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/status.h"
#include "pipeline/loader.h"

namespace rf::python {

// kOffsets: records of any size only (LoadedBatch::offsets(): n + 1 int64). kView: one of a
// packed sequences batch's LoadedBatch::views().
enum class BatchPart { kSamples, kLabels, kOffsets, kView };

// The array API's stream values for CUDA: None (std::nullopt) and 1 are the legacy default
// stream, 2 the per-thread default stream, -1 "do not synchronize", any other value a
// cudaStream_t; 0 is refused (ambiguous, as the array API says).
inline constexpr int64_t kStreamLegacyDefault = 1;
inline constexpr int64_t kStreamPerThreadDefault = 2;
inline constexpr int64_t kStreamNoSync = -1;

// What a consumer asks of one export: `__dlpack__`'s keywords (max_version needs nothing here:
// the export is always the unversioned "dltensor" of DLPack 0.6, which every version accepts).
struct DlpackRequest {
  std::optional<int64_t> stream;      // above
  std::optional<DLDevice> dl_device;  // where the consumer wants the tensor: only its own device
  std::optional<bool> copy;           // true: a copy is asked for, which this export never makes
};

// The device a batch's memory is on: {kDLCUDA, gpu} or {kDLCPU, 0}.
DLDevice DlpackDeviceOf(const LoadedBatch& batch);
// The DLPack type of a dtype (uint8, uint16, int32, int64, float16, bfloat16, float32).
DLDataType DlpackTypeOf(DType dtype);

// Checks `request` against the batch and, for a batch on the GPU and a stream other than -1,
// makes that stream wait for the batch. Usage errors, each naming the keyword: copy=True; a
// dl_device other than the batch's own; a stream on a host batch (only None or -1); stream 0.
// A CUDA error of the wait comes back as LoadedBatch::WaitOn gives it.
Status PrepareExport(LoadedBatch& batch, const DlpackRequest& request);

// A new DLManagedTensor viewing `part` of `batch` (compact row-major, strides given): the samples
// (batch.shape(), batch.dtype()), the labels ({n}, int64), a records batch's offsets ({n + 1},
// int64) or a packed sequences batch's view. It holds `batch` until its deleter
// runs; the caller owns it until it hands it to a consumer. Never null.
// `view`: which of views() for kView.
DLManagedTensor* ExportBatch(std::shared_ptr<LoadedBatch> batch, BatchPart part, size_t view = 0);

}  // namespace rf::python
