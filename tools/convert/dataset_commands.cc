// The subcommands that read a dataset: export, recompress, inspect, verify.
#include <chrono>

#include "io/chunk_cache.h"
#include "io/dataset.h"
#include "io/remote/remote_object.h"
#include "io/remote/retry_policy.h"
#include "tools/convert/commands.h"
#include "tools/convert/convert_options.h"
#include "tools/convert/exporter.h"
#include "tools/convert/input_file.h"
#include "tools/convert/inspect.h"
#include "tools/convert/progress.h"
#include "tools/convert/recompress.h"

namespace rf::convert {
namespace {

// The dataset a subcommand reads (a file, a directory of datasets, or a remote one by URL): a
// FIFO or a device named as it is refused at once (input_file.h) rather than waited on.
Result<Dataset> OpenDatasetInput(const ConvertConfig& c) {
  if (c.cache_dir.empty() != (c.cache_bytes == 0))
    return Status::Usage(c.cache_dir.empty() ? "--cache-size needs --cache-dir"
                                             : "--cache-dir needs --cache-size (a byte budget)");
  if (IsRemotePath(c.dataset)) {
    HttpFetchOptions o;
    o.ca_bundle = c.ca_bundle;
    o.deadline = std::chrono::seconds(c.remote_deadline);
    RF_ASSIGN_OR_RETURN(Dataset d, Dataset::Open(c.dataset, o));
    if (!c.cache_dir.empty()) {
      ChunkCacheOptions cache;
      cache.dir = c.cache_dir;
      cache.budget_bytes = c.cache_bytes;
      cache.claim_wait = std::chrono::seconds(c.remote_deadline);
      RF_RETURN_IF_ERROR(AttachChunkCache(&d, cache));
    }
    return d;
  }
  if (!IsDirectory(c.dataset)) RF_RETURN_IF_ERROR(CheckInputIsRegular(c.dataset));
  return Dataset::Open(c.dataset);
}

Status PrintVerify(const Dataset& d, bool quiet, std::ostream& out) {
  RF_ASSIGN_OR_RETURN(VerifyReport r, VerifyDataset(d, !quiet));
  out << "OK: " << r.chunks << " chunks, " << r.samples << " samples verified";
  if (r.compressed != 0) {
    out << " (" << r.compressed << " chunks decompressed, each to the size its index declares)";
  }
  out << "\n";
  return Status::Ok();
}

}  // namespace

Status RunExportCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kExport = {"export", kConvertExport,
                                             "DATASET --format F -o PREFIX [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kExport, args, out));
  if (!f) return Status::Ok();  // --help
  const ConvertConfig& c = f->config;
  ExportOptions o;
  o.prefix = c.output;
  o.format = c.export_options.format;
  o.layout = c.export_options.layout;
  o.label_elem = c.export_options.label_elem;
  o.memory_budget = c.memory_budget;
  o.progress = !c.quiet;
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(c));
  RF_ASSIGN_OR_RETURN(ExportSummary s, Export(d, o));
  if (!c.quiet) {
    std::string files;
    for (const std::string& p : s.paths) files += (files.empty() ? "" : ", ") + p;
    out << SummaryLine("exported " + files, s.samples, d.chunk_count(), s.bytes, s.seconds) << "\n";
  }
  return Status::Ok();
}

Status RunRecompressCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kRecompress = {"recompress", kConvertRecompress,
                                                 "DATASET -o OUT.rfd --compress CODEC [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f,
                      ReadConvertFlags(kRecompress, args, out));
  if (!f) return Status::Ok();
  const ConvertConfig& c = f->config;
  RF_RETURN_IF_ERROR(CheckWriterVersion(c.writer, OptionFace::kCommandLine));
  RecompressOptions o;
  SetCodecFlags(c, &o);
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(c));
  RF_ASSIGN_OR_RETURN(RecompressSummary s, Recompress(d, c.output, o));
  if (!c.quiet) out << RecompressReport(c.dataset, s);
  return Status::Ok();
}

Status RunInspectCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kInspect = {"inspect", kConvertInspect, "DATASET [--verify]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kInspect, args, out));
  if (!f) return Status::Ok();
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(f->config));
  out << DescribeDataset(d);
  if (f->config.verify) return PrintVerify(d, false, out);
  return Status::Ok();
}

Status RunVerifyCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kVerify = {"verify", kConvertVerify, "DATASET"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kVerify, args, out));
  if (!f) return Status::Ok();
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(f->config));
  return PrintVerify(d, f->config.quiet, out);
}

}  // namespace rf::convert
