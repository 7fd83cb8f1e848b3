// raw export: PREFIX.records (samples in the stored dtype) + PREFIX.labels.
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/exporter.h"
#include "tools/convert/sequential_output.h"

namespace rf::convert {

Result<ExportSummary> ExportRaw(const Dataset& d, const ExportOptions& o, Progress& progress) {
  const format::Header& h = d.header();
  RF_ASSIGN_OR_RETURN(ExportLayout layout, ResolveLayout(h, o.layout));
  const Elem label_elem = o.label_elem.value_or(ElemOf(h.label_dtype));
  RF_ASSIGN_OR_RETURN(SequentialOutput records, SequentialOutput::Create(o.prefix + ".records"));
  RF_ASSIGN_OR_RETURN(SequentialOutput labels, SequentialOutput::Create(o.prefix + ".labels"));
  std::vector<uint8_t> scratch, label_bytes;
  uint64_t done = 0;
  RF_RETURN_IF_ERROR(ForEachChunk(d, [&](const ChunkView& c) -> Status {
    const uint8_t* s = SamplesInLayout(h, layout, c.samples, c.count, &scratch);
    RF_RETURN_IF_ERROR(records.Append(s, c.count * h.SampleBytes()));
    LabelsAs(h.label_dtype, c.labels, c.count, label_elem, &label_bytes);
    RF_RETURN_IF_ERROR(labels.Append(label_bytes.data(), label_bytes.size()));
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  ExportSummary s;
  s.bytes = records.bytes() + labels.bytes();
  s.paths = {records.path(), labels.path()};
  RF_RETURN_IF_ERROR(records.Commit());
  RF_RETURN_IF_ERROR(labels.Commit());
  return s;
}

}  // namespace rf::convert
