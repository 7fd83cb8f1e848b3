#include "tools/convert/npy_input.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/file.h"
#include "tools/convert/byte_order.h"
#include "tools/convert/input_file.h"
#include "tools/convert/npy_header.h"
#include "tools/convert/sample_layout.h"

namespace rf::convert {
namespace {

class NpySource final : public SampleSource {
 public:
  NpySource(File images, NpyHeader ih, File labels, NpyHeader lh, bool nhwc)
      : images_(std::move(images)), labels_(std::move(labels)), ih_(ih), lh_(lh), nhwc_(nhwc) {
    const auto& s = ih_.shape;
    shape_.samples = s[0];
    shape_.elem = ih_.elem;
    if (nhwc) {
      shape_.dims = {s[3], s[1], s[2]};  // (N,H,W,C), checked by OpenNpySource
    } else {
      shape_.dims.assign(s.begin() + 1, s.end());
    }
    shape_.has_labels = labels_.is_open();
    if (labels_.is_open()) {
      const std::optional<DType> own = ElemAsDType(lh_.elem);
      shape_.label_dtype = own && IsLabelDType(*own) ? *own : DType::kInt32;
    }
  }

  const SourceShape& shape() const override { return shape_; }

  Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buf) override {
    SampleBlock b;
    b.first = next_;
    const uint64_t n = std::min(max_samples, shape_.samples - next_);
    if (n == 0) return b;
    const uint64_t bytes = shape_.SampleBytes();
    buf.bytes.resize(n * bytes);
    RF_RETURN_IF_ERROR(
        images_.ReadAt(buf.bytes.data(), buf.bytes.size(), ih_.data_offset + next_ * bytes));
    buf.labels.assign(n, 0);
    if (labels_.is_open()) {
      const size_t ls = ElemSize(lh_.elem);
      buf.extra.resize(n * ls);
      RF_RETURN_IF_ERROR(
          labels_.ReadAt(buf.extra.data(), buf.extra.size(), lh_.data_offset + next_ * ls));
      if (lh_.big_endian) SwapBytes(buf.extra.data(), ls, n);
      for (uint64_t i = 0; i < n; ++i) buf.labels[i] = LoadInteger(lh_.elem, buf.extra.data(), i);
    }
    next_ += n;
    b.samples = buf.bytes.data();
    b.labels = buf.labels.data();
    b.count = n;
    return b;
  }

  bool decodes() const override { return ih_.big_endian || nhwc_; }

  const uint8_t* Decode(const SampleBlock& b, uint64_t begin, uint64_t end,
                        uint8_t* scratch) const override {
    const uint64_t bytes = shape_.SampleBytes();
    const uint8_t* in = b.samples + begin * bytes;
    const uint64_t n = end - begin;
    if (!decodes()) return in;
    if (nhwc_) {
      const auto& d = shape_.dims;
      HwcToChw(in, scratch, n, static_cast<uint32_t>(d[0]), static_cast<uint32_t>(d[1]),
               static_cast<uint32_t>(d[2]), ElemSize(ih_.elem));
    } else {
      std::memcpy(scratch, in, n * bytes);
    }
    if (ih_.big_endian) SwapBytes(scratch, ElemSize(ih_.elem), n * shape_.SampleElems());
    return scratch;
  }

  InputPosition LabelAt(uint64_t sample) const override {
    if (!labels_.is_open())
      return {images_.path(), ih_.data_offset + sample * shape_.SampleBytes()};
    return {labels_.path(), lh_.data_offset + sample * ElemSize(lh_.elem)};
  }

  InputPosition SampleAt(uint64_t sample) const override {
    return {images_.path(), ih_.data_offset + sample * shape_.SampleBytes()};
  }

  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p = {images_.path()};
    if (labels_.is_open()) p.push_back(labels_.path());
    return p;
  }

 private:
  File images_, labels_;
  NpyHeader ih_, lh_;
  bool nhwc_;
  SourceShape shape_;
  uint64_t next_ = 0;
};

Status ShapeError(const std::string& path, const NpyHeader& h, const std::string& what) {
  return std::move(
      Status::Corruption(path, "shape " + h.ShapeText() + ": " + what).WithOffset(h.shape_offset));
}

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenNpySource(const std::string& images_path,
                                                    const std::string& labels_path, bool nhwc) {
  RF_ASSIGN_OR_RETURN(File images, OpenInputFile(images_path));
  RF_ASSIGN_OR_RETURN(uint64_t isize, images.Size());
  RF_ASSIGN_OR_RETURN(NpyHeader ih, ReadNpyHeader(images, isize));
  if (ih.shape.size() < 2 || ih.shape.size() > 5) {
    return ShapeError(images_path, ih, "samples need shape (N, d1, ..., dk) with k = 1 to 4");
  }
  if (nhwc && ih.shape.size() != 4) {
    return ShapeError(images_path, ih, "--layout nhwc needs images of shape (N,H,W,C)");
  }
  for (size_t i = 1; i < ih.shape.size(); ++i) {
    if (ih.shape[i] == 0 || ih.shape[i] > UINT32_MAX) {
      return ShapeError(images_path, ih, "every sample dimension must be 1 to 2^32-1");
    }
  }
  File labels;
  NpyHeader lh;
  if (!labels_path.empty()) {
    RF_ASSIGN_OR_RETURN(labels, OpenInputFile(labels_path));
    RF_ASSIGN_OR_RETURN(uint64_t lsize, labels.Size());
    RF_ASSIGN_OR_RETURN(lh, ReadNpyHeader(labels, lsize));
    if (lh.shape.size() != 1) return ShapeError(labels_path, lh, "labels need shape (N,)");
    if (!ElemIsInteger(lh.elem)) {
      return std::move(
          Status::Corruption(labels_path, "labels must be integers, not '" + lh.descr + "'")
              .WithOffset(lh.shape_offset));
    }
    if (lh.shape[0] != ih.shape[0]) {
      return ShapeError(labels_path, lh,
                        "holds " + std::to_string(lh.shape[0]) + " labels but " + images_path +
                            " holds " + std::to_string(ih.shape[0]) + " images");
    }
  }
  return std::unique_ptr<SampleSource>(
      new NpySource(std::move(images), ih, std::move(labels), lh, nhwc));
}

}  // namespace rf::convert
