#include "tools/convert/idx_input.h"

#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "tools/convert/byte_order.h"
#include "tools/convert/input_stream.h"

namespace rf::convert {
namespace {

struct IdxHeader {
  Elem elem = Elem::kU8;
  std::vector<uint32_t> dims;
  uint64_t data_offset = 0;

  uint64_t Elems() const {
    uint64_t n = 1;
    for (uint32_t d : dims) n *= d;
    return n;
  }
  // The payload's bytes, or nullopt where they pass 2^64 (forged dims must not wrap to a size
  // that matches the file).
  std::optional<uint64_t> PayloadBytes() const {
    uint64_t n = ElemSize(elem);
    for (uint32_t d : dims) {
      if (__builtin_mul_overflow(n, uint64_t{d}, &n)) return std::nullopt;
    }
    return n;
  }
  std::string DimsText() const {
    std::string s;
    for (uint32_t d : dims) {
      if (!s.empty()) s += 'x';
      s += std::to_string(d);
    }
    return s;
  }
};

std::string Hex(uint8_t v) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", v);
  return b;
}

// Reads and checks the header; for a plain file also that the dims account for every byte.
Result<IdxHeader> ReadIdxHeader(InputStream& in, uint32_t min_dims, uint32_t max_dims,
                                const char* what) {
  uint8_t magic[4];
  RF_RETURN_IF_ERROR(in.ReadExact(magic, 4, "IDX header"));
  const std::string& path = in.path();
  if (magic[0] != 0 || magic[1] != 0) {
    return std::move(Status::Corruption(path, "not an IDX file: magic starts " + Hex(magic[0]) +
                                                  " " + Hex(magic[1]) + ", expected 0x00 0x00")
                         .WithOffset(0));
  }
  IdxHeader h;
  std::optional<Elem> elem = ElemFromIdxCode(magic[2]);
  if (!elem) {
    return std::move(Status::Corruption(path, "unknown IDX element type code " + Hex(magic[2]) +
                                                  " (known: 0x08 0x09 0x0B 0x0C 0x0D 0x0E)")
                         .WithOffset(2));
  }
  h.elem = *elem;
  if (magic[3] < min_dims || magic[3] > max_dims) {
    return std::move(
        Status::Corruption(path, std::string("an IDX ") + what + " file needs " +
                                     std::to_string(min_dims) + " to " + std::to_string(max_dims) +
                                     " dimensions, header says " + std::to_string(magic[3]))
            .WithOffset(3));
  }
  std::vector<uint8_t> raw(4 * size_t{magic[3]});
  RF_RETURN_IF_ERROR(in.ReadExact(raw.data(), raw.size(), "IDX header"));
  for (size_t i = 0; i < magic[3]; ++i) {
    h.dims.push_back(LoadBigEndian32(&raw[4 * i]));
    if (h.dims.back() == 0) {
      return std::move(Status::Corruption(path, "IDX dimension " + std::to_string(i) + " is 0")
                           .WithOffset(4 + 4 * i));
    }
  }
  h.data_offset = 4 + raw.size();
  const std::optional<uint64_t> payload = h.PayloadBytes();
  if (!payload || *payload > UINT64_MAX - h.data_offset) {
    return std::move(Status::Corruption(path, "dims " + h.DimsText() + " of " +
                                                  std::string(ElemName(h.elem)) +
                                                  " are larger than 2^64 bytes")
                         .WithOffset(4));
  }
  if (std::optional<uint64_t> size = in.size()) {
    const uint64_t want = h.data_offset + *payload;
    if (*size != want) {
      return std::move(Status::Corruption(path, "file size " + std::to_string(*size) +
                                                    " disagrees with the header: dims " +
                                                    h.DimsText() + " of " +
                                                    std::string(ElemName(h.elem)) + " need " +
                                                    std::to_string(want) + " bytes")
                           .WithOffset(std::min(*size, want)));
    }
  }
  return h;
}

// A compressed stream's size is known only at its end: anything past the dims is an error.
Status CheckNoTrailingData(InputStream& in) {
  RF_ASSIGN_OR_RETURN(bool at_end, in.AtEnd());
  if (at_end) return Status::Ok();
  return std::move(Status::Corruption(in.path(), "data continues past what the IDX dims describe")
                       .WithOffset(in.offset()));
}

class IdxSource final : public SampleSource {
 public:
  IdxSource(std::unique_ptr<InputStream> images, IdxHeader ih, std::unique_ptr<InputStream> labels,
            IdxHeader lh)
      : images_(std::move(images)), labels_(std::move(labels)), ih_(ih), lh_(lh) {
    const auto& d = ih_.dims;
    shape_.samples = d[0];
    // IDX holds images: (N,H,W) and (N,D) are one channel, C,H,W as ever.
    shape_.dims = {d.size() == 4 ? d[1] : 1, d.size() >= 3 ? d[d.size() - 2] : 1, d.back()};
    shape_.has_labels = labels_ != nullptr;
    shape_.elem = ih_.elem;
    shape_.label_dtype = labels_ && lh_.elem == Elem::kU8 ? DType::kUInt8
                         : labels_                        ? DType::kInt32
                                                          : DType::kUInt8;
  }

