// ConvertDocuments: drains a DocumentSource (document_source.h) into a tokens dataset, one record
// a document (format version 2's tokens records, io/format.h), compressed or not, chunks ending by
// bytes as the writer decides.
//
// The stored dtype: --dtype where given; else uint16 where --vocab-size is at most 65536, int32
// where it is at most 2^31; else uint16 where the input's ids are uint8 or uint16 (or a byte
// tokenizer's), else a first pass over the input finds whether every id fits uint16 (it stops at
// the first that does not): uint16 if so, else int32. int64 is stored only where --dtype says so.
//
// Every id is checked as it is copied: a negative id, one at or above --vocab-size, and one the
// stored dtype cannot hold are each refused with one line naming the file and the id's byte
// (JSON lines: line and column), the id and its document. An empty document is skipped and
// counted in the summary (a record holds one id at least); a document longer than
// --max-record-size is refused. Nothing is left behind on failure: the writer removes its
// temporary files, and no output may be an input (CheckOutputPaths).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/codec.h"
#include "tools/convert/document_source.h"

namespace rf::convert {

struct TokenConvertOptions {
  std::optional<DType> dtype;  // uint16, int32 or int64; default: the rule above
  // Ids must lie below it where given (1 to 2^63 - 1).
  std::optional<uint64_t> vocab_size;
  uint64_t chunk_bytes = 4 << 20;
  uint32_t shards = 1;
  uint64_t max_record_bytes = uint64_t{64} << 20;  // the longest document, in stored bytes
  uint64_t block_bytes = 16 << 20;                 // ids read at a time
  CodecSpec codec = {};
  uint32_t compress_threads = 0;
  uint64_t dataset_id = 0;      // 0: random
  uint32_t format_version = 0;  // 2 or 3; 0: the newest (3)
  bool progress = true;
};

struct TokenConvertSummary {
  uint64_t documents = 0;  // records written
  uint64_t ids = 0;
  uint64_t empty_skipped = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;        // chunk bytes stored
  uint64_t input_bytes = 0;  // the input's size (0: unknown)
  DType dtype = DType::kUInt16;
  bool first_pass = false;  // the dtype took a first pass over the input
  double seconds = 0;
  std::vector<std::string> paths;
  std::vector<std::string> removed;
};

Result<TokenConvertSummary> ConvertDocuments(DocumentSource& source, const std::string& out_path,
                                             const TokenConvertOptions& options);

// The summary lines: "wrote OUT: N documents, M ids as uint16, C chunks, X MB in S s (R MB/s of
// input)", the empty documents skipped, the files removed.
std::string TokenConvertReport(const TokenConvertSummary& s);

}  // namespace rf::convert
