// DocumentSource: what every token corpus input (Megatron-LM's indexed dataset, .npy documents,
// JSON lines, text through a tokenizer) presents to ConvertDocuments (token_converter.h):
// documents, each a 1-D run of integer ids, handed out in blocks, in input order.
//
// A source reads; it does not judge ids. ConvertDocuments checks every id (negative, at or above
// --vocab-size, outside the stored dtype) and asks the source where a bad one lies (IdAt), and it
// skips and counts empty documents. A source refuses what only it can see: a malformed file, and
// a document longer than the longest record, before it holds more of it than that.
//
// Ownership: a block's memory belongs to the source and stays valid until the next Next() or
// Rewind(). Thread safety: none; one thread reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

struct DocumentBlock {
  const uint8_t* ids = nullptr;       // the documents' ids back to back, elem(), host order
  const uint64_t* offsets = nullptr;  // count + 1 element offsets into ids, offsets[0] == 0
  const int64_t* labels = nullptr;    // count labels where labels() has them, else nullptr
  uint64_t first = 0;                 // index of the block's first document in the input
  uint64_t count = 0;                 // 0: the input is exhausted
  uint64_t input_bytes_done = 0;      // input bytes read up to the block's end (progress)
};

// Where an id or a document lies in the input, for errors: the file, the byte, and where the
// byte alone is hard to find by eye, what else names the place ("line 3, column 14"), or "".
struct DocumentPosition {
  std::string path;
  uint64_t offset = 0;
  std::string detail;
};

// What a source's labels are, where it has any (Megatron's documents of several sequences: the
// record's document number, tools/convert/megatron.h).
struct DocumentLabels {
  DType dtype = DType::kUInt8;
  uint32_t classes = 0;
};

class DocumentSource {
 public:
  virtual ~DocumentSource() = default;
  // The element type of the ids Next hands out (an integer type).
  virtual Elem elem() const = 0;
  // The next documents: whole ones, about block_bytes of ids (one at least, however long). A
  // document of more than max_ids ids is an error naming where it starts (TooLongDocument).
  virtual Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) = 0;
  // Back to the first document, for a second pass (ConvertDocuments' first pass finds the dtype).
  virtual Status Rewind() = 0;
  // Where id j of document `doc` lies; `doc` is one of the last block's.
  virtual DocumentPosition IdAt(uint64_t doc, uint64_t j) const = 0;
  virtual std::vector<std::string> input_paths() const = 0;
  // The input's size in bytes, for the progress bar and the rate (0: unknown).
  virtual uint64_t input_bytes() const = 0;
  virtual std::optional<DocumentLabels> labels() const { return std::nullopt; }
  // What the dataset's header records as its origin (io/format.h), "" for none.
  virtual std::string origin() const { return ""; }
  // Whether a first pass is needed to find that every id fits uint16: not where elem() is uint8
  // or uint16, or where the source knows its ids are small (a byte tokenizer).
  virtual bool ids_fit_uint16() const { return elem() == Elem::kU8 || elem() == Elem::kU16; }
};

// "document 12 holds 40000000 ids, more than the 33554432 a record holds (--max-record-size)"
// ("holds more than the 33554432 ids a record holds" where the count is not known), naming where
// the document starts.
Status TooLongDocument(const DocumentPosition& at, uint64_t doc, std::optional<uint64_t> ids,
                       uint64_t max_ids);

}  // namespace rf::convert
