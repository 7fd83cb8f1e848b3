// raw export: PREFIX.records (samples in the stored dtype) + PREFIX.labels.
#include "io/sequential_output.h"
#include "tools/convert/exporter.h"

namespace rf::convert {

Result<ExportSummary> ExportRaw(const Dataset& d, const ExportOptions& o, Progress& progress) {
  const format::Header& h = d.header();
  RF_ASSIGN_OR_RETURN(ExportLayout layout, ResolveLayout(h, o.layout));
  const Elem label_elem = o.label_elem.value_or(ElemOf(h.label_dtype));
  RF_ASSIGN_OR_RETURN(SequentialOutput records,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[0]));
  RF_ASSIGN_OR_RETURN(SequentialOutput labels,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[1]));
  return ExportSamplesAndLabels(d, layout, label_elem, /*big_endian=*/false, records, labels,
                                progress);
}

}  // namespace rf::convert
