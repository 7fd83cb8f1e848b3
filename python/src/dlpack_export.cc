#include "python/src/dlpack_export.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace rf::python {
namespace {

// What one exported tensor owns: the batch, and the shape and strides its DLTensor points at.
// `managed` is what the consumer holds; its manager_ctx points back here.
struct ExportContext {
  DLManagedTensor managed{};
  std::shared_ptr<LoadedBatch> batch;
  std::vector<int64_t> shape, strides;
};

// Runs once per export, on whatever thread the consumer (or the capsule's destructor) drops it.
void DeleteExport(DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }

std::string DeviceText(DLDevice d) {
  // Appended piece by piece: GCC 12's -Wrestrict misfires on "..." + std::string at -O3.
  std::string s = "(";
  if (d.device_type == kDLCPU) {
    s += "kDLCPU=1";
  } else if (d.device_type == kDLCUDA) {
    s += "kDLCUDA=2";
  } else {
    s += std::to_string(d.device_type);
  }
  s += ", ";
  s += std::to_string(d.device_id);
  s += ")";
  return s;
}

}  // namespace

DLDevice DlpackDeviceOf(const LoadedBatch& batch) {
  if (batch.on_gpu()) return DLDevice{kDLCUDA, batch.gpu_device()};
  return DLDevice{kDLCPU, 0};
}

DLDataType DlpackTypeOf(DType dtype) {
  const uint8_t bits = static_cast<uint8_t>(DTypeSize(dtype) * 8);
  switch (dtype) {
    case DType::kFloat16:
    case DType::kFloat32:
      return DLDataType{kDLFloat, bits, 1};
    case DType::kBFloat16:
      return DLDataType{kDLBfloat, bits, 1};
    case DType::kInt32:
    case DType::kInt64:
      return DLDataType{kDLInt, bits, 1};
    case DType::kUInt8:
    case DType::kUInt16:
      break;
  }
  return DLDataType{kDLUInt, bits, 1};
}

Status PrepareExport(LoadedBatch& batch, const DlpackRequest& request) {
  if (request.copy.value_or(false)) {
    return Status::Usage("__dlpack__: copy=True is not supported: a batch is exported in place");
  }
  const DLDevice own = DlpackDeviceOf(batch);
  if (request.dl_device && (request.dl_device->device_type != own.device_type ||
                            request.dl_device->device_id != own.device_id)) {
    return Status::Usage("__dlpack__: dl_device " + DeviceText(*request.dl_device) +
                         " is not the batch's device " + DeviceText(own) +
                         " (the export never copies)");
  }
  const int64_t stream = request.stream.value_or(kStreamLegacyDefault);
  if (!batch.on_gpu()) {
    if (request.stream && stream != kStreamNoSync) {
      return Status::Usage(
          "__dlpack__: stream must be None or -1 for a batch in host memory, got " +
          std::to_string(stream));
    }
    return Status::Ok();
  }
  if (stream == 0) {
    return Status::Usage(
        "__dlpack__: stream 0 is ambiguous (the array API refuses it): pass 1 for the legacy "
        "default stream, 2 for the per-thread default stream, or a cudaStream_t");
  }
  if (stream == kStreamNoSync) return Status::Ok();
  // WaitOn takes null for the legacy default stream; 2 is cudaStreamPerThread's own value, and any
  // other value is a cudaStream_t.
  void* s = stream == kStreamLegacyDefault ? nullptr
                                           : reinterpret_cast<void*>(static_cast<intptr_t>(stream));
  return batch.WaitOn(s);
}

DLManagedTensor* ExportBatch(std::shared_ptr<LoadedBatch> batch, BatchPart part, size_t view) {
  auto* ctx = new ExportContext;
  const LoadedBatch& b = *batch;
  DLTensor& t = ctx->managed.dl_tensor;
  t.device = DlpackDeviceOf(b);
  if (part == BatchPart::kView) {
    const LoadedBatch::View& v = b.views().at(view);
    t.data = v.data;
    t.dtype = DlpackTypeOf(v.dtype);
    ctx->shape = v.shape;
  } else if (part == BatchPart::kSamples) {
    t.data = b.samples();
    t.dtype = DlpackTypeOf(b.dtype());
    ctx->shape = b.shape();
  } else if (part == BatchPart::kOffsets) {
    t.data = b.offsets();
    t.dtype = DlpackTypeOf(DType::kInt64);
    ctx->shape = {static_cast<int64_t>(b.size()) + 1};
  } else {
    t.data = b.labels();
    t.dtype = DlpackTypeOf(DType::kInt64);
    ctx->shape = {static_cast<int64_t>(b.size())};
  }
  ctx->strides.assign(ctx->shape.size(), 1);
  for (size_t d = ctx->shape.size(); d-- > 1;)
    ctx->strides[d - 1] = ctx->strides[d] * ctx->shape[d];
  t.ndim = static_cast<int>(ctx->shape.size());
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->batch = std::move(batch);
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = DeleteExport;
  return &ctx->managed;
}

}  // namespace rf::python
