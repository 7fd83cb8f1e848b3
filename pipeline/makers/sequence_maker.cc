// Packed token sequences (BatchKind::kSequences): the SequenceLoader (pipeline/sequences/
// sequence_loader.h) behind the Loader, on the Loader's device. It reads its datasets through
// sources of its own (the plan stages none) and packs and puts the batches on threads of its own
// ahead of the consumer, so its batches are ready when Make hands them on. Its place is its
// SequenceState: no (epoch, position) of the Loader's places it (StartEpoch refuses one).
#include <utility>

#include "pipeline/makers/makers.h"
#include "pipeline/sequences/sequence_loader.h"

namespace rf {
namespace {

class SequenceMaker final : public BatchMaker {
 public:
  explicit SequenceMaker(std::unique_ptr<SequenceLoader> loader) : loader_(std::move(loader)) {}

  Status StartEpoch(uint64_t epoch, uint64_t position) override {
    if (epoch == 0 && position == 0) return Status::Ok();
    return Status::Usage("packed sequences are placed by their state (RestoreSequences), not by "
                         "an epoch and a position");
  }
  Result<std::shared_ptr<LoadedBatch>> Make(uint64_t /*epoch*/) override { return loader_->Next(); }
  uint64_t position() const override { return 0; }
  const MixtureState* mixture_state() const override { return nullptr; }
  bool runs_ahead() const override { return true; }
  std::optional<SequenceState> sequence_state() const override { return loader_->state(); }
  Status RestoreSequences(const SequenceState& s) override { return loader_->Restore(s); }
  uint64_t epoch_batches() const override { return loader_->batches_per_epoch(); }
  uint64_t epoch_sequences(size_t dataset) const override {
    return loader_->epoch_sequences(dataset);
  }
  void AddStats(LoaderStats* s) const override { *s = loader_->stats(); }
  std::string Describe() const override { return loader_->Describe(); }

 private:
  std::unique_ptr<SequenceLoader> loader_;
};

}  // namespace

Result<std::unique_ptr<BatchMaker>> MakeSequenceMaker(const MakerParts& parts,
                                                      std::shared_ptr<OutputPool>* /*pool*/) {
  SequenceSpec spec = SequenceSpecFor(parts.options);
  spec.dtype = parts.plan.output;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<SequenceLoader> l,
                      SequenceLoader::Create(parts.datasets, spec, &parts.device));
  return std::unique_ptr<BatchMaker>(new SequenceMaker(std::move(l)));
}

}  // namespace rf
