// Samples of several fields (BatchKind::kFields, pipeline/fields/field_split.h): each stored batch
// split into its fields, each handed out as its kind is alone. Without a decoded image field the
// batch is made here from the source's, its fields' area laid out on the host and put with one
// copy; with one (image_size given), the image stage decodes that field and lays out the others
// beside the images (pipeline/images/image_stage.h), as image records are decoded.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "pipeline/fields/field_split.h"
#include "pipeline/makers/makers.h"
#include "pipeline/makers/source_maker.h"
#include "pipeline/output/batch_decode.h"

namespace rf {
namespace {

class FieldsMaker final : public SourceMaker {
 public:
  FieldsMaker(TrainingSource& source, LoaderDevice& device, std::shared_ptr<OutputPool> pool,
              std::shared_ptr<const FieldSplit> split)
      : SourceMaker(source, device, std::move(pool)), split_(std::move(split)) {}

 private:
  Result<std::shared_ptr<LoadedBatch>> Fill(const Batch& stored) override {
    const auto* records = static_cast<const uint8_t*>(stored.samples);
    RF_RETURN_IF_ERROR(split_->Split(records, stored.offsets, stored.n, &spans_));
    split_->Layout(records, spans_, nullptr, stored.n, &area_, &parts_);
    RF_ASSIGN_OR_RETURN(
        std::shared_ptr<LoadedBatch> out,
        pool_->Acquire(stored.n, DType::kUInt8, {static_cast<int64_t>(area_.size())}));
    RF_RETURN_IF_ERROR(pool_->Reserve(*out, area_.size()));
    if (!area_.empty())
      RF_RETURN_IF_ERROR(device_.PutBytes(area_.data(), out->samples(), area_.size()));
    labels_.resize(stored.n);
    DecodeLabelsOnHost(stored.label_dtype, stored.labels, stored.n, labels_.data());
    RF_RETURN_IF_ERROR(
        device_.PutBytes(labels_.data(), out->labels(), size_t{stored.n} * sizeof(int64_t)));
    split_->Describe(*out, static_cast<uint8_t*>(out->samples()), parts_, stored.n);
    return out;
  }

  std::shared_ptr<const FieldSplit> split_;
  std::vector<format::FieldSpan> spans_;
  std::vector<uint8_t> area_;  // pageable: PutBytes has read it when it returns
  std::vector<FieldSplit::Part> parts_;
  std::vector<int64_t> labels_;
};

}  // namespace

Result<std::unique_ptr<BatchMaker>> MakeFieldsMaker(const MakerParts& parts,
                                                    std::shared_ptr<OutputPool>* pool) {
  const format::Header& h = parts.plan.header;
  auto split = std::make_shared<const FieldSplit>(h.fields, parts.plan.image_field);
  if (parts.plan.image_field >= 0) return MakeImageFieldMaker(parts, pool, std::move(split));
  if (parts.plan.decoded) {
    // The area's room starts at twice a batch of the dataset's mean sample, and grows.
    const Dataset& d = *parts.datasets[0];
    const uint32_t batch = parts.options.pipeline.order.batch_size;
    const uint64_t mean = std::max<uint64_t>(1, d.data_bytes() / h.total_samples);
    const uint64_t start = std::min<uint64_t>(uint64_t{batch} * h.SampleBytes(), 2 * batch * mean);
    RF_ASSIGN_OR_RETURN(*pool, parts.device.MakePool(start, batch, parts.options.output_buffers));
  }
  return std::unique_ptr<BatchMaker>(
      new FieldsMaker(*parts.source, parts.device, *pool, std::move(split)));
}

}  // namespace rf
