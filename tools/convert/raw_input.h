// Raw input: a file of fixed-size records after an optional header, each record a sample of one
// shape (1 to 4 dims, row-major) and one element type with its label first, last, in a separate
// file of N labels, or absent (the dataset has no labels).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

struct RawOptions {
  enum class Labels { kFirst, kLast, kNone, kFile };
  std::string records_path;
  std::vector<uint64_t> shape = {1, 1, 1};  // the sample shape, outermost first
  Elem elem = Elem::kU8;                    // one with a stored dtype (ElemAsDType)
  DType label_dtype = DType::kUInt8;
  Labels labels = Labels::kFirst;
  std::string labels_path;  // with kFile
  uint64_t header_bytes = 0;
};

// Checks up front that the records file holds whole records and the labels file N labels.
Result<std::unique_ptr<SampleSource>> OpenRawSource(const RawOptions& options);

}  // namespace rf::convert
