// The datasets `ringfeed train` reads (step 1 of src/train_command.cc's run), and the epochs they
// make: RunData holds the training split (one dataset, or a mixture's) and the --test split,
// opened and checked trainable by OpenData; EpochSamplesOf and OrdinaryEpochSamples count what an
// epoch of this rank trains on.
//
// Ownership: RunData owns its Datasets; everything made from it (the engine, the trainer) points
// into it, so it outlives them. Thread safety: none needed (the run's thread alone).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "src/train_config.h"

namespace rf {

// The datasets the run reads: the training split (one dataset, or a mixture's: --data a,b
// --weights), and the test split where --test names one (Usage where any cannot be trained on,
// a mixture's datasets hold other samples than each other, or the test split's shape or classes
// are not the training split's).
struct RunData {
  std::vector<Dataset> train;
  std::vector<double> weights;  // a mixture's, normalized; empty: one dataset
  std::optional<Dataset> test;

  const Dataset& first() const { return train[0]; }
  bool mixture() const { return !weights.empty(); }
  std::vector<const Dataset*> sources() const {
    std::vector<const Dataset*> out;
    for (const Dataset& d : train) out.push_back(&d);
    return out;
  }
  // The training split's samples: a mixture's datasets' together.
  uint64_t samples() const {
    uint64_t n = 0;
    for (const Dataset& d : train) n += d.sample_count();
    return n;
  }
};

// Opens the datasets c names and checks them as above (the CNN trains images with labels).
Result<RunData> OpenData(const TrainConfig& c);

// The samples each rank trains on in `epoch` (a resumed epoch's own count), less a partial last
// batch with drop_last: a dataset's (PipelineConfig::EpochSamplesFor) or a mixture's
// (pipeline/sources/mixture.h's epochs); Usage for stretches the data cannot have had.
Result<uint64_t> EpochSamplesOf(const TrainConfig& c, const RunData& data, uint64_t epoch);

// The samples of an ordinary epoch of each rank, before drop_last (what the schedule's span is
// counted from).
uint64_t OrdinaryEpochSamples(const TrainConfig& c, const RunData& data);

}  // namespace rf
