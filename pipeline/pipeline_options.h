// The pipeline's options, declared once (options/option_table.h): the dataset, the device and
// mode, the batch and its order, the ranks, the reader and ring, the managed mode's paging. Every
// program that takes one reads it through this table: `ringfeed train` and `ringfeed read`
// (their command lines and --config files) and the library's loader (Python's ringfeed.Loader;
// pipeline/loader_options.h adds the output's options). Each declaration names the program that
// takes it, its bounds and where it does something (the streaming reader's options are refused
// in managed mode, the copy streams on the CPU).
//
// The bounds are the pipeline's: a count a user gives sizes memory (the ring, the staging, the
// reader's queue), so each has an upper end, checked before anything is allocated.
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include <cstdint>

#include "options/option_table.h"
#include "pipeline/batch_source.h"
#include "pipeline/pipeline_config.h"

namespace rf {

inline constexpr uint32_t kMaxBatchSize = 1u << 20;        // samples a batch
inline constexpr uint32_t kMaxShuffleWindow = 4096;        // chunks staged together (3 windows)
inline constexpr uint32_t kMaxRingSlots = 1024;            // host ring slots, one chunk each
inline constexpr uint32_t kMaxCopyStreams = 16;            // host-to-device copy streams
inline constexpr uint32_t kMaxManagedPrefetch = 1u << 16;  // batches ahead
inline constexpr uint32_t kMaxWorldSize = 1u << 16;        // ranks of one run
// kMaxEpoch, the most an epoch counter holds: pipeline/batch_source.h.

const OptionTable<PipelineConfig>& PipelineOptionTable();

}  // namespace rf
