// SampleSource: what every converter input (IDX, CIFAR, .npy, raw, predecessor, synthetic)
// presents to the converter: a known number of samples of one shape and element type, handed
// out in blocks, in order.
//
// A block comes in two steps, so that the converter can keep several blocks in flight and spread
// the work of each over threads: Read (one thread, in order) reads the block's bytes and labels
// into buffers the caller owns, as the input holds them; Decode (any thread, any part of a block)
// turns a range of its samples into row-major samples in host order: the predecessor's transpose,
// IDX's and big-endian .npy's byte swaps, nhwc's layout change, records' labels cut out. Next()
// does both, into the source's own buffers, for callers of one thread.
//
// Ownership: a block's memory belongs to the buffers it was read into (Next(): to the source)
// and stays valid until they are read into again or destroyed. Thread safety: Read, Next and
// the position functions on one thread; Decode on any threads at once, with each other and with
// Read into other buffers.
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
  // After Next(): count samples, SourceShape::SampleBytes() each. After Read(): the block's bytes
  // as read, which Decode reads (the samples themselves where SampleSource::decodes() is false).
  const uint8_t* samples = nullptr;
  const int64_t* labels = nullptr;  // count labels
  uint64_t first = 0;               // index of the block's first sample in the input
  uint64_t count = 0;               // 0: the input is exhausted
};

// Where a label or a sample sits in the input, for error messages.
struct InputPosition {
  std::string path;
  uint64_t offset = 0;
};

// The memory one block is read into; a source sizes what it uses of it. Reused from block to
// block, so a converter's buffers grow to the largest block once.
struct BlockBuffers {
  std::vector<uint8_t> bytes;   // the block as read
  std::vector<uint8_t> extra;   // what else a source reads with it (label bytes)
  std::vector<int64_t> labels;  // SampleBlock::labels
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual const SourceShape& shape() const = 0;
  // Reads the next block of at most max_samples (>= 1) samples into `buffers`: its labels, and
  // its samples as the input holds them. count 0: the input is exhausted. Data errors name file
  // and offset.
  virtual Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buffers) = 0;
  // Whether Decode has work to do: false where the bytes Read hands out are the samples.
  virtual bool decodes() const { return false; }
  // Samples [begin, end) of `block` (indices within the block, from Read), row-major in host
  // order: written to `scratch`, which has room for end - begin samples, and returned; or, where
  // decodes() is false, a pointer into the block's own bytes. Reads only the block and the
  // source's shape: safe on any thread.
  virtual const uint8_t* Decode(const SampleBlock& block, uint64_t begin, uint64_t end,
                                uint8_t* scratch) const;
  // Read and Decode of the whole block, into the source's own buffers.
  Result<SampleBlock> Next(uint64_t max_samples);
  virtual InputPosition LabelAt(uint64_t sample) const = 0;
  // Where the sample starts (its first element).
  virtual InputPosition SampleAt(uint64_t sample) const = 0;
  // Every file the source reads (none for a generator): Convert refuses to write onto them.
  virtual std::vector<std::string> input_paths() const = 0;

 private:
  BlockBuffers own_;  // Next()'s
  std::vector<uint8_t> decoded_;
};

}  // namespace rf::convert
