#include "tools/convert/npy_header.h"

#include <cctype>
#include <cstring>

namespace rf::convert {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr uint64_t kAlign = 64;
constexpr size_t kGrowthAxisMaxDigits = 21;
constexpr uint64_t kMaxHeader = 1 << 20;

std::string ShapeRepr(const std::vector<uint64_t>& shape) {
  if (shape.empty()) return "()";
  std::string s = "(";
  if (shape.size() == 1) return s.append(std::to_string(shape[0])).append(",)");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

// A recursive-descent reader of the dict literal; positions count from the header text's start.
class DictParser {
 public:
  DictParser(const std::string& text, const std::string& path, uint64_t base)
      : t_(text), path_(path), base_(base) {}

  Result<NpyHeader> Parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Eat('{')) return Error("expected '{'");
    for (;;) {
      SkipSpace();
      if (Eat('}')) break;
      const size_t key_at = i_;
      std::string key;
      if (!ReadString(&key)) return Error("expected a quoted key");
      SkipSpace();
      if (!Eat(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      const size_t value_at = i_;
      if (key == "descr") {
        if (Peek() == '[') return Error("unsupported dtype: structured arrays are not supported");
        if (!ReadString(&h.descr)) return Error("expected a quoted dtype after 'descr'");
        have_descr = true;
        if (Status st = ParseDescr(&h, value_at); !st.ok()) return st;
      } else if (key == "fortran_order") {
        bool fortran = false;
        if (!ReadBool(&fortran)) return Error("expected True or False after 'fortran_order'");
        if (fortran) {
          i_ = value_at;
          return Error("fortran_order True is not supported (save the array C-contiguous)", false);
        }
        have_order = true;
      } else if (key == "shape") {
        h.shape_offset = base_ + value_at;
        if (!ReadTuple(&h.shape)) return Error("expected a tuple of integers after 'shape'");
        have_shape = true;
      } else {
        i_ = key_at;
        return Error("unexpected key '" + key + "'");
      }
      SkipSpace();
      if (!Eat(',')) {
        SkipSpace();
        if (!Eat('}')) return Error("expected ',' or '}'");
        break;
      }
    }
    if (!have_descr || !have_order || !have_shape) {
      return Error("the dict needs the keys 'descr', 'fortran_order' and 'shape'");
    }
    return h;
  }

 private:
  char Peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  void SkipSpace() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  bool ReadString(std::string* out) {
    const char q = Peek();
    if (q != '\'' && q != '"') return false;
    const size_t end = t_.find(q, i_ + 1);
    if (end == std::string::npos) return false;
    *out = t_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return true;
  }
  bool ReadBool(bool* out) {
    if (t_.compare(i_, 4, "True") == 0) {
      *out = true;
      i_ += 4;
      return true;
    }
    if (t_.compare(i_, 5, "False") == 0) {
      *out = false;
      i_ += 5;
      return true;
    }
    return false;
  }
  bool ReadTuple(std::vector<uint64_t>* out) {
    if (!Eat('(')) return false;
    for (;;) {
      SkipSpace();
      if (Eat(')')) return true;
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return false;
      uint64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) {
        if (v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + static_cast<uint64_t>(t_[i_++] - '0');
      }
      out->push_back(v);
      SkipSpace();
      if (!Eat(',')) {
        SkipSpace();
        return Eat(')');
      }
    }
  }
  Status ParseDescr(NpyHeader* h, size_t at) {
    const std::string& d = h->descr;
    std::optional<Elem> e;
    if (d.size() >= 3 && std::strchr("<>|=", d[0]) != nullptr) {
      const std::string kind = d.substr(1);
      if (kind == "u1") e = Elem::kU8;
      if (kind == "i1") e = Elem::kI8;
      if (kind == "u2") e = Elem::kU16;
      if (kind == "i2") e = Elem::kI16;
      if (kind == "u4") e = Elem::kU32;
      if (kind == "i4") e = Elem::kI32;
      if (kind == "u8") e = Elem::kU64;
      if (kind == "i8") e = Elem::kI64;
      if (kind == "f2") e = Elem::kF16;
      if (kind == "f4") e = Elem::kF32;
      if (kind == "f8") e = Elem::kF64;
    }
    if (!e) {
      i_ = at;
      return Error("unsupported dtype '" + d +
                       "' (supported: integers u1..u8 and i1..i8, floats f2, f4, f8)",
                   false);
    }
    h->elem = *e;
    h->big_endian = d[0] == '>' && ElemSize(*e) > 1;
    return Status::Ok();
  }
  Status Error(const std::string& what, bool unparseable = true) const {
    return std::move(
        Status::Corruption(path_, (unparseable ? "unparseable .npy header: " : "") + what)
            .WithOffset(base_ + i_));
  }

  const std::string& t_;
  const std::string& path_;
  uint64_t base_;
  size_t i_ = 0;
};

}  // namespace

std::string NpyHeader::ShapeText() const { return ShapeRepr(shape); }

Result<NpyHeader> ReadNpyHeader(const File& file, uint64_t file_size) {
  const std::string& path = file.path();
  uint8_t pre[12] = {};
  RF_ASSIGN_OR_RETURN(size_t got, file.ReadSome(pre, sizeof pre, 0));
  if (got < 10 || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    return std::move(Status::Corruption(path, "not an .npy file: bad magic (expected \\x93NUMPY)")
                         .WithOffset(0));
  }
  const uint8_t major = pre[6];
  if (major < 1 || major > 3) {
    return std::move(Status::Corruption(path, "unsupported .npy format version " +
                                                  std::to_string(major) + "." +
                                                  std::to_string(pre[7]))
                         .WithOffset(6));
  }
  uint64_t header_len, text_at;
  if (major == 1) {
    header_len = pre[8] | (uint64_t{pre[9]} << 8);
    text_at = 10;
  } else {
    if (got < 12)
      return std::move(Status::Corruption(path, "truncated .npy header").WithOffset(got));
    header_len =
        pre[8] | (uint64_t{pre[9]} << 8) | (uint64_t{pre[10]} << 16) | (uint64_t{pre[11]} << 24);
    text_at = 12;
  }
  if (header_len > kMaxHeader || text_at + header_len > file_size) {
    return std::move(Status::Corruption(path, "header length " + std::to_string(header_len) +
                                                  " runs past the end of the " +
                                                  std::to_string(file_size) + "-byte file")
                         .WithOffset(8));
  }
  std::string text(header_len, '\0');
  RF_RETURN_IF_ERROR(file.ReadAt(text.data(), header_len, text_at));
  RF_ASSIGN_OR_RETURN(NpyHeader h, DictParser(text, path, text_at).Parse());
  h.data_offset = text_at + header_len;
  // Factor by factor: a shape whose size wraps 64 bits must not pass for one the file matches.
  uint64_t want = ElemSize(h.elem);
  for (uint64_t d : h.shape) {
    if (__builtin_mul_overflow(want, d, &want)) {
      return std::move(Status::Corruption(path, "shape " + h.ShapeText() + " of '" + h.descr +
                                                    "' is larger than 2^64 bytes")
                           .WithOffset(h.shape_offset));
    }
  }
  if (file_size - h.data_offset != want) {
    return std::move(Status::Corruption(path, "data is " +
                                                  std::to_string(file_size - h.data_offset) +
                                                  " bytes but shape " + h.ShapeText() + " of '" +
                                                  h.descr + "' needs " + std::to_string(want))
                         .WithOffset(std::min(file_size, h.data_offset + want)));
  }
  return h;
}

std::string FormatNpyHeader(const std::string& descr, const std::vector<uint64_t>& shape) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + ShapeRepr(shape) + ", }";
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // numpy's padding is never zero: a header that is already aligned gains a whole 64 bytes.
  const uint64_t hlen = dict.size() + 1;
  uint64_t prefix = kMagicLen + 2 + 2;
  uint64_t pad = kAlign - (prefix + hlen) % kAlign;
  const bool v2 = hlen + pad > 0xffff;
  if (v2) {
    prefix = kMagicLen + 2 + 4;
    pad = kAlign - (prefix + hlen) % kAlign;
  }
  const uint64_t total = hlen + pad;
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (int i = 0; i < (v2 ? 4 : 2); ++i) out += static_cast<char>((total >> (8 * i)) & 0xff);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  return out;
}

std::optional<std::string> NpyDescrOf(Elem e) {
  switch (e) {
    case Elem::kU8:
      return "|u1";
    case Elem::kI8:
      return "|i1";
    case Elem::kU16:
      return "<u2";
    case Elem::kI16:
      return "<i2";
    case Elem::kU32:
      return "<u4";
    case Elem::kI32:
      return "<i4";
    case Elem::kU64:
      return "<u8";
    case Elem::kI64:
      return "<i8";
    case Elem::kF16:
      return "<f2";
    case Elem::kF32:
      return "<f4";
    case Elem::kF64:
      return "<f8";
    case Elem::kBF16:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace rf::convert
