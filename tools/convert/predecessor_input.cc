#include "tools/convert/predecessor_input.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/file.h"
#include "io/format.h"
#include "tools/convert/input_file.h"
#include "tools/convert/transpose.h"

namespace rf::convert {
namespace {

class PredecessorSource final : public SampleSource {
 public:
  PredecessorSource(File images, File labels, SourceShape shape)
      : images_(std::move(images)), labels_(std::move(labels)), shape_(shape) {}

  const SourceShape& shape() const override { return shape_; }

  Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buf) override {
    SampleBlock b;
    b.first = next_;
    const uint64_t n = std::min(max_samples, shape_.samples - next_);
    if (n == 0) return b;
    const uint64_t features = shape_.SampleElems();
    const uint64_t total = shape_.samples;
    const uint64_t run = n * sizeof(float);
    buf.bytes.resize(features * run);
    // One run of n floats a feature, N floats apart: the kernel is told of them all first, so a
    // cold file is read with every run in flight instead of one at a time.
    for (uint64_t f = 0; f < features; ++f) {
      ::posix_fadvise(images_.fd(), static_cast<off_t>((f * total + next_) * sizeof(float)),
                      static_cast<off_t>(run), POSIX_FADV_WILLNEED);
    }
    for (uint64_t f = 0; f < features; ++f) {
      RF_RETURN_IF_ERROR(
          images_.ReadAt(&buf.bytes[f * run], run, (f * total + next_) * sizeof(float)));
    }
    buf.extra.resize(n * sizeof(int32_t));
    RF_RETURN_IF_ERROR(
        labels_.ReadAt(buf.extra.data(), n * sizeof(int32_t), next_ * sizeof(int32_t)));
    buf.labels.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, &buf.extra[i * sizeof v], sizeof v);
      buf.labels[i] = v;
    }
    next_ += n;
    b.samples = buf.bytes.data();
    b.labels = buf.labels.data();
    b.count = n;
    return b;
  }

  bool decodes() const override { return true; }

  // The block is a features x count matrix; samples [begin, end) are its columns.
  const uint8_t* Decode(const SampleBlock& b, uint64_t begin, uint64_t end,
                        uint8_t* scratch) const override {
    const uint64_t features = shape_.SampleElems();
    Transpose4(b.samples + begin * sizeof(float), b.count, scratch, features, features,
               end - begin);
    return scratch;
  }

  InputPosition LabelAt(uint64_t sample) const override {
    return {labels_.path(), sample * sizeof(int32_t)};
  }

  // Feature 0 of the sample (the others are N floats apart).
  InputPosition SampleAt(uint64_t sample) const override {
    return {images_.path(), sample * sizeof(float)};
  }

  std::vector<std::string> input_paths() const override { return {images_.path(), labels_.path()}; }

 private:
  File images_, labels_;
  SourceShape shape_;
  uint64_t next_ = 0;
};

}  // namespace

void TransposeFloats(const float* in, float* out, uint64_t rows, uint64_t cols) {
  Transpose4(in, cols, out, rows, rows, cols);
}

Result<std::unique_ptr<SampleSource>> OpenPredecessorSource(const std::string& images_path,
                                                            const std::string& labels_path,
                                                            uint32_t channels, uint32_t height,
                                                            uint32_t width) {
  SourceShape shape;
  shape.dims = {channels, height, width};
  shape.elem = Elem::kF32;
  shape.label_dtype = DType::kInt32;
  // Before the sample size divides anything: --shape 64,536870912,536870912 wraps it to 0.
  if (Status st = format::CheckSampleShape(shape.dims, DType::kFloat32); !st.ok()) {
    return Status::Usage("--shape: " + st.message());
  }
  const uint64_t sample_bytes = shape.SampleBytes();
  RF_ASSIGN_OR_RETURN(File images, OpenInputFile(images_path));
  RF_ASSIGN_OR_RETURN(uint64_t isize, images.Size());
  if (isize % sample_bytes != 0) {
    return std::move(
        Status::Corruption(images_path, "file size " + std::to_string(isize) +
                                            " is not a multiple of 4 * " +
                                            std::to_string(shape.SampleElems()) + " features = " +
                                            std::to_string(sample_bytes) + " bytes (check --shape)")
            .WithOffset(isize));
  }
  shape.samples = isize / sample_bytes;
  RF_ASSIGN_OR_RETURN(File labels, OpenInputFile(labels_path));
  RF_ASSIGN_OR_RETURN(uint64_t lsize, labels.Size());
  const uint64_t want = shape.samples * sizeof(int32_t);
  if (lsize != want) {
    return std::move(
        Status::Corruption(labels_path, "holds " + std::to_string(lsize) + " bytes but the " +
                                            std::to_string(shape.samples) + " samples of " +
                                            images_path + " need " + std::to_string(want) +
                                            " bytes of int32 labels")
            .WithOffset(std::min(lsize, want)));
  }
  return std::unique_ptr<SampleSource>(
      new PredecessorSource(std::move(images), std::move(labels), shape));
}

}  // namespace rf::convert
