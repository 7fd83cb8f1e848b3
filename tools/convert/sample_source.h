// SampleSource: what every converter input (IDX, CIFAR, .npy, raw, predecessor, synthetic)
// presents to the converter: a known number of samples of one shape and element type, handed
// out in blocks, in order.
//
// Ownership: a block's memory belongs to the source and stays valid until the next call to
// Next() or the source's destruction. Thread safety: none; one thread calls Next().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

struct SourceShape {
  // The sample shape, outermost dimension first: 1 to 4 dims, a 3-dim shape being C,H,W
  // (io/format.h). Samples Next() hands out are row-major in it.
  std::vector<uint64_t> dims = {1, 1, 1};
  Elem elem = Elem::kU8;  // of the samples Next() hands out (host byte order)
  uint64_t samples = 0;   // in the whole input
  // false: the input has no labels (Next() hands out 0s); the dataset records none.
  bool has_labels = true;
  // The label dtype the dataset stores: the input's own where it is one (so an export gives the
  // input's bytes back), int32 for wider integer labels.
  DType label_dtype = DType::kUInt8;
  uint32_t num_classes = 0;  // known from the format (CIFAR-10: 10), or 0

  uint64_t SampleElems() const {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
  }
  uint64_t SampleBytes() const { return SampleElems() * ElemSize(elem); }
};

struct SampleBlock {
  const uint8_t* samples = nullptr;  // count samples, SourceShape::SampleBytes() each
  const int64_t* labels = nullptr;   // count labels
  uint64_t first = 0;                // index of the block's first sample in the input
  uint64_t count = 0;                // 0: the input is exhausted
};

// Where a label or a sample sits in the input, for error messages.
struct InputPosition {
  std::string path;
  uint64_t offset = 0;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual const SourceShape& shape() const = 0;
  // The next block of at most max_samples (>= 1) samples. Data errors name file and offset.
  virtual Result<SampleBlock> Next(uint64_t max_samples) = 0;
  virtual InputPosition LabelAt(uint64_t sample) const = 0;
  // Where the sample starts (its first element).
  virtual InputPosition SampleAt(uint64_t sample) const = 0;
  // Every file the source reads (none for a generator): Convert refuses to write onto them.
  virtual std::vector<std::string> input_paths() const = 0;
};

}  // namespace rf::convert
