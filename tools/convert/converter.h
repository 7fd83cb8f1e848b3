// Convert: drains a SampleSource into a ringfeed dataset (and, with a test split, a second one),
// keeping the source's sample shape, converting samples to the stored dtype (the rules in
// elem_type.h: intensities scaled, ids copied exactly), checking every label, and keeping memory
// bounded by the blocks of samples in flight plus the writers' chunk buffers. The samples are
// read, converted on `threads` threads and written as block_pipeline.h says, byte for byte the
// same dataset whatever the thread count. A source without labels makes a dataset without labels
// (0 classes; --classes is then refused).
//
// The test split: sample i goes to the test set when a seeded hash of i falls below the
// fraction, so the split is the same on every run and machine, whatever the block sizes. The
// test set is written to TestSetPath(out): "data.rfd" -> "data.test.rfd" (a name without
// ".rfd" gets ".test.rfd" appended). Both datasets get the same class count.
//
// Nothing is left behind on failure: the writers remove their temporary files. NaN and infinite
// samples are refused, naming the sample and where it starts in the input; so are finite ones
// that overflow the stored dtype (1e6 as float16).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/codec.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

inline constexpr uint64_t kDefaultChunkBytes = 4 << 20;

struct ConvertOptions {
  std::optional<DType> sample_dtype;  // default: DefaultSampleDType(input)
  std::optional<float> scale;         // default: DefaultScale(input, stored)
  // Target stored chunk size (--chunk-size). Given, it must hold at least one sample and its
  // label (Usage otherwise); by default, kDefaultChunkBytes, which a larger sample stretches to
  // one sample a chunk.
  std::optional<uint64_t> chunk_bytes;
  uint32_t shards = 1;
  // 0: the source's count if it knows one, else inferred from labels. Given, at least 2 and at
  // most what the label dtype can name (format::MaxClassesFor); Usage otherwise.
  uint32_t num_classes = 0;
  double test_fraction = 0;  // in [0, 1)
  uint64_t split_seed = 0;
  uint64_t memory_budget = 256 << 20;  // for the blocks of samples in flight (block_pipeline.h)
  // Threads that decode, check, convert and sum samples (block_pipeline.h); 0: the CPUs this
  // process may run on (core/cpus.h). The output is the same whatever the count.
  uint32_t threads = 0;
  // 0: random. Set for reproducible output (the synthetic generator derives it from its seed);
  // the test set then gets SplitMix64(dataset_id).
  uint64_t dataset_id = 0;
  bool progress = true;
  std::string progress_label = "converting";
  CodecSpec codec = {};           // each chunk's (io/codec.h); any codec writes format 2
  uint32_t compress_threads = 0;  // 0: one per core, at most 16
  uint32_t format_version = 0;    // 0: 1 without a codec, 2 with one, 3 for records
};

struct ConvertSummary {
  uint64_t samples = 0;       // in the main dataset
  uint64_t test_samples = 0;  // in the test dataset
  uint64_t chunks = 0;        // in both
  uint64_t bytes = 0;         // chunk bytes written, both datasets
  uint32_t num_classes = 0;
  double seconds = 0;
  std::vector<std::string> paths;  // every file written, main dataset first
  // Files of older datasets of the same names, removed once the new ones were committed
  // (io/dataset_writer.h): a name holds one dataset.
  std::vector<std::string> removed;
};

Result<ConvertSummary> Convert(SampleSource& source, const std::string& out_path,
                               const ConvertOptions& options);

std::string TestSetPath(const std::string& out_path);
bool InTestSet(uint64_t split_seed, uint64_t sample, double fraction);

}  // namespace rf::convert
