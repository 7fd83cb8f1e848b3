// cifar export: PREFIX.bin, per sample one label byte then the sample's bytes (C x H x W).
#include "io/sequential_output.h"
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/exporter.h"

namespace rf::convert {

Result<ExportSummary> ExportCifar(const Dataset& d, const ExportOptions& o, Progress& progress) {
  const format::Header& h = d.header();
  if (h.sample_dtype != DType::kUInt8) {
    return Status::Unsupported("CIFAR records hold uint8 pixels; this dataset stores " +
                               std::string(DTypeName(h.sample_dtype)));
  }
  if (o.layout != ExportLayout::kAuto && o.layout != ExportLayout::kNchw) {
    return Status::InvalidArgument("CIFAR records are channel-major: --layout must be nchw");
  }
  RF_ASSIGN_OR_RETURN(SequentialOutput out,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[0]));
  const uint64_t sb = h.SampleBytes();
  std::vector<uint8_t> records;
  uint64_t done = 0;
  RF_RETURN_IF_ERROR(ForEachChunk(d, [&](const ChunkView& c) -> Status {
    records.resize(c.count * (sb + 1));
    for (uint32_t i = 0; i < c.count; ++i) {
      const int64_t label = LoadLabel(h.label_dtype, c.labels, i);
      if (label > 255) {
        return Status::Unsupported("label " + std::to_string(label) + " of sample " +
                                   std::to_string(c.first_sample + i) +
                                   " does not fit CIFAR's label byte");
      }
      uint8_t* r = &records[i * (sb + 1)];
      r[0] = static_cast<uint8_t>(label);
      std::copy_n(c.samples + i * sb, sb, r + 1);
    }
    RF_RETURN_IF_ERROR(out.Append(records.data(), records.size()));
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  ExportSummary s;
  s.bytes = out.bytes();
  s.paths = {out.path()};
  RF_RETURN_IF_ERROR(out.Commit());
  return s;
}

}  // namespace rf::convert
