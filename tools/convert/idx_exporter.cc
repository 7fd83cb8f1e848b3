// idx export: PREFIX-images.idx + PREFIX-labels.idx, uncompressed, big-endian.
#include "io/sequential_output.h"
#include "tools/convert/byte_order.h"
#include "tools/convert/exporter.h"
#include "tools/convert/idx_input.h"

namespace rf::convert {
namespace {

std::vector<uint8_t> IdxHeaderBytes(uint8_t code, const std::vector<uint64_t>& dims) {
  std::vector<uint8_t> h = {0, 0, code, static_cast<uint8_t>(dims.size())};
  for (uint64_t d : dims) {
    h.resize(h.size() + 4);
    StoreBigEndian32(&h[h.size() - 4], static_cast<uint32_t>(d));
  }
  return h;
}

}  // namespace

Result<ExportSummary> ExportIdx(const Dataset& d, const ExportOptions& o, Progress& progress) {
  const format::Header& h = d.header();
  RF_ASSIGN_OR_RETURN(ExportLayout layout, ResolveLayout(h, o.layout));
  const Elem sample_elem = ElemOf(h.sample_dtype);
  const std::optional<uint8_t> code = IdxCodeOf(sample_elem);
  if (!code) {
    return Status::Unsupported("IDX has no " + std::string(DTypeName(h.sample_dtype)) +
                               " type; export it as raw or npy");
  }
  if (h.total_samples > UINT32_MAX) return Status::Unsupported("IDX counts are 32-bit");
  // uint8 labels keep IDX's ubyte; wider ones are written as int (0x0C).
  const Elem label_elem = h.label_dtype == DType::kUInt8 ? Elem::kU8 : Elem::kI32;

  RF_ASSIGN_OR_RETURN(SequentialOutput images,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[0]));
  RF_ASSIGN_OR_RETURN(SequentialOutput labels,
                      SequentialOutput::Create(ExportPaths(o.format, o.prefix)[1]));
  const std::vector<uint8_t> ih = IdxHeaderBytes(*code, ExportShape(h, layout));
  const std::vector<uint8_t> lh = IdxHeaderBytes(*IdxCodeOf(label_elem), {h.total_samples});
  RF_RETURN_IF_ERROR(images.Append(ih.data(), ih.size()));
  RF_RETURN_IF_ERROR(labels.Append(lh.data(), lh.size()));

  return ExportSamplesAndLabels(d, layout, label_elem, /*big_endian=*/true, images, labels,
                                progress);
}

}  // namespace rf::convert
