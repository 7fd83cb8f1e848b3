// predecessor export: PREFIX_images.bin (float32, feature-major: feature f of sample s at
// f * N + s) + PREFIX_labels.bin (int32). Samples are gathered into blocks of K (sized by the
// memory budget), transposed, and written with one pwrite per feature per block.
#include "io/sequential_output.h"
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/exporter.h"
#include "tools/convert/predecessor_input.h"

namespace rf::convert {

Result<ExportSummary> ExportPredecessor(const Dataset& d, const ExportOptions& o,
                                        Progress& progress) {
  const format::Header& h = d.header();
  if (!IsImageDType(h.sample_dtype)) {
    return Status::Unsupported("the predecessor's files hold float32 images; this dataset stores " +
                               std::string(DTypeName(h.sample_dtype)) + " ids");
  }
  if (o.layout != ExportLayout::kAuto && o.layout != ExportLayout::kNchw) {
    return Status::InvalidArgument("predecessor features are C,H,W-ordered: --layout must be nchw");
  }
  const uint64_t features = h.SampleElems();
  const uint64_t n_total = h.total_samples;
  const uint64_t block = std::max<uint64_t>(1, o.memory_budget / (features * 2 * sizeof(float)));
  RF_ASSIGN_OR_RETURN(SequentialOutput images,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[0]));
  RF_ASSIGN_OR_RETURN(SequentialOutput labels,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[1]));
  std::vector<float> sample_major(std::min(block, n_total) * features);
  std::vector<float> feature_major(sample_major.size());
  std::vector<uint8_t> label_bytes;
  uint64_t in_block = 0, block_first = 0, done = 0;

  auto flush = [&]() -> Status {
    if (in_block == 0) return Status::Ok();
    TransposeFloats(sample_major.data(), feature_major.data(), in_block, features);
    for (uint64_t f = 0; f < features; ++f) {
      RF_RETURN_IF_ERROR(images.WriteAt(&feature_major[f * in_block], in_block * sizeof(float),
                                        (f * n_total + block_first) * sizeof(float)));
    }
    block_first += in_block;
    in_block = 0;
    return Status::Ok();
  };

  RF_RETURN_IF_ERROR(ForEachChunk(d, [&](const ChunkView& c) -> Status {
    for (uint32_t i = 0; i < c.count;) {
      const uint64_t take = std::min<uint64_t>(c.count - i, block - in_block);
      ConvertElems(ElemOf(h.sample_dtype), c.samples + i * h.SampleBytes(), DType::kFloat32, 1.f,
                   &sample_major[in_block * features], take * features);
      in_block += take;
      i += static_cast<uint32_t>(take);
      if (in_block == block) RF_RETURN_IF_ERROR(flush());
    }
    LabelsAs(h.label_dtype, c.labels, c.count, Elem::kI32, &label_bytes);
    RF_RETURN_IF_ERROR(labels.Append(label_bytes.data(), label_bytes.size()));
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  RF_RETURN_IF_ERROR(flush());
  ExportSummary s;
  s.bytes = n_total * features * sizeof(float) + labels.bytes();
  s.paths = {images.path(), labels.path()};
  RF_RETURN_IF_ERROR(images.Commit());
  RF_RETURN_IF_ERROR(labels.Commit());
  return s;
}

}  // namespace rf::convert
