// Samples of several fields (io/format.h's record kind `fields`): the header's field table and the
// layout of one sample. docs/format.md describes them for users; this header is normative.
//
// A dataset of record kind `fields` (format version 3) holds samples of 1 to kMaxFields named
// fields, the same fields in every sample, listed in the header's field table (at byte 1024: a
// u32 count, then one 128-byte entry a field, in the order the samples store them). A field is
//
//   tensor   one fixed shape (1 to 4 dims) of any sample dtype, the same size in every sample;
//   tokens   a 1-D run of token ids of uint16, int32 or int64, of any length (0 included);
//   bytes    opaque bytes of any length (0 included), with a media type ("image/jpeg", "text/
//            plain"; "" unknown). A bytes field of an image media type (IsImageMediaType) is an
//            image field: the loader decodes it as it decodes image records;
//   label    the sample's integer label: stored where every dataset stores labels (the chunk's
//            labels, io/format.h), with the header's label dtype and class count; no bytes in the
//            sample. At most one, and there exactly where the header has labels (num_classes > 0).
//
// Each sample is one record of the record table (io/format.h: records of any size, uint8), laid
// out as
//
//   [ u32 byte length of each field that has bytes (all but the label), in table order ]
//   [ those fields' bytes, back to back, in table order ]
//
// so a sample is at least 4 bytes a field, and the lengths add up to the record's size exactly.
// A tensor field's length is its shape's bytes; a tokens field's a whole number of ids. The
// header's shape is the largest sample's bytes, as for bytes records.
//
// An entry: name (32 bytes: 1 to 31 characters of [A-Za-z0-9_.-], not starting with '.',
// NUL-padded; names unique), u32 kind at 32, u32 dtype at 36, u32 ndim at 40 and four u32 dims at
// 44 (tensor fields; 0 for the others), u32 0 at 60, the media type at 64 (64 bytes: printable
// ASCII without spaces, NUL-padded; bytes fields only). Bytes after the last entry are zero.
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace rf::format {

inline constexpr uint32_t kMaxFields = 16;
inline constexpr size_t kMaxFieldName = 31;
inline constexpr size_t kFieldEntryBytes = 128;
inline constexpr size_t kFieldTableOffset = 1024;  // the count; the entries from byte 1032
inline constexpr size_t kFieldEntriesOffset = kFieldTableOffset + 8;

// Stored as a u32 in the entry; never renumber.
enum class FieldKind : uint32_t { kTensor = 0, kTokens = 1, kBytes = 2, kLabel = 3 };
const char* FieldKindName(FieldKind k);

struct FieldSpec {
  std::string name;
  FieldKind kind = FieldKind::kBytes;
  // tensor: any; tokens: uint16, int32, int64; bytes: uint8; label: the dataset's label dtype
  DType dtype = DType::kUInt8;
  std::vector<uint64_t> shape;  // tensor fields only
  std::string media_type;       // bytes fields only; "" unknown

  // Whether the field's bytes are in the sample (all but the label).
  bool stored() const { return kind != FieldKind::kLabel; }
  // A bytes field of an image media type: decoded by the loader's image stage.
  bool image() const;
  // A tensor field's bytes in every sample (0 for the others).
  uint64_t TensorBytes() const;
};

// "jpg=image/jpeg,txt=tokens:int32,emb=tensor:float32:512,cls=label": each field NAME=TYPE, TYPE
// one of `image/jpeg` (or any MEDIA/TYPE: a bytes field of that media type), `bytes`,
// `bytes:MEDIA/TYPE`, `tokens:DTYPE`, `tensor:DTYPE:SHAPE` (SHAPE as "3x32x32"), `label`. The
// same text is what FieldsText writes and inspect shows. InvalidArgument naming the field.
Result<std::vector<FieldSpec>> ParseFields(const std::string& text);
// One field's TYPE as ParseFields reads it ("tokens:int32").
std::string FieldTypeText(const FieldSpec& f);
std::string FieldsText(const std::vector<FieldSpec>& fields);
// The table's rules (above) for a dataset with `has_labels` of `label_dtype`: InvalidArgument
// naming the field at fault.
Status CheckFields(const std::vector<FieldSpec>& fields, bool has_labels, DType label_dtype);
// The index of the field named `name`, or -1.
int FindField(const std::vector<FieldSpec>& fields, const std::string& name);
// The index of the one image field (FieldSpec::image()); -1 where there is none, -2 where there
// are several.
int ImageFieldIndex(const std::vector<FieldSpec>& fields);

// The table's bytes into a header (the kHeaderBytes buffer; fields checked), and back: decoded
// and checked against the header's labels; errors name the byte of the header at fault through
// `at` (its offset in the header).
void EncodeFieldTable(const std::vector<FieldSpec>& fields, uint8_t* header);
Status DecodeFieldTable(const uint8_t* header, bool has_labels, DType label_dtype,
                        std::vector<FieldSpec>* out, size_t* at, std::string* why);

// Where one stored field of a sample lies: bytes [offset, offset + size) of the record.
struct FieldSpan {
  uint64_t offset = 0;
  uint64_t size = 0;
};
// The number of stored fields (all but the label).
uint32_t StoredFieldCount(const std::vector<FieldSpec>& fields);
// Splits one sample (a record of `size` bytes) into its stored fields' spans (StoredFieldCount of
// them, in table order); false with `why` where the sample breaks the layout's rules (above): too
// short for its lengths, lengths that do not add up to its size, a tensor field of another size,
// tokens that are no whole number of ids. Reads only the `size` bytes at `record`.
bool SplitSample(const std::vector<FieldSpec>& fields, const uint8_t* record, uint64_t size,
                 FieldSpan* spans, std::string* why);
// One sample's record from its stored fields' bytes (parts[i], sizes[i], in table order; the
// caller checks them with SplitSample where they came from elsewhere): appended to `out`.
void EncodeSample(const std::vector<FieldSpec>& fields, const uint8_t* const* parts,
                  const uint64_t* sizes, std::vector<uint8_t>* out);

}  // namespace rf::format
