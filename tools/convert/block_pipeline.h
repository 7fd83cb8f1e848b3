// ConvertBlocks: the converter's block loop on several threads, with the output of the loop on
// one thread. A fixed ring of blocks moves through three stages:
//
//   read     one thread, in input order: SampleSource::Read into the block's buffers, then its
//            labels checked against the class count and stored in the label dtype
//   convert  `threads` workers, any part of any block: SampleSource::Decode (the predecessor's
//            transpose, byte swaps, nhwc), the finite check, the conversion to the stored dtype
//            (elem_type.h) and each sample's channel sums (DatasetWriter::ChannelSums)
//   sink     the calling thread, in input order: the block handed to `sink` (the writers)
//
// so reading, converting and writing overlap, and the conversion of one block is spread over
// every worker (a block is cut into pieces of about a MiB, each cut into batches that fit a
// core's cache).
//
// The output does not depend on the thread count: blocks reach the sink in input order, each
// holding the same bytes and the same per-sample channel sums whatever thread made them, and the
// writer adds those sums in sample order, so the statistics are bit for bit the serial ones. The
// block size depends on the sample size and the memory budget alone, and so does which error a
// bad input gets: the first block (in input order) with a problem reports, within it a read
// error first, then a label, then a NaN or infinite input, then a value the stored dtype cannot
// hold, each the first of its kind in sample order: as one thread checking whole blocks in turn.
//
// Memory: the ring's blocks (their input bytes, converted samples, labels and sums) within
// memory_budget, two to four blocks (fewer where one sample takes a large part of the budget;
// at least one sample each), and a decode buffer per worker of about a MiB (at least a sample),
// whatever the input's size.
#pragma once

#include <cstdint>
#include <functional>

#include "core/dtype.h"
#include "core/status.h"
#include "io/dataset_writer.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

// What every block becomes; fixed for a conversion (converter.cc decides it).
struct BlockConversion {
  DType stored = DType::kUInt8;
  float scale = 1.f;
  bool ids = false;          // integer input copied exactly (elem_type.h), never scaled
  bool passthrough = false;  // the decoded input's bytes are the stored bytes
  bool labeled = true;
  DType label_dtype = DType::kUInt8;
  int64_t max_label = 0;      // labels above it are refused
  uint32_t classes_flag = 0;  // --classes as given (0: not given), for the label message
};

// One block as the sink gets it. The pointers are valid during the call only.
struct ConvertedBlock {
  uint64_t first = 0;  // index of its first sample in the input
  uint64_t count = 0;
  const uint8_t* samples = nullptr;      // count samples of the stored dtype
  const uint8_t* labels = nullptr;       // count labels of the label dtype; nullptr without
  const double* channel_sums = nullptr;  // DatasetWriter::ChannelSums of the samples
};

struct PipelineOptions {
  uint32_t threads = 1;  // convert workers, at least 1
  uint64_t memory_budget = 256 << 20;
};

// Blocks in flight and samples per block for a budget: a function of the sample's size, the
// stored dtype and the budget alone (never of the thread count).
struct BlockPlan {
  uint32_t blocks = 1;
  uint64_t samples = 1;  // per block
};
BlockPlan PlanBlocks(const SourceShape& shape, DType stored, uint64_t memory_budget,
                     size_t sums_per_sample);

// Drains `source` through the stages above, calling sink(block) on this thread for each block in
// input order; the first error (the source's, a bad label or sample, the sink's) stops every
// thread and is returned. `sums` gives ChannelSums (any writer of the dataset's spec). An
// exception in a stage (std::bad_alloc) is rethrown here once every thread has stopped.
Status ConvertBlocks(SampleSource& source, const BlockConversion& conversion,
                     const DatasetWriter& sums, const PipelineOptions& options,
                     const std::function<Status(const ConvertedBlock&)>& sink);

}  // namespace rf::convert
