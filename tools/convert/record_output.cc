#include "tools/convert/record_output.h"

#include "io/dataset.h"
#include "io/file.h"
#include "io/format.h"

namespace rf::convert {

Status CheckRecordOutputs(const std::string& out_path, uint32_t shards,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& also) {
  std::vector<NamedPath> outputs, input_files;
  for (uint32_t i = 0; i < shards; ++i)
    outputs.push_back({"", format::ShardPath(out_path, i, shards)});
  for (const std::string& a : also) outputs.push_back({"", a});
  for (const std::string& in : inputs) input_files.push_back({"", in});
  return CheckOutputPaths(outputs, input_files);
}

Result<RecordOutput> FinishRecordOutput(DatasetWriter& writer, const std::string& out_path) {
  RF_RETURN_IF_ERROR(writer.Finish());
  RecordOutput r;
  r.finished = std::chrono::steady_clock::now();
  r.bytes = writer.bytes_written();
  r.paths = writer.paths();
  r.removed = writer.removed();
  RF_ASSIGN_OR_RETURN(Dataset written, Dataset::Open(out_path));
  r.chunks = written.chunk_count();
  return r;
}

std::string RemovedReport(const std::vector<std::string>& removed) {
  std::string out;
  for (const std::string& f : removed)
    out += "removed " + f + " (an older dataset of the same name)\n";
  return out;
}

}  // namespace rf::convert
