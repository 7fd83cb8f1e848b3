// io/fields.h: the field table's text, rules and bytes, and one sample's layout.
#include "io/fields.h"

#include <algorithm>
#include <cstring>

#include "io/format.h"
#include "io/format_fields.h"

namespace rf::format {
namespace {

// Offsets inside one 128-byte entry.
enum EntryOffset : size_t {
  kEntName = 0,
  kEntKind = 32,
  kEntDType = 36,
  kEntNdim = 40,
  kEntDims = 44,
  kEntReserved = 60,
  kEntMedia = 64,
};

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool IsTokenDType(DType t) {
  return t == DType::kUInt16 || t == DType::kInt32 || t == DType::kInt64;
}

Status BadField(const std::string& name, const std::string& why) {
  return Status::InvalidArgument("field '" + name + "': " + why);
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

Result<DType> DTypeOf(const std::string& field, const std::string& name) {
  const std::optional<DType> t = ParseDType(name);
  if (!t) return BadField(field, "unknown dtype '" + name + "'");
  return *t;
}

Result<std::vector<uint64_t>> ShapeOf(const std::string& field, const std::string& text) {
  std::vector<uint64_t> shape;
  for (const std::string& d : Split(text, 'x')) {
    if (d.empty() || d.size() > 10 || d.find_first_not_of("0123456789") != std::string::npos)
      return BadField(field, "shape '" + text + "' is not dims joined by 'x' (3x224x224)");
    shape.push_back(std::stoull(d));
  }
  return shape;
}

}  // namespace

const char* FieldKindName(FieldKind k) {
  switch (k) {
    case FieldKind::kTensor:
      return "tensor";
    case FieldKind::kTokens:
      return "tokens";
    case FieldKind::kBytes:
      return "bytes";
    case FieldKind::kLabel:
      return "label";
  }
  return "unknown";
}

bool FieldSpec::image() const { return kind == FieldKind::kBytes && IsImageMediaType(media_type); }

uint64_t FieldSpec::TensorBytes() const {
  if (kind != FieldKind::kTensor) return 0;
  uint64_t bytes = DTypeSize(dtype);
  for (uint64_t d : shape) bytes *= d;  // CheckSampleShape bounds it (CheckFields)
  return bytes;
}

Result<std::vector<FieldSpec>> ParseFields(const std::string& text) {
  std::vector<FieldSpec> fields;
  if (text.empty()) return Status::InvalidArgument("fields: none given (NAME=TYPE,...)");
  for (const std::string& item : Split(text, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Status::InvalidArgument("fields: '" + item + "' is not NAME=TYPE");
    FieldSpec f;
    f.name = item.substr(0, eq);
    const std::vector<std::string> type = Split(item.substr(eq + 1), ':');
    const std::string& kind = type[0];
    if (kind == "label" && type.size() == 1) {
      f.kind = FieldKind::kLabel;
    } else if (kind == "bytes" && type.size() <= 2) {
      f.media_type = type.size() == 2 ? type[1] : "";
    } else if (kind == "tokens" && type.size() == 2) {
      f.kind = FieldKind::kTokens;
      RF_ASSIGN_OR_RETURN(f.dtype, DTypeOf(f.name, type[1]));
    } else if (kind == "tensor" && type.size() == 3) {
      f.kind = FieldKind::kTensor;
      RF_ASSIGN_OR_RETURN(f.dtype, DTypeOf(f.name, type[1]));
      RF_ASSIGN_OR_RETURN(f.shape, ShapeOf(f.name, type[2]));
    } else if (kind.find('/') != std::string::npos && type.size() == 1) {
      f.media_type = kind;  // a media type alone: bytes of it
    } else {
      return BadField(f.name, "type '" + item.substr(eq + 1) +
                                  "' is none of MEDIA/TYPE, bytes[:MEDIA/TYPE], tokens:DTYPE, "
                                  "tensor:DTYPE:SHAPE, label");
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

std::string FieldTypeText(const FieldSpec& f) {
  switch (f.kind) {
    case FieldKind::kTensor:
      return "tensor:" + std::string(DTypeName(f.dtype)) + ":" + ShapeText(f.shape);
    case FieldKind::kTokens:
      return "tokens:" + std::string(DTypeName(f.dtype));
    case FieldKind::kBytes:
      return f.media_type.find('/') != std::string::npos ? f.media_type
             : f.media_type.empty()                      ? std::string("bytes")
                                                         : "bytes:" + f.media_type;
    case FieldKind::kLabel:
      return "label";
  }
  return "unknown";
}

std::string FieldsText(const std::vector<FieldSpec>& fields) {
  std::string s;
  for (const FieldSpec& f : fields) {
    if (!s.empty()) s += ',';
    s += f.name;
    s += '=';
    s += FieldTypeText(f);
  }
  return s;
}

int FindField(const std::vector<FieldSpec>& fields, const std::string& name) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int ImageFieldIndex(const std::vector<FieldSpec>& fields) {
  int found = -1;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].image()) found = found == -1 ? static_cast<int>(i) : -2;
  }
  return found;
}

Status CheckFields(const std::vector<FieldSpec>& fields, bool has_labels, DType label_dtype) {
  if (fields.empty() || fields.size() > kMaxFields) {
    return Status::InvalidArgument("fields: " + std::to_string(fields.size()) +
                                   " given; a sample has 1 to " + std::to_string(kMaxFields));
  }
  uint32_t labels = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = fields[i];
    if (f.name.empty() || f.name.size() > kMaxFieldName || f.name[0] == '.' ||
        std::any_of(f.name.begin(), f.name.end(), [](char c) { return !IsNameChar(c); })) {
      return BadField(f.name, "a name is 1 to " + std::to_string(kMaxFieldName) +
                                  " characters of A-Z a-z 0-9 _ . - (not starting with '.')");
    }
    if (FindField(fields, f.name) != static_cast<int>(i)) return BadField(f.name, "named twice");
    if (f.kind != FieldKind::kTensor && !f.shape.empty())
      return BadField(f.name, "only tensor fields have a shape");
    if (f.kind != FieldKind::kBytes && !f.media_type.empty())
      return BadField(f.name, "only bytes fields have a media type");
    switch (f.kind) {
      case FieldKind::kTensor:
        if (Status st = CheckSampleShape(f.shape, f.dtype); !st.ok())
          return BadField(f.name, st.message());
        break;
      case FieldKind::kTokens:
        if (!IsTokenDType(f.dtype))
          return BadField(f.name, "token ids of " + std::string(DTypeName(f.dtype)) +
                                      " (they are uint16, int32 or int64)");
        break;
      case FieldKind::kBytes:
        if (f.dtype != DType::kUInt8) return BadField(f.name, "bytes fields are uint8");
        if (!IsHeaderText(f.media_type, kMaxMediaType))
          return BadField(f.name, "media type '" + f.media_type +
                                      "' is not at most 63 printable ASCII characters");
        break;
      case FieldKind::kLabel:
        if (++labels > 1) return BadField(f.name, "a second label field (a sample has one label)");
        if (!has_labels) return BadField(f.name, "a label field in a dataset without labels");
        if (f.dtype != label_dtype) {
          return BadField(f.name, "a label of " + std::string(DTypeName(f.dtype)) +
                                      ", the dataset's labels are " +
                                      std::string(DTypeName(label_dtype)));
        }
        break;
      default:
        return BadField(f.name, "unknown kind " + std::to_string(static_cast<uint32_t>(f.kind)));
    }
  }
  if (has_labels && labels == 0)
    return Status::InvalidArgument(
        "fields: the dataset has labels and no field is the label (NAME=label)");
  if (StoredFieldCount(fields) == 0)
    return Status::InvalidArgument("fields: a sample needs a field besides its label");
  return Status::Ok();
}

void EncodeFieldTable(const std::vector<FieldSpec>& fields, uint8_t* header) {
  Put<uint32_t>(header, kFieldTableOffset, static_cast<uint32_t>(fields.size()));
  for (size_t i = 0; i < fields.size() && i < kMaxFields; ++i) {
    const FieldSpec& f = fields[i];
    uint8_t* e = header + kFieldEntriesOffset + i * kFieldEntryBytes;
    std::memcpy(e + kEntName, f.name.data(), std::min(f.name.size(), kMaxFieldName));
    Put<uint32_t>(e, kEntKind, static_cast<uint32_t>(f.kind));
    // A label's dtype is the header's (its entry says uint8 where it says nothing else).
    Put<uint32_t>(e, kEntDType, static_cast<uint32_t>(f.dtype));
    Put<uint32_t>(e, kEntNdim, static_cast<uint32_t>(f.shape.size()));
    for (size_t d = 0; d < f.shape.size() && d < kMaxDims; ++d)
      Put<uint32_t>(e, kEntDims + 4 * d, static_cast<uint32_t>(f.shape[d]));
    std::memcpy(e + kEntMedia, f.media_type.data(), std::min(f.media_type.size(), kMaxMediaType));
  }
}

Status DecodeFieldTable(const uint8_t* header, bool has_labels, DType label_dtype,
                        std::vector<FieldSpec>* out, size_t* at, std::string* why) {
  auto fail = [&](size_t off, const std::string& what) {
    *at = off;
    *why = what;
    return Status::InvalidArgument(what);
  };
  const uint32_t count = Get<uint32_t>(header, kFieldTableOffset);
  if (count == 0 || count > kMaxFields) {
    return fail(kFieldTableOffset,
                std::to_string(count) + " fields; a sample has 1 to " + std::to_string(kMaxFields));
  }
  std::vector<FieldSpec> fields;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t base = kFieldEntriesOffset + i * kFieldEntryBytes;
    const uint8_t* e = header + base;
    const std::string entry = "field " + std::to_string(i);
    // The two texts: NUL-terminated within their bytes, zero after.
    auto text = [&](size_t off, size_t max, std::string* s) -> bool {
      const char* t = reinterpret_cast<const char*>(e + off);
      const size_t len = strnlen(t, max + 1);
      if (len > max) return false;
      for (size_t k = len; k <= max; ++k) {
        if (t[k] != 0) return false;
      }
      s->assign(t, len);
      return true;
    };
    FieldSpec f;
    if (!text(kEntName, kMaxFieldName, &f.name))
      return fail(base + kEntName, entry + "'s name is not NUL-padded");
    if (!text(kEntMedia, kMaxMediaType, &f.media_type))
      return fail(base + kEntMedia, entry + "'s media type is not NUL-padded");
    const uint32_t kind = Get<uint32_t>(e, kEntKind);
    if (kind > static_cast<uint32_t>(FieldKind::kLabel))
      return fail(base + kEntKind, entry + " of unknown kind " + std::to_string(kind));
    f.kind = static_cast<FieldKind>(kind);
    const uint32_t dtype = Get<uint32_t>(e, kEntDType);
    if (!IsSampleDType(static_cast<DType>(dtype)))
      return fail(base + kEntDType, entry + " of unknown dtype " + std::to_string(dtype));
    f.dtype = static_cast<DType>(dtype);
    const uint32_t ndim = Get<uint32_t>(e, kEntNdim);
    if (ndim > kMaxDims || (ndim == 0) == (f.kind == FieldKind::kTensor))
      return fail(base + kEntNdim,
                  entry + " of " + std::to_string(ndim) + " dims (" + FieldKindName(f.kind) + ")");
    for (uint32_t d = 0; d < kMaxDims; ++d) {
      const uint32_t v = Get<uint32_t>(e, kEntDims + 4 * d);
      if ((d < ndim) == (v == 0))
        return fail(base + kEntDims + 4 * d, entry + "'s dim " + std::to_string(d) + " is " +
                                                 std::to_string(v) + " in a shape of " +
                                                 std::to_string(ndim) + " dims");
      if (d < ndim) f.shape.push_back(v);
    }
    if (Get<uint32_t>(e, kEntReserved) != 0)
      return fail(base + kEntReserved, entry + "'s reserved bytes are not zero");
    fields.push_back(std::move(f));
  }
  for (size_t b = kFieldEntriesOffset + count * kFieldEntryBytes;
       b < kFieldEntriesOffset + kMaxFields * kFieldEntryBytes; ++b) {
    if (header[b] != 0) return fail(b, "bytes after the field table are not zero");
  }
  if (Status st = CheckFields(fields, has_labels, label_dtype); !st.ok())
    return fail(kFieldTableOffset, st.message());
  *out = std::move(fields);
  return Status::Ok();
}

uint32_t StoredFieldCount(const std::vector<FieldSpec>& fields) {
  uint32_t n = 0;
  for (const FieldSpec& f : fields) n += f.stored() ? 1 : 0;
  return n;
}

bool SplitSample(const std::vector<FieldSpec>& fields, const uint8_t* record, uint64_t size,
                 FieldSpan* spans, std::string* why) {
  const uint64_t stored = StoredFieldCount(fields);
  const uint64_t prefix = 4 * stored;
  if (size < prefix) {
    *why = "a sample of " + std::to_string(size) + " bytes, shorter than its " +
           std::to_string(stored) + " field lengths";
    return false;
  }
  uint64_t at = prefix;
  uint32_t k = 0;
  for (const FieldSpec& f : fields) {
    if (!f.stored()) continue;
    const uint64_t len = Get<uint32_t>(record, 4 * k);
    if (len > size - at) {  // at <= size throughout
      *why = "field '" + f.name + "' of " + std::to_string(len) + " bytes runs past the sample's " +
             std::to_string(size) + " bytes";
      return false;
    }
    if (f.kind == FieldKind::kTensor && len != f.TensorBytes()) {
      *why = "tensor field '" + f.name + "' of " + std::to_string(len) +
             " bytes, not its shape's " + std::to_string(f.TensorBytes());
      return false;
    }
    if (f.kind == FieldKind::kTokens && len % DTypeSize(f.dtype) != 0) {
      *why = "tokens field '" + f.name + "' of " + std::to_string(len) +
             " bytes, no whole number of " + std::string(DTypeName(f.dtype)) + " ids";
      return false;
    }
    spans[k] = FieldSpan{at, len};
    at += len;
    ++k;
  }
  if (at != size) {
    *why = "the field lengths add up to " + std::to_string(at) + " bytes of the sample's " +
           std::to_string(size);
    return false;
  }
  return true;
}

void EncodeSample(const std::vector<FieldSpec>& fields, const uint8_t* const* parts,
                  const uint64_t* sizes, std::vector<uint8_t>* out) {
  const uint32_t stored = StoredFieldCount(fields);
  const size_t start = out->size();
  out->resize(start + 4 * size_t{stored});
  for (uint32_t k = 0; k < stored; ++k)
    Put<uint32_t>(out->data(), start + 4 * k, static_cast<uint32_t>(sizes[k]));
  for (uint32_t k = 0; k < stored; ++k) out->insert(out->end(), parts[k], parts[k] + sizes[k]);
}

}  // namespace rf::format
