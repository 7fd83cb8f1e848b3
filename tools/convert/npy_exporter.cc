// npy export: PREFIX-images.npy + PREFIX-labels.npy, headers as numpy writes them.
#include "io/sequential_output.h"
#include "tools/convert/exporter.h"
#include "tools/convert/npy_header.h"

namespace rf::convert {

Result<ExportSummary> ExportNpy(const Dataset& d, const ExportOptions& o, Progress& progress) {
  const format::Header& h = d.header();
  // An .npy keeps the stored shape by default, a channel dimension of 1 included: (N,1,8,8)
  // samples come back as (N,1,8,8), not (N,8,8) (IDX's N,H,W images are the other formats').
  RF_ASSIGN_OR_RETURN(
      ExportLayout layout,
      ResolveLayout(h, o.layout == ExportLayout::kAuto ? ExportLayout::kNchw : o.layout));
  const std::optional<std::string> descr = NpyDescrOf(ElemOf(h.sample_dtype));
  if (!descr) {
    return Status::Unsupported("numpy has no " + std::string(DTypeName(h.sample_dtype)) +
                               " dtype; export a uint8, float16 or float32 dataset");
  }
  const Elem label_elem = o.label_elem.value_or(ElemOf(h.label_dtype));
  RF_ASSIGN_OR_RETURN(SequentialOutput images,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[0]));
  RF_ASSIGN_OR_RETURN(SequentialOutput labels,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[1]));
  const std::string ih = FormatNpyHeader(*descr, ExportShape(h, layout));
  const std::string lh = FormatNpyHeader(*NpyDescrOf(label_elem), {h.total_samples});
  RF_RETURN_IF_ERROR(images.Append(ih.data(), ih.size()));
  RF_RETURN_IF_ERROR(labels.Append(lh.data(), lh.size()));
  return ExportSamplesAndLabels(d, layout, label_elem, /*big_endian=*/false, images, labels,
                                progress);
}

}  // namespace rf::convert
