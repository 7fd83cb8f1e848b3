// The token corpus inputs besides Megatron's (megatron.h), each a DocumentSource
// (document_source.h):
//
//   .npy documents  a directory of .npy files, one 1-D integer array a document, read in name
//                   order (byte order of the names; other files are passed over), all of one
//                   dtype; or one 1-D integer .npy of every document's ids with a 1-D integer
//                   .npy of N + 1 element offsets (0 first, the ids' length last, never
//                   decreasing: document i is ids[offsets[i]:offsets[i + 1]])
//   JSON lines      each line one JSON value, parsed by nlohmann-json: a list of integer ids, or
//                   an object whose "tokens" (or "input_ids") member is one (other members are
//                   passed over; an object with both, or neither, or one key twice, is refused).
//                   A malformed line, a blank one, text after the value, a NUL byte, an element
//                   that is not an integer, nesting deeper than 512, is refused naming file, line
//                   and column and the byte. Lines are parsed as they are read, never held whole
//                   (json_line_stream.h): memory does not follow a line's length, only its
//                   strings: a string (or number, or run between two) longer than
//                   --max-record-size or --memory-budget, whichever is smaller (64 KiB at least),
//                   is refused the same way
//   text, bytes     each file (or each line, its '\n' not kept) a document, its bytes the ids 0 to
//                   255, then the end-of-document id 256; uint16
//
// An empty document (an empty array, file or line) is handed on as one, which ConvertDocuments
// skips and counts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/convert/document_source.h"

namespace rf::convert {

// The byte tokenizer's end-of-document id (its vocabulary: 257 ids).
inline constexpr uint16_t kEndOfDocument = 256;

Result<std::unique_ptr<DocumentSource>> OpenNpyDirectorySource(const std::string& dir);
Result<std::unique_ptr<DocumentSource>> OpenNpyOffsetsSource(const std::string& ids_path,
                                                             const std::string& offsets_path);
// --max-record-size and --memory-budget, which also bound a line's strings (above).
Result<std::unique_ptr<DocumentSource>> OpenJsonLinesSource(const std::vector<std::string>& paths,
                                                            uint64_t max_record_bytes,
                                                            uint64_t memory_budget);
Result<std::unique_ptr<DocumentSource>> OpenByteTextSource(const std::vector<std::string>& paths,
                                                           bool split_lines);

}  // namespace rf::convert
