// ringfeed.Tensor: one batch's samples, labels, offsets or a named view (packed sequences'
// tokens, lengths, cu_seqlens, position_ids), as Python sees it: a small array-like over the
// batch's buffer that exports DLPack (dlpack_export.h). It holds a share of the batch
// (pipeline/output/loaded_batch.h), so the buffer stays valid, unchanged, while the Tensor or
// anything made from it lives, even after the loader is gone.
//
// Thread safety: its methods run with the GIL held; the batch's own are thread-safe.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "pipeline/output/loaded_batch.h"
#include "python/src/dlpack_export.h"

namespace rf::python {

// A batch's samples or labels, as Python sees them: a small array-like that exports DLPack.
struct Tensor {
  std::shared_ptr<LoadedBatch> batch;
  BatchPart part;
  size_t view = 0;  // kView: which of batch->views()

  DType dtype() const {
    if (part == BatchPart::kView) return batch->views().at(view).dtype;
    return part == BatchPart::kSamples ? batch->dtype() : DType::kInt64;
  }
  void* data() const {
    switch (part) {
      case BatchPart::kView:
        return batch->views().at(view).data;
      case BatchPart::kSamples:
        return batch->samples();
      case BatchPart::kOffsets:
        return batch->offsets();
      case BatchPart::kLabels:
        break;
    }
    return batch->labels();
  }
  std::vector<int64_t> shape() const {
    if (part == BatchPart::kView) return batch->views().at(view).shape;
    if (part == BatchPart::kSamples) return batch->shape();
    const int64_t n = static_cast<int64_t>(batch->size());
    return {part == BatchPart::kOffsets ? n + 1 : n};
  }
  std::string device() const {
    if (!batch->on_gpu()) return "cpu";
    std::string s = "cuda:";  // appended apart: GCC 12's -Wrestrict misfires on "..." + string
    s += std::to_string(batch->gpu_device());
    return s;
  }
};

// A new "dltensor" capsule viewing `t` (DLPack 0.6), with no stream wait: the caller has made the
// consumer's stream wait for the batch (LoadedBatch::WaitOn). A capsule never consumed deletes
// its tensor, as the DLPack rule says. GIL held.
pybind11::capsule NewCapsule(const Tensor& t);

// ringfeed.Tensor's class.
void BindTensor(pybind11::module_& m);

}  // namespace rf::python
