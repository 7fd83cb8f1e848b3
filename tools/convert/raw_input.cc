#include "tools/convert/raw_input.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/file.h"
#include "io/format.h"
#include "tools/convert/input_file.h"

namespace rf::convert {
namespace {

class RawSource final : public SampleSource {
 public:
  RawSource(const RawOptions& o, File records, File labels, uint64_t samples)
      : o_(o), records_(std::move(records)), labels_(std::move(labels)) {
    shape_.dims = o.shape;
    shape_.elem = o.elem;
    shape_.samples = samples;
    shape_.has_labels = o.labels != RawOptions::Labels::kNone;
    shape_.label_dtype = shape_.has_labels ? o.label_dtype : DType::kUInt8;
  }

  const SourceShape& shape() const override { return shape_; }

  Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buf) override {
    SampleBlock b;
    b.first = next_;
    const uint64_t n = std::min(max_samples, shape_.samples - next_);
    if (n == 0) return b;
    const uint64_t sb = shape_.SampleBytes();
    const size_t lb = InRecordLabelBytes();
    const uint64_t rec = sb + lb;
    // The records as they are; Decode cuts the samples out of them.
    buf.bytes.resize(n * rec);
    RF_RETURN_IF_ERROR(
        records_.ReadAt(buf.bytes.data(), buf.bytes.size(), o_.header_bytes + next_ * rec));
    buf.labels.assign(n, 0);
    if (lb != 0) {
      const uint64_t label_at = o_.labels == RawOptions::Labels::kFirst ? 0 : sb;
      for (uint64_t i = 0; i < n; ++i) {
        buf.labels[i] = LoadLabel(o_.label_dtype, &buf.bytes[i * rec + label_at], 0);
      }
    }
    if (o_.labels == RawOptions::Labels::kFile) {
      const size_t ls = DTypeSize(o_.label_dtype);
      buf.extra.resize(n * ls);
      RF_RETURN_IF_ERROR(labels_.ReadAt(buf.extra.data(), buf.extra.size(), next_ * ls));
      for (uint64_t i = 0; i < n; ++i)
        buf.labels[i] = LoadLabel(o_.label_dtype, buf.extra.data(), i);
    }
    next_ += n;
    b.samples = buf.bytes.data();
    b.labels = buf.labels.data();
    b.count = n;
    return b;
  }

  bool decodes() const override { return InRecordLabelBytes() != 0; }

  const uint8_t* Decode(const SampleBlock& b, uint64_t begin, uint64_t end,
                        uint8_t* scratch) const override {
    const uint64_t sb = shape_.SampleBytes();
    const size_t lb = InRecordLabelBytes();
    if (lb == 0) return b.samples + begin * sb;
    const uint64_t rec = sb + lb;
    const uint64_t sample_at = o_.labels == RawOptions::Labels::kFirst ? lb : 0;
    for (uint64_t i = begin; i < end; ++i) {
      std::memcpy(scratch + (i - begin) * sb, b.samples + i * rec + sample_at, sb);
    }
    return scratch;
  }

  InputPosition LabelAt(uint64_t sample) const override {
    const uint64_t sb = shape_.SampleBytes();
    const uint64_t rec = sb + InRecordLabelBytes();
    switch (o_.labels) {
      case RawOptions::Labels::kFirst:
        return {records_.path(), o_.header_bytes + sample * rec};
      case RawOptions::Labels::kLast:
        return {records_.path(), o_.header_bytes + sample * rec + sb};
      case RawOptions::Labels::kFile:
        return {labels_.path(), sample * DTypeSize(o_.label_dtype)};
      case RawOptions::Labels::kNone:
        break;
    }
    return {records_.path(), o_.header_bytes + sample * rec};
  }

  InputPosition SampleAt(uint64_t sample) const override {
    const uint64_t rec = shape_.SampleBytes() + InRecordLabelBytes();
    const uint64_t label_first = o_.labels == RawOptions::Labels::kFirst ? InRecordLabelBytes() : 0;
    return {records_.path(), o_.header_bytes + sample * rec + label_first};
  }

  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p = {records_.path()};
    if (labels_.is_open()) p.push_back(labels_.path());
    return p;
  }

 private:
  size_t InRecordLabelBytes() const {
    return o_.labels == RawOptions::Labels::kFirst || o_.labels == RawOptions::Labels::kLast
               ? DTypeSize(o_.label_dtype)
               : 0;
  }

  RawOptions o_;
  File records_, labels_;
  SourceShape shape_;
  uint64_t next_ = 0;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenRawSource(const RawOptions& o) {
  RF_ASSIGN_OR_RETURN(File records, OpenInputFile(o.records_path));
  RF_ASSIGN_OR_RETURN(uint64_t size, records.Size());
  const std::optional<DType> stored = ElemAsDType(o.elem);
  if (!stored) {
    return Status::InvalidArgument("raw records of " + std::string(ElemName(o.elem)) +
                                   " are not supported");
  }
  // The shape is checked before the record size is computed from it (no overflow).
  RF_RETURN_IF_ERROR(format::CheckSampleShape(o.shape, *stored));
  uint64_t sb = ElemSize(o.elem);
  for (uint64_t d : o.shape) sb *= d;
  const bool in_record =
      o.labels == RawOptions::Labels::kFirst || o.labels == RawOptions::Labels::kLast;
  const uint64_t rec = sb + (in_record ? DTypeSize(o.label_dtype) : 0);
  if (size < o.header_bytes) {
    return std::move(Status::Corruption(o.records_path, "file is smaller than --header-bytes " +
                                                            std::to_string(o.header_bytes))
                         .WithOffset(size));
  }
  const uint64_t body = size - o.header_bytes;
  if (body % rec != 0) {
    return std::move(Status::Corruption(o.records_path,
                                        "file size " + std::to_string(size) +
                                            " leaves a partial record: " + std::to_string(body) +
                                            " bytes after the header are not a multiple of the " +
                                            std::to_string(rec) + "-byte record")
                         .WithOffset(o.header_bytes + body / rec * rec));
  }
  const uint64_t n = body / rec;
  File labels;
  if (o.labels == RawOptions::Labels::kFile) {
    RF_ASSIGN_OR_RETURN(labels, OpenInputFile(o.labels_path));
    RF_ASSIGN_OR_RETURN(uint64_t lsize, labels.Size());
    const uint64_t want = n * DTypeSize(o.label_dtype);
    if (lsize != want) {
      return std::move(Status::Corruption(o.labels_path, "holds " + std::to_string(lsize) +
                                                             " bytes but " + std::to_string(n) +
                                                             " " +
                                                             std::string(DTypeName(o.label_dtype)) +
                                                             " labels need " + std::to_string(want))
                           .WithOffset(std::min(lsize, want)));
    }
  }
  return std::unique_ptr<SampleSource>(new RawSource(o, std::move(records), std::move(labels), n));
}

}  // namespace rf::convert
