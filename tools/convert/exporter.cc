#include "tools/convert/exporter.h"

#include "tools/convert/sample_layout.h"

namespace rf::convert {

std::optional<ExportFormat> ParseExportFormat(const std::string& name) {
  if (name == "raw") return ExportFormat::kRaw;
  if (name == "idx") return ExportFormat::kIdx;
  if (name == "cifar") return ExportFormat::kCifar;
  if (name == "npy") return ExportFormat::kNpy;
  if (name == "predecessor") return ExportFormat::kPredecessor;
  return std::nullopt;
}

std::optional<ExportLayout> ParseExportLayout(const std::string& name) {
  if (name == "auto") return ExportLayout::kAuto;
  if (name == "nchw") return ExportLayout::kNchw;
  if (name == "nhwc") return ExportLayout::kNhwc;
  if (name == "nhw") return ExportLayout::kNhw;
  return std::nullopt;
}

Result<ExportLayout> ResolveLayout(const format::Header& h, ExportLayout layout) {
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
    default:
      return {h.total_samples, h.channels, h.height, h.width};
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

}  // namespace rf::convert
