// Recompress: writes a dataset again with another codec (or none), without decoding a sample.
// Each chunk's data (decompressed, verified: dataset_chunks.h) is appended, samples and labels as
// stored, to a writer given the input's chunk_samples, shard count, dtypes, shape, class count
// and dataset id, so the output has the same chunks holding the same bytes: the same order for
// every seed (the order works in chunks and their sample counts, never in stored bytes), the same
// channel statistics (the writer recomputes them from the same samples in the same order), and a
// checkpoint of the input resumes on the output (its dataset id is the input's). Only how each
// chunk is stored changes, and the format version where the codec asks for it.
//
// The output obeys the converter's rules (converter.h): no output file may be an input file by any
// name (Usage, before anything is written), it is written under temporary names and renamed into
// place only once complete, and an older dataset of the output's name is removed only after.
// A directory of datasets (Dataset::Open of a directory) is refused (Usage): recompress each
// of its datasets, which keeps each one's chunks and id, so the directory's order and id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/codec.h"
#include "io/dataset.h"

namespace rf::convert {

struct RecompressOptions {
  CodecSpec codec;                // each chunk's; none stores every chunk raw
  uint32_t compress_threads = 0;  // 0: one per core, at most 16
  uint32_t format_version = 0;    // 0: 1 without a codec, 2 with one, 3 for records
  bool progress = true;
};

struct RecompressSummary {
  uint64_t samples = 0;
  uint64_t chunks = 0;
  uint64_t data_bytes = 0;         // every chunk's data (the same before and after)
  uint64_t stored_before = 0;      // the input's chunks as stored
  uint64_t stored_after = 0;       // the output's
  uint64_t compressed_before = 0;  // chunks stored compressed in the input
  uint64_t compressed_after = 0;   // and in the output
  CodecSpec codec_before;          // the input header's codec (none for version 1)
  uint32_t version_after = 0;
  // The output's channel statistics are not the input's (bit for bit): an input whose writer
  // computed them otherwise. Never for datasets this build wrote.
  bool statistics_differ = false;
  double seconds = 0;
  std::vector<std::string> paths;    // the output's files, in shard order
  std::vector<std::string> removed;  // older datasets of the output's name (dataset_writer.h)
};

Result<RecompressSummary> Recompress(const Dataset& input, const std::string& out_path,
                                     const RecompressOptions& options);

// "wrote OUT: ..." (progress.h's SummaryLine, over the bytes stored), then the stored bytes before
// and after with their ratio, how many chunks each stores compressed, and whether the input was
// compressed already, or whether the statistics differ; then the files removed.
std::string RecompressReport(const std::string& input, const RecompressSummary& s);

}  // namespace rf::convert
