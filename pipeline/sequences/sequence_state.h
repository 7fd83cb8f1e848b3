// SequenceState: where a SequenceLoader (pipeline/sequences/sequence_loader.h) stands, as
// state() gives it and Restore() takes it: the rows handed out per rank, each source's draws, and
// each source's epoch (SequenceSourceState), which its SequenceSource
// (pipeline/sequences/sequence_source.h) also keeps as it goes. What these mean, and how a
// restore at another world size continues them: sequence_loader.h's "State".
//
// Plain values, copied freely; no threads of their own.
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/sequences/sequence_plan.h"

namespace rf {

struct SequenceSourceState {
  uint64_t epoch = 0;
  uint64_t position = 0;    // rows of the epoch handed out per rank
  uint32_t world_size = 0;  // what `list` is split over; 0: the loader's own
  SequenceList list;        // the epoch's sequences; empty: all of them
  bool operator==(const SequenceSourceState&) const = default;
};

struct SequenceState {
  uint64_t rows = 0;            // handed out per rank since the start
  std::vector<uint64_t> drawn;  // per source: rows it gave
  std::vector<SequenceSourceState> sources;
  // The partition the sources' lists are numbered under (OrderSettings::node_ranks of the run
  // that made them; sequence_plan.h's node partition): 0, the global one.
  uint32_t node_ranks = 0;
  bool operator==(const SequenceState&) const = default;
};

}  // namespace rf
