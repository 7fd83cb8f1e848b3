// Packed token sequences' state (pipeline/sequences/sequence_loader.h) as a LoaderState of kind
// kSequences (pipeline/state/loader_state.h): what ringfeed.Loader(..., sequence_length=L)'s
// state_dict() returns and load_state_dict() takes, and its set_epoch.
//
// Ownership and threads: each function reads or moves the SequenceLoader it is handed, on the
// one thread that calls that loader's methods.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sequences/sequence_loader.h"
#include "pipeline/state/loader_state.h"

namespace rf {

// The state of `loader`, opened with `options` over `datasets`.
LoaderState PackedState(const SequenceLoader& loader, const LoaderOptions& options,
                        const std::vector<const Dataset*>& datasets);
// Continues `saved` (DecodeLoaderState against PackedState's, then SequenceLoader::Restore,
// which continues it at this loader's world size).
Status RestorePacked(SequenceLoader& loader, const LoaderOptions& options,
                     const std::vector<const Dataset*>& datasets, const StateJson& saved);
// One dataset: its epoch `epoch` from the start, split over this loader's world (the rows
// handed out go on counting). A mixture's stream goes on, each dataset at its own epoch. Usage
// for an epoch past kMaxEpoch.
Status SetPackedEpoch(SequenceLoader& loader, uint64_t epoch);

}  // namespace rf
