// The writing end that the converters of records from input files share (ConvertImages in
// image_converter.h, ConvertDocuments in token_converter.h):
//   CheckRecordOutputs   before any input is read: the dataset's shard files (and the files in
//                        `also`, a report beside them) checked against the inputs and each other
//                        (io/file.h's CheckOutputPaths: no output may be an input, another
//                        output or a special file);
//   RecordWriterOptions  the writer's options from the converter's (shards, chunk size, codec,
//                        its threads, format version, dataset id, the largest record), the
//                        inputs kept (the writer never replaces one);
//   FinishRecordOutput   the writer finished, and what it wrote: stored bytes, paths, the older
//                        datasets of the same name it removed, the chunks (the dataset reopened).
//
// Thread safety: plain functions; the writer is the caller's, used from the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/dataset_writer.h"

namespace rf::convert {

Status CheckRecordOutputs(const std::string& out_path, uint32_t shards,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& also = {});

// `Options`: a converter's options (ImageConvertOptions, TokenConvertOptions), whose fields of
// these names say what the writer's do.
template <typename Options>
WriterOptions RecordWriterOptions(const Options& o, const std::vector<std::string>& inputs) {
  WriterOptions w;
  w.shards = o.shards;
  w.chunk_bytes = o.chunk_bytes;
  w.codec = o.codec;
  w.threads = o.compress_threads;
  w.version = o.format_version;  // 0: the newest, which records of any size take
  w.dataset_id = o.dataset_id;
  w.keep = inputs;
  w.max_record_bytes = o.max_record_bytes;
  return w;
}

struct RecordOutput {
  uint64_t bytes = 0;   // chunk bytes stored
  uint64_t chunks = 0;  // the dataset's, as written
  std::vector<std::string> paths;
  std::vector<std::string> removed;                // older datasets of the same name, removed
  std::chrono::steady_clock::time_point finished;  // when the writer had finished
};
Result<RecordOutput> FinishRecordOutput(DatasetWriter& writer, const std::string& out_path);

// "removed F (an older dataset of the same name)\n" for each of `removed`.
std::string RemovedReport(const std::vector<std::string>& removed);

}  // namespace rf::convert
