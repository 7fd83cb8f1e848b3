#include "tools/convert/predecessor_input.h"

#include <fcntl.h>

#include <algorithm>
#include <vector>

#include "io/file.h"
#include "io/format.h"

namespace rf::convert {
namespace {

class PredecessorSource final : public SampleSource {
 public:
  PredecessorSource(File images, File labels, SourceShape shape)
      : images_(std::move(images)), labels_(std::move(labels)), shape_(shape) {}

  const SourceShape& shape() const override { return shape_; }

  Result<SampleBlock> Next(uint64_t max_samples) override {
    SampleBlock b;
    b.first = next_;
    const uint64_t n = std::min(max_samples, shape_.samples - next_);
    if (n == 0) return b;
    const uint64_t features = shape_.SampleElems();
    const uint64_t total = shape_.samples;
    feature_major_.resize(features * n);
    samples_.resize(features * n);
    for (uint64_t f = 0; f < features; ++f) {
      RF_RETURN_IF_ERROR(images_.ReadAt(&feature_major_[f * n], n * sizeof(float),
                                        (f * total + next_) * sizeof(float)));
    }
    TransposeFloats(feature_major_.data(), samples_.data(), features, n);
    raw_labels_.resize(n);
    RF_RETURN_IF_ERROR(
        labels_.ReadAt(raw_labels_.data(), n * sizeof(int32_t), next_ * sizeof(int32_t)));
    labels_out_.assign(raw_labels_.begin(), raw_labels_.end());
    next_ += n;
    b.samples = reinterpret_cast<const uint8_t*>(samples_.data());
    b.labels = labels_out_.data();
    b.count = n;
    return b;
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
  std::vector<float> feature_major_, samples_;
  std::vector<int32_t> raw_labels_;
  std::vector<int64_t> labels_out_;
};

}  // namespace

void TransposeFloats(const float* in, float* out, uint64_t rows, uint64_t cols) {
  constexpr uint64_t kTile = 32;
  for (uint64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (uint64_t c0 = 0; c0 < cols; c0 += kTile) {
      const uint64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (uint64_t r = r0; r < r1; ++r) {
        for (uint64_t c = c0; c < c1; ++c) out[c * rows + r] = in[r * cols + c];
      }
    }
  }
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
  RF_ASSIGN_OR_RETURN(File images, File::Open(images_path, O_RDONLY));
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
  RF_ASSIGN_OR_RETURN(File labels, File::Open(labels_path, O_RDONLY));
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
