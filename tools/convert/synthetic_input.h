// The synthetic generator: N learnable samples made on the fly, for tests and benchmarks of
// datasets of any size.
//
// Each class has a template: per channel, a smooth pattern of three random plane waves derived
// from (seed, class). Sample i is its class's template blended with per-sample noise,
//
//   value = (template * 96 + noise * 160) / 256   (as uint8; float dtypes store value / 255)
//
// so a classifier that learns the templates does far better than chance, and one that does not
// stays at 1/classes. Labels are uniform random per sample, or with `sorted` run 0,0,..,1,1,..
// in equal runs (a dataset sorted by label: the worst case for shuffling).
//
// Everything about sample i derives from (seed, i) alone, so the output is byte-identical
// whatever the thread count. Worker threads fill blocks of samples ahead of the consumer in a
// ring of threads + 2 blocks; memory is that ring plus classes x C x H x W template bytes.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

struct SyntheticOptions {
  uint64_t samples = 0;
  uint32_t channels = 3, height = 32, width = 32;
  uint32_t classes = 10;
  uint64_t seed = 0;
  uint32_t threads = 0;  // 0: one per hardware thread
  bool sorted = false;
  DType dtype = DType::kUInt8;
  uint64_t block_bytes = 4 << 20;  // samples per block: block_bytes / sample bytes (at least 1)
};

// Usage, naming the flag, for a shape CheckSampleShape refuses, more classes than int32 labels
// name, templates (one uint8 sample per class) over 4 GiB, or more than 1024 threads: each is
// checked before anything is sized from it.
Result<std::unique_ptr<SampleSource>> MakeSyntheticSource(const SyntheticOptions& options);

// A dataset id that is a function of every option that shapes the output (threads excepted),
// so that the same command writes the same bytes.
uint64_t SyntheticDatasetId(const SyntheticOptions& options);

// The pieces of the generator, for tests.
uint32_t SyntheticLabel(const SyntheticOptions& options, uint64_t sample);
// Writes class `label`'s template (C x H x W uint8) to out.
void SyntheticTemplate(const SyntheticOptions& options, uint32_t label, uint8_t* out);

}  // namespace rf::convert
