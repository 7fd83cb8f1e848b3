// Megatron-LM's indexed dataset (its MMapIndexedDataset, "MMIDIDX"), in and out.
//
// PREFIX.bin holds every sequence's ids back to back; PREFIX.idx, little-endian, is
//
//   [ magic "MMIDIDX\0\0", 9 bytes ][ version, u64: 1 ][ dtype code, u8 ]
//   [ sequence count N, u64 ][ document count, u64: D + 1 ]
//   [ sizes: N int32, ids per sequence ][ pointers: N int64, each sequence's byte in .bin ]
//   [ document indices: D + 1 int64; document k is sequences [idx[k], idx[k + 1]) ]
//
// with dtype codes 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16.
// Megatron's writer lays the sequences out back to back in order and starts the document indices
// with 0 and ends them with N; a document of one sequence each is what its preprocessing writes
// without sentence splitting.
//
// What the converter takes, anything else refused naming the file and the byte: the magic,
// version 1, an integer dtype code (floats are no token ids); an .idx of exactly 34 + 12 N + 8 (D
// + 1) bytes (a multimodal index's sequence modes after the document indices are refused); every
// size at least 1 (a record holds one id: an empty sequence is refused, not skipped, since an
// export could not give it back); pointers back to back from 0, each sequence starting where the
// one before ends, the last ending at the .bin's end (so none overlaps, runs out of order, leaves
// a gap or runs past the file); document indices from 0 to N, never decreasing.
//
// The dataset: one tokens record a sequence, ids stored by token_converter.h's rule. The header's
// origin (io/format.h) keeps what an export needs to give the input back byte for byte:
//
//   megatron;dtype=NAME;documents=sequences   every document is one sequence (indices 0, 1, ...,
//                                             N): the dataset has no labels
//   megatron;dtype=NAME;documents=labels      otherwise: each record's label is its document
//                                             number k (idx[k] <= i < idx[k + 1]), the class count
//                                             D, labels the narrowest of uint8, uint16 and int32
//                                             that names D; an empty document is a number no
//                                             record has
//
// NAME is the .idx's dtype (uint8, int8, int16, int32, int64, uint16). The document numbers are
// labels because a label is the one thing a record carries besides its ids: they stay with their
// records through every copy of the dataset (recompress keeps them, and the origin), where a side
// file could be lost, and the loader hands them out (which sequences make one document).
//
// export --format megatron writes PREFIX.bin and PREFIX.idx: for a dataset of that origin, the
// input's bytes (the same dtype code, sizes, pointers and document indices); for any other tokens
// dataset, its stored dtype's code (uint16 8, int32 4, int64 5) and one document a record.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "io/dataset.h"
#include "tools/convert/document_source.h"
#include "tools/convert/elem_type.h"
#include "tools/convert/exporter.h"

namespace rf::convert {

inline constexpr char kMegatronMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kMegatronHeaderBytes = 34;

// The integer dtype codes; none for float codes (6, 7) and unknown ones.
std::optional<Elem> ElemFromMegatronCode(uint8_t code);
std::optional<uint8_t> MegatronCodeOf(Elem e);

// The origin text above, and back (nullopt where the origin is not Megatron's; Corruption, naming
// the header's byte, where it says Megatron but not in these words).
struct MegatronOrigin {
  Elem elem = Elem::kU16;
  bool documents_in_labels = false;
};
std::string MegatronOriginText(const MegatronOrigin& o);
Result<std::optional<MegatronOrigin>> ParseMegatronOrigin(const format::Header& h,
                                                          const std::string& path);

// PREFIX.bin and PREFIX.idx (PREFIX may also be given as either file's name). The .idx is checked
// whole before the first document is handed out; the .bin is read front to back.
Result<std::unique_ptr<DocumentSource>> OpenMegatronSource(const std::string& prefix);

// The files export writes, and the export itself (exporter.h's interface).
std::vector<std::string> MegatronPaths(const std::string& prefix);
Result<ExportSummary> ExportMegatron(const Dataset& d, const ExportOptions& o, Progress& progress);

}  // namespace rf::convert