  const SourceShape& shape() const override { return shape_; }

  Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buf) override {
    const uint64_t n = std::min(max_samples, shape_.samples - next_);
    SampleBlock b;
    b.first = next_;
    if (n == 0) return b;
    buf.bytes.resize(n * shape_.SampleBytes());
    RF_RETURN_IF_ERROR(images_->ReadExact(buf.bytes.data(), buf.bytes.size(), "IDX image data"));
    buf.labels.assign(n, 0);
    if (labels_) {
      const size_t lsize = ElemSize(lh_.elem);
      buf.extra.resize(n * lsize);
      RF_RETURN_IF_ERROR(labels_->ReadExact(buf.extra.data(), buf.extra.size(), "IDX labels"));
      SwapBytes(buf.extra.data(), lsize, n);
      for (uint64_t i = 0; i < n; ++i) buf.labels[i] = LoadInteger(lh_.elem, buf.extra.data(), i);
    }
    next_ += n;
    if (next_ == shape_.samples) {
      RF_RETURN_IF_ERROR(CheckNoTrailingData(*images_));
      if (labels_) RF_RETURN_IF_ERROR(CheckNoTrailingData(*labels_));
    }
    b.samples = buf.bytes.data();
    b.labels = buf.labels.data();
    b.count = n;
    return b;
  }

  // IDX is big-endian: elements wider than a byte are swapped.
  bool decodes() const override { return ElemSize(ih_.elem) > 1; }

  const uint8_t* Decode(const SampleBlock& b, uint64_t begin, uint64_t end,
                        uint8_t* scratch) const override {
    const uint64_t bytes = shape_.SampleBytes();
    if (!decodes()) return b.samples + begin * bytes;
    std::memcpy(scratch, b.samples + begin * bytes, (end - begin) * bytes);
    SwapBytes(scratch, ElemSize(ih_.elem), (end - begin) * shape_.SampleElems());
    return scratch;
  }

  InputPosition LabelAt(uint64_t sample) const override {
    if (!labels_) return {images_->path(), ih_.data_offset + sample * shape_.SampleBytes()};
    return {labels_->path(), lh_.data_offset + sample * ElemSize(lh_.elem)};
  }

  InputPosition SampleAt(uint64_t sample) const override {
    return {images_->path(), ih_.data_offset + sample * shape_.SampleBytes()};
  }

  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p = {images_->path()};
    if (labels_) p.push_back(labels_->path());
    return p;
  }

 private:
  std::unique_ptr<InputStream> images_, labels_;
  IdxHeader ih_, lh_;
  SourceShape shape_;
  uint64_t next_ = 0;
};

}  // namespace

std::optional<Elem> ElemFromIdxCode(uint8_t code) {
  switch (code) {
    case 0x08:
      return Elem::kU8;
    case 0x09:
      return Elem::kI8;
    case 0x0B:
      return Elem::kI16;
    case 0x0C:
      return Elem::kI32;
    case 0x0D:
      return Elem::kF32;
    case 0x0E:
      return Elem::kF64;
    default:
      return std::nullopt;
  }
}

std::optional<uint8_t> IdxCodeOf(Elem e) {
  switch (e) {
    case Elem::kU8:
      return 0x08;
    case Elem::kI8:
      return 0x09;
    case Elem::kI16:
      return 0x0B;
    case Elem::kI32:
      return 0x0C;
    case Elem::kF32:
      return 0x0D;
    case Elem::kF64:
      return 0x0E;
    default:
      return std::nullopt;
  }
}

Result<std::unique_ptr<SampleSource>> OpenIdxSource(const std::string& images_path,
                                                    const std::string& labels_path) {
  RF_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> images, InputStream::Open(images_path));
  RF_ASSIGN_OR_RETURN(IdxHeader ih, ReadIdxHeader(*images, 2, 4, "images"));
  std::unique_ptr<InputStream> labels;
  IdxHeader lh;
  if (!labels_path.empty()) {
    RF_ASSIGN_OR_RETURN(labels, InputStream::Open(labels_path));
    RF_ASSIGN_OR_RETURN(lh, ReadIdxHeader(*labels, 1, 1, "labels"));
    if (!ElemIsInteger(lh.elem)) {
      return std::move(Status::Corruption(labels_path, "IDX labels must be integers, not " +
                                                           std::string(ElemName(lh.elem)))
                           .WithOffset(2));
    }
    if (lh.dims[0] != ih.dims[0]) {
      return std::move(Status::Corruption(labels_path, "holds " + std::to_string(lh.dims[0]) +
                                                           " labels but " + images_path +
                                                           " holds " + std::to_string(ih.dims[0]) +
                                                           " images")
                           .WithOffset(4));
    }
  }
  return std::unique_ptr<SampleSource>(new IdxSource(std::move(images), ih, std::move(labels), lh));
}

}  // namespace rf::convert
