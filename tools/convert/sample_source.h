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

#include "io/dtype.h"
#include "io/status.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

struct SourceShape {
  uint32_t channels = 1, height = 1, width = 1;
  Elem elem = Elem::kU8;  // of the samples Next() hands out (host byte order, C x H x W each)
  uint64_t samples = 0;   // in the whole input
  // The label dtype the dataset stores: the input's own where it is one (so an export gives the
  // input's bytes back), int32 for wider integer labels.
  DType label_dtype = DType::kUInt8;
  uint32_t num_classes = 0;  // known from the format (CIFAR-10: 10), or 0

  uint64_t SampleElems() const { return uint64_t{channels} * height * width; }
  uint64_t SampleBytes() const { return SampleElems() * ElemSize(elem); }
};

struct SampleBlock {
  const uint8_t* samples = nullptr;  // count samples, SourceShape::SampleBytes() each
  const int64_t* labels = nullptr;   // count labels
  uint64_t first = 0;                // index of the block's first sample in the input
  uint64_t count = 0;                // 0: the input is exhausted
};

// Where a label sits in the input, for error messages.
struct LabelPosition {
  std::string path;
  uint64_t offset = 0;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual const SourceShape& shape() const = 0;
  // The next block of at most max_samples (>= 1) samples. Data errors name file and offset.
  virtual Result<SampleBlock> Next(uint64_t max_samples) = 0;
  virtual LabelPosition LabelAt(uint64_t sample) const = 0;
  // Every file the source reads (none for a generator): Convert refuses to write onto them.
  virtual std::vector<std::string> input_paths() const = 0;
};

}  // namespace rf::convert
