// LoaderState: where a loader stands and what its batches depend on, the one resume state of
// every kind of loader, with its one encoding: a JSON object (StateJson), which is what
// ringfeed.Loader.state_dict() returns and load_state_dict() takes (python/src/json_values.h
// converts it to and from a Python dict, value for value), so every check of a saved state is
// made here, in C++, and reached by the C++ tests.
//
// Three kinds, each with its own version:
//   kSamples    one dataset's batches (tensors, records, decoded images), version 6: the epoch,
//               the position (samples of this rank's epoch handed out), the stretches (the
//               epoch's parts trained at other world sizes, oldest first: core/order_settings.h's
//               ResumedEpoch; a stretch under the node partition with its node_ranks), the
//               recorded options and the dataset's id and samples. Version 1 lacks augment and
//               dtype, versions 1 and 2 the stretches (their epochs were ordinary), versions 1 to
//               3 the look of the samples (layout, normalize, mean, std, image_size,
//               image_crop), versions 1 to 4 node_ranks (the global partition), versions 1 to 5
//               image_alpha: each loads with what it lacks unchecked.
//   kMixture    a weighted mixture of datasets (kind "mixture"), version 4: the mixture epoch's
//               place as above, the normalized weights, each dataset's id, samples and path (the
//               path named in messages, never compared), and the stream (MixtureState). Version 1
//               lacks the look of the samples, versions 1 and 2 node_ranks, versions 1 to 3
//               image_alpha.
//   kSequences  packed token sequences (kind "sequences"), version 1: the packing's options, the
//               weights as given ([] for one dataset), each dataset's id and samples, and the
//               stream (SequenceState: rows, draws, each dataset's epoch, position, world size
//               and list).
// The recorded options are the loader option table's (pipeline/plan/loader_options.h), by their
// Python names, as the table holds them (RecordedOptions).
//
// Ranks that took the same number of batches have the same state but for `rank`: rank 0's holds
// what every rank of any world size needs (pipeline/epoch_loader.h continues it).
//
// Thread safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sequences/sequence_state.h"
#include "pipeline/state/state_json.h"

namespace rf {

enum class StateKind { kSamples, kMixture, kSequences };

inline constexpr uint32_t kSampleStateVersion = 6;    // 6: image_alpha
inline constexpr uint32_t kMixtureStateVersion = 4;   // 4: image_alpha
inline constexpr uint32_t kSequenceStateVersion = 2;  // 2: node_ranks
// The most stretches a state holds: what a checkpoint holds (model/checkpoint.h's
// kMaxCheckpointStretches); a resume adds one.
inline constexpr size_t kMaxStateStretches = 1024;

struct StateDataset {
  uint64_t id = 0;
  uint64_t samples = 0;
  std::string path;  // kMixture: the first shard's path, named in messages
};

struct LoaderState {
  StateKind kind = StateKind::kSamples;
  // 0: the newest of its kind (a loader's own state); a decoded state's: the version it was
  // written at, which EncodeLoaderState writes again (with the fields that version holds).
  uint32_t version = 0;
  // The recorded options (an object, by Python name, in state_dict()'s order), rank and
  // world_size among them.
  StateJson options = StateJson::object();
  // A loader's own state only: the look keys a saved state must agree on with it (layout,
  // normalize, mean, std where batches are decoded; image_size, image_crop and image_alpha for a
  // dataset of image records).
  std::vector<std::string> look;
  std::vector<StateDataset> datasets;  // kSamples: the one; else each
  std::vector<double> weights;         // kMixture: normalized; kSequences: as given
  uint32_t world_size = 1;             // the world the place is of (options' world_size)
  uint32_t node_ranks = 0;             // and its partition (options' node_ranks; 0: global)
  // kSamples and kMixture: the (mixture) epoch's place.
  uint64_t epoch = 0, position = 0;
  std::vector<EpochStretch> stretches;
  MixtureState mixture;     // kMixture
  SequenceState sequences;  // kSequences
};

// The options a state of `kind` records, as `o` holds them.
StateJson RecordedOptions(const LoaderOptions& o, StateKind kind);

// The state as state_dict() returns it, at its kind's newest version.
StateJson EncodeLoaderState(const LoaderState& s);

// `saved` read as a state of `own`'s kind, or a Usage error naming what is wrong, each message
// beginning "load_state_dict": a value that is no object, a state of another kind, a version
// this ringfeed does not read, a field of its version missing (all named) or of another type
// than own's (each named, with its value), a field that differs from own's where the batches
// depend on it (CheckCompatible), a whole number out of its range, a stretch, source or list that
// is malformed, a rank not below its world size, a position off a batch boundary. Whether the
// place can be of the loader's data is the loader's check (pipeline/epoch_loader.h).
Result<LoaderState> DecodeLoaderState(const StateJson& saved, const LoaderState& own);

// Usage naming each recorded field of `saved` (a state of `version`, encoded as EncodeLoaderState
// does) that differs from `own`'s where the batches depend on it, with both values: "the state
// is of other batches: seed: the state has 5, this loader 6; ...". What is compared: the order's
// options, the dataset (kSamples: its id and samples; a mixture's: each dataset's, named with its
// path), the augmentation and the output dtype (from version 2), own's look keys (from version 4,
// a mixture's from 2), the weights, the packing's options.
Status CheckCompatible(const StateJson& saved, uint32_t version, const LoaderState& own);

}  // namespace rf
