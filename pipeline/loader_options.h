// The library loader's options (pipeline/loader.h's LoaderOptions), declared once: the pipeline's
// that the loader takes (pipeline/pipeline_options.h) and the output's (dtype, layout,
// normalization, augmentation, buffers). Python's ringfeed.Loader takes exactly these, as keyword
// arguments with '_' for '-' (python/src/module.cc sets them through this table; loader.py makes
// its signature and help from it).
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include <cstdint>

#include "options/option_table.h"
#include "pipeline/loader.h"

namespace rf {

// Decoded batches a loader keeps buffers for (each batch_size x a sample's output bytes).
inline constexpr uint32_t kMaxOutputBuffers = 64;
// The longest packed sequence (tokens a row: one more).
inline constexpr uint32_t kMaxSequenceLength = 1u << 22;
// Packed sequences' packing threads (SequenceOptions::pack_threads).
inline constexpr uint32_t kMaxPackThreads = 64;

const OptionTable<LoaderOptions>& LoaderOptionTable();

// The augmentation option (core/augment_spec.h's SPEC): declared here once, bound by the loader's
// table to its output and by `ringfeed train`'s to its config.
OptionSpec AugmentOptionSpec();

}  // namespace rf
