// Export: writes a dataset back out in an interchange format, streaming chunk by chunk (memory
// is one chunk plus one output buffer; the predecessor's feature-major layout takes one block of
// samples sized by the memory budget). Every file is written under a temporary name and renamed
// into place only when complete.
//
//   raw          PREFIX.records (samples, stored dtype) + PREFIX.labels (label dtype)
//   idx          PREFIX-images.idx + PREFIX-labels.idx, uncompressed, big-endian
//                (uint8 or float32 samples; uint8 labels stay 0x08, wider ones are 0x0C int32)
//   cifar        PREFIX.bin: per sample one label byte, then the sample (uint8 samples)
//   npy          PREFIX-images.npy + PREFIX-labels.npy with the header numpy writes
//   predecessor  PREFIX_images.bin (float32, feature-major) + PREFIX_labels.bin (int32)
//                (intensity dtypes only: ids would not survive float32)
//   megatron     PREFIX.bin + PREFIX.idx, Megatron-LM's indexed dataset (tokens records only:
//                megatron.h; byte for byte the input of a dataset converted from one)
//
// A dataset without labels exports labels of 0 (uint8 unless --label-dtype says otherwise).
//
// Layout (raw, idx, npy): nchw writes the samples as stored, (N, shape...): (N,C,H,W) for a
// C,H,W dataset, (N,2048) for token rows. For C,H,W datasets only: nhw writes (N,H,W) and needs
// C = 1; nhwc transposes each sample to H,W,C. The default is nhw for one channel of a C,H,W
// dataset, nchw otherwise, which gives back the bytes of an IDX or .npy input exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "io/sequential_output.h"
#include "tools/convert/elem_type.h"
#include "tools/convert/progress.h"

namespace rf::convert {

enum class ExportFormat { kRaw, kIdx, kCifar, kNpy, kPredecessor, kMegatron };
enum class ExportLayout { kAuto, kNchw, kNhwc, kNhw };

struct ExportOptions {
  ExportFormat format = ExportFormat::kRaw;
  std::string prefix;
  ExportLayout layout = ExportLayout::kAuto;
  // raw and npy: the label type written (default: the stored one), e.g. int64 to give back an
  // .npy of int64 labels byte for byte.
  std::optional<Elem> label_elem;
  uint64_t memory_budget = 256 << 20;
  bool progress = true;
};

struct ExportSummary {
  std::vector<std::string> paths;
  uint64_t samples = 0;
  uint64_t bytes = 0;  // written
  double seconds = 0;
};

Result<ExportSummary> Export(const Dataset& dataset, const ExportOptions& options);

std::optional<ExportFormat> ParseExportFormat(const std::string& name);
// The files a format writes for a prefix (the list in the comment above), samples first.
std::vector<std::string> ExportPaths(ExportFormat format, const std::string& prefix);
std::optional<ExportLayout> ParseExportLayout(const std::string& name);

// The format-specific halves (one file each); Export() picks one and reports.
Result<ExportSummary> ExportRaw(const Dataset& d, const ExportOptions& o, Progress& progress);
Result<ExportSummary> ExportIdx(const Dataset& d, const ExportOptions& o, Progress& progress);
Result<ExportSummary> ExportCifar(const Dataset& d, const ExportOptions& o, Progress& progress);
Result<ExportSummary> ExportNpy(const Dataset& d, const ExportOptions& o, Progress& progress);
Result<ExportSummary> ExportPredecessor(const Dataset& d, const ExportOptions& o,
                                        Progress& progress);

// Shared by the exporters: the layout actually written (kAuto resolved; nhw checked against C),
// the shape as written for that layout, and the samples of one chunk in that layout.
Result<ExportLayout> ResolveLayout(const format::Header& h, ExportLayout layout);
std::vector<uint64_t> ExportShape(const format::Header& h, ExportLayout layout);
// Returns samples itself for nchw/nhw; for nhwc a transposed copy in *scratch.
const uint8_t* SamplesInLayout(const format::Header& h, ExportLayout layout, const uint8_t* samples,
                               uint32_t count, std::vector<uint8_t>* scratch);

// The body shared by the two-file formats (raw, idx, npy): streams every chunk's samples, in
// `layout`, after whatever `samples` already holds, and its labels, as `label_elem`, after what
// `labels` holds; both byte-swapped to big-endian when `big_endian` (IDX). Then commits both.
Result<ExportSummary> ExportSamplesAndLabels(const Dataset& d, ExportLayout layout, Elem label_elem,
                                             bool big_endian, SequentialOutput& samples,
                                             SequentialOutput& labels, Progress& progress);

}  // namespace rf::convert
