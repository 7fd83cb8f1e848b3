// Fixed-shape tensors (BatchKind::kTensors): each stored batch decoded by the device into the
// output dtype and layout (pipeline/output/batch_decode.h), normalized and augmented as the
// plan's DecodeSpec says. At the raw level (no output buffers) the maker makes nothing: the
// Loader's source() serves the stored batches.
#include <utility>
#include <vector>

#include "pipeline/makers/makers.h"
#include "pipeline/makers/source_maker.h"

namespace rf {
namespace {

class TensorMaker final : public SourceMaker {
 public:
  TensorMaker(const MakerParts& parts, std::shared_ptr<OutputPool> pool)
      : SourceMaker(*parts.source, parts.device, std::move(pool)),
        output_(parts.plan.decode.output),
        sample_shape_(parts.plan.sample_shape) {}

 private:
  Result<std::shared_ptr<LoadedBatch>> Fill(const Batch& stored) override {
    std::vector<int64_t> shape;
    shape.reserve(sample_shape_.size() + 1);
    shape.push_back(stored.n);
    shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
    // The buffer is free of earlier readers from here on (its next writes are ordered after
    // them); the decode writes it, and the batch is ready once that has run.
    RF_ASSIGN_OR_RETURN(std::shared_ptr<LoadedBatch> out,
                        pool_->Acquire(stored.n, output_, std::move(shape)));
    RF_RETURN_IF_ERROR(device_.Decode(stored, out->samples(), out->labels()));
    return out;
  }

  const DType output_;
  const std::vector<int64_t> sample_shape_;
};

}  // namespace

Result<std::unique_ptr<BatchMaker>> MakeTensorMaker(const MakerParts& parts,
                                                    std::shared_ptr<OutputPool>* pool) {
  if (parts.plan.decoded) {
    const uint32_t batch = parts.options.pipeline.order.batch_size;
    RF_RETURN_IF_ERROR(parts.device.PrepareDecode(parts.plan.decode, batch));
    RF_ASSIGN_OR_RETURN(*pool, parts.device.MakePool(parts.plan.decode.OutputSampleBytes() * batch,
                                                     batch, parts.options.output_buffers));
  }
  return std::unique_ptr<BatchMaker>(new TensorMaker(parts, *pool));
}

}  // namespace rf
