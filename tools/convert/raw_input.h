// Raw input: a file of fixed-size records after an optional header, each record a C x H x W
// sample of one element type with its label first, last, in a separate file of N labels, or
// absent (every label 0).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/dtype.h"
#include "io/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

struct RawOptions {
  enum class Labels { kFirst, kLast, kNone, kFile };
  std::string records_path;
  uint32_t channels = 1, height = 1, width = 1;
  Elem elem = Elem::kU8;
  DType label_dtype = DType::kUInt8;
  Labels labels = Labels::kFirst;
  std::string labels_path;  // with kFile
  uint64_t header_bytes = 0;
};

// Checks up front that the records file holds whole records and the labels file N labels.
Result<std::unique_ptr<SampleSource>> OpenRawSource(const RawOptions& options);

}  // namespace rf::convert
