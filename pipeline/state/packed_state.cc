#include "pipeline/state/packed_state.h"

#include <utility>

#include "pipeline/sources/batch_source.h"

namespace rf {

LoaderState PackedState(const SequenceLoader& loader, const LoaderOptions& options,
                        const std::vector<const Dataset*>& datasets) {
  LoaderState s;
  s.kind = StateKind::kSequences;
  s.version = kSequenceStateVersion;
  s.options = RecordedOptions(options, StateKind::kSequences);
  for (const Dataset* d : datasets)
    s.datasets.push_back({d->header().dataset_id, d->sample_count(), std::string()});
  s.weights.assign(options.pipeline.weights.begin(), options.pipeline.weights.end());
  s.world_size = options.pipeline.order.world_size;
  s.sequences = loader.state();
  return s;
}

Status RestorePacked(SequenceLoader& loader, const LoaderOptions& options,
                     const std::vector<const Dataset*>& datasets, const StateJson& saved) {
  RF_ASSIGN_OR_RETURN(const LoaderState s,
                      DecodeLoaderState(saved, PackedState(loader, options, datasets)));
  return loader.Restore(s.sequences);
}

Status SetPackedEpoch(SequenceLoader& loader, uint64_t epoch) {
  if (epoch > kMaxEpoch) {
    return Status::Usage("epoch must be a whole number from 0 to " + std::to_string(kMaxEpoch) +
                         ", got " + std::to_string(epoch));
  }
  SequenceState s = loader.state();
  if (s.sources.size() != 1) return Status::Ok();
  s.sources = {SequenceSourceState{epoch, 0, 0, {}}};
  return loader.Restore(s);
}

}  // namespace rf
