#include "tools/convert/exporter.h"

#include "io/file.h"
#include "tools/convert/byte_order.h"
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/megatron.h"
#include "tools/convert/sample_layout.h"

namespace rf::convert {

std::optional<ExportFormat> ParseExportFormat(const std::string& name) {
  if (name == "raw") return ExportFormat::kRaw;
  if (name == "idx") return ExportFormat::kIdx;
  if (name == "cifar") return ExportFormat::kCifar;
  if (name == "npy") return ExportFormat::kNpy;
  if (name == "predecessor") return ExportFormat::kPredecessor;
  if (name == "megatron") return ExportFormat::kMegatron;
  return std::nullopt;
}

std::vector<std::string> ExportPaths(ExportFormat format, const std::string& prefix) {
  switch (format) {
    case ExportFormat::kRaw:
      return {prefix + ".records", prefix + ".labels"};
    case ExportFormat::kIdx:
      return {prefix + "-images.idx", prefix + "-labels.idx"};
    case ExportFormat::kCifar:
      return {prefix + ".bin"};
    case ExportFormat::kNpy:
      return {prefix + "-images.npy", prefix + "-labels.npy"};
    case ExportFormat::kPredecessor:
      return {prefix + "_images.bin", prefix + "_labels.bin"};
    case ExportFormat::kMegatron:
      return MegatronPaths(prefix);
  }
  return {};
}

std::optional<ExportLayout> ParseExportLayout(const std::string& name) {
  if (name == "auto") return ExportLayout::kAuto;
  if (name == "nchw") return ExportLayout::kNchw;
  if (name == "nhwc") return ExportLayout::kNhwc;
  if (name == "nhw") return ExportLayout::kNhw;
  return std::nullopt;
}

Result<ExportLayout> ResolveLayout(const format::Header& h, ExportLayout layout) {
  const std::vector<uint64_t> shape = h.Shape();
  if (shape.size() != 3) {
    if (layout == ExportLayout::kAuto || layout == ExportLayout::kNchw) return ExportLayout::kNchw;
    return Status::InvalidArgument(
        std::string("--layout ") + (layout == ExportLayout::kNhw ? "nhw" : "nhwc") +
        " applies to C,H,W samples; this dataset's have shape " + format::ShapeText(shape));
  }
  if (layout == ExportLayout::kAuto) {
    return h.channels == 1 ? ExportLayout::kNhw : ExportLayout::kNchw;
  }
  if (layout == ExportLayout::kNhw && h.channels != 1) {
    return Status::InvalidArgument("--layout nhw needs one channel; the dataset has " +
                                   std::to_string(h.channels));
  }
  return layout;
}

std::vector<uint64_t> ExportShape(const format::Header& h, ExportLayout layout) {
  switch (layout) {
    case ExportLayout::kNhw:
      return {h.total_samples, h.height, h.width};
    case ExportLayout::kNhwc:
      return {h.total_samples, h.height, h.width, h.channels};
    default: {
      std::vector<uint64_t> shape = {h.total_samples};
      for (uint64_t d : h.Shape()) shape.push_back(d);
      return shape;
    }
  }
}

const uint8_t* SamplesInLayout(const format::Header& h, ExportLayout layout, const uint8_t* samples,
                               uint32_t count, std::vector<uint8_t>* scratch) {
  if (layout != ExportLayout::kNhwc) return samples;
  scratch->resize(count * h.SampleBytes());
  ChwToHwc(samples, scratch->data(), count, h.channels, h.height, h.width,
           DTypeSize(h.sample_dtype));
  return scratch->data();
}

Result<ExportSummary> Export(const Dataset& d, const ExportOptions& o) {
  if (d.header().variable() && o.format != ExportFormat::kMegatron) {
    return Status::Usage("export writes fixed-shape samples; " + d.shard_path(0) + " holds " +
                         format::RecordKindName(d.header().record_kind) +
                         " records of any size (read them with ringfeed.Loader, recompress "
                         "them, or export tokens with --format megatron)");
  }
  std::vector<NamedPath> inputs, outputs;
  for (size_t i = 0; i < d.shard_count(); ++i) inputs.push_back({"", d.shard_path(i)});
  for (const std::string& out : ExportPaths(o.format, o.prefix)) outputs.push_back({"", out});
  RF_RETURN_IF_ERROR(CheckOutputPaths(outputs, inputs));
  Progress progress("exporting", d.total_bytes(), o.progress);
  Result<ExportSummary> r = [&]() -> Result<ExportSummary> {
    switch (o.format) {
      case ExportFormat::kRaw:
        return ExportRaw(d, o, progress);
      case ExportFormat::kIdx:
        return ExportIdx(d, o, progress);
      case ExportFormat::kCifar:
        return ExportCifar(d, o, progress);
      case ExportFormat::kNpy:
        return ExportNpy(d, o, progress);
      case ExportFormat::kPredecessor:
        return ExportPredecessor(d, o, progress);
      case ExportFormat::kMegatron:
        return ExportMegatron(d, o, progress);
    }
    return Status::InvalidArgument("unknown export format");
  }();
  progress.Finish();
  if (!r.ok()) return r;
  ExportSummary s = std::move(r).value();
  s.samples = d.sample_count();
  s.seconds = progress.Seconds();
  return s;
}

Result<ExportSummary> ExportSamplesAndLabels(const Dataset& d, ExportLayout layout, Elem label_elem,
                                             bool big_endian, SequentialOutput& samples,
                                             SequentialOutput& labels, Progress& progress) {
  const format::Header& h = d.header();
  const size_t sample_elem_bytes = DTypeSize(h.sample_dtype);
  std::vector<uint8_t> scratch, swapped, label_bytes;
  uint64_t done = 0;
  RF_RETURN_IF_ERROR(ForEachChunk(d, [&](const ChunkView& c) -> Status {
    const uint64_t bytes = c.count * h.SampleBytes();
    const uint8_t* s = SamplesInLayout(h, layout, c.samples, c.count, &scratch);
    if (big_endian && sample_elem_bytes > 1) {
      swapped.assign(s, s + bytes);
      SwapBytes(swapped.data(), sample_elem_bytes, c.count * h.SampleElems());
      s = swapped.data();
    }
    RF_RETURN_IF_ERROR(samples.Append(s, bytes));
    LabelsAs(h.label_dtype, c.labels, c.count, label_elem, &label_bytes);
    if (big_endian) SwapBytes(label_bytes.data(), ElemSize(label_elem), c.count);
    RF_RETURN_IF_ERROR(labels.Append(label_bytes.data(), label_bytes.size()));
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  ExportSummary summary;
  summary.bytes = samples.bytes() + labels.bytes();
  summary.paths = {samples.path(), labels.path()};
  RF_RETURN_IF_ERROR(samples.Commit());
  RF_RETURN_IF_ERROR(labels.Commit());
  return summary;
}

}  // namespace rf::convert
