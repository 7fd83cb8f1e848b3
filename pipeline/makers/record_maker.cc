// Records of any size (BatchKind::kRecords: tokens, bytes, JPEGs handed out as stored): each
// stored batch's values, offsets and labels put on the device as they are, no decode. The
// values' room grows with the batches (OutputPool::Reserve).
#include <algorithm>
#include <utility>

#include "pipeline/makers/makers.h"
#include "pipeline/makers/source_maker.h"

namespace rf {
namespace {

class RecordMaker final : public SourceMaker {
 public:
  using SourceMaker::SourceMaker;

 private:
  Result<std::shared_ptr<LoadedBatch>> Fill(const Batch& stored) override {
    const int64_t elems = stored.offsets[stored.n];
    RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out,
                        pool_->Acquire(stored.n, stored.sample_dtype, {elems}));
    RF_RETURN_IF_ERROR(pool_->Reserve(*out, stored.values_bytes));
    int64_t* offsets = out->UseRecordOffsets();
    RF_RETURN_IF_ERROR(device_.PutRecords(stored, out->samples(), offsets, out->labels()));
    return out;
  }
};

}  // namespace

Result<std::unique_ptr<BatchMaker>> MakeRecordMaker(const MakerParts& parts,
                                                    std::shared_ptr<OutputPool>* pool) {
  if (parts.plan.decoded) {
    // The values' room starts at twice a batch of the dataset's mean record.
    const format::Header& h = parts.plan.header;
    const Dataset& d = *parts.datasets[0];
    const uint32_t batch = parts.options.pipeline.order.batch_size;
    const uint64_t mean = std::max<uint64_t>(1, d.data_bytes() / h.total_samples);
    const uint64_t start = std::min<uint64_t>(uint64_t{batch} * h.SampleBytes(), 2 * batch * mean);
    RF_ASSIGN_OR_RETURN(*pool, parts.device.MakePool(start, batch, parts.options.output_buffers));
  }
  return std::unique_ptr<BatchMaker>(new RecordMaker(*parts.source, parts.device, *pool));
}

}  // namespace rf
