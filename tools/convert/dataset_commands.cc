// The subcommands that read a dataset: export, recompress, inspect, verify.
#include "io/dataset.h"
#include "tools/convert/cli_options.h"
#include "tools/convert/commands.h"
#include "tools/convert/exporter.h"
#include "tools/convert/input_file.h"
#include "tools/convert/inspect.h"
#include "tools/convert/recompress.h"

namespace rf::convert {
namespace {

// The dataset a subcommand reads (a file, or a directory of datasets): a FIFO or a device named
// as it is refused at once (input_file.h) rather than waited on.
Result<Dataset> OpenDatasetInput(const std::string& path) {
  if (!IsDirectory(path)) RF_RETURN_IF_ERROR(CheckInputIsRegular(path));
  return Dataset::Open(path);
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
  std::string dataset, format, prefix, layout = "auto", label_dtype, budget = "256MiB";
  bool quiet = false;
  po::options_description desc("export options");
  desc.add_options()("dataset", po::value(&dataset)->required(), "the dataset (positional)")(
      "format", po::value(&format)->required(),
      "raw, idx, cifar, npy or predecessor (fixed-shape samples), or megatron (token records: "
      "PREFIX.bin + PREFIX.idx)")("output,o", po::value(&prefix)->required(),
                                  "output prefix (PREFIX.records, ...)")(
      "layout", po::value(&layout)->default_value(layout),
      "raw/idx/npy sample layout: nchw, nhwc, nhw (C = 1), or auto (npy: the stored shape, a "
      "channel of 1 kept; raw and idx: nhw for one channel, else nchw)")(
      "label-dtype", po::value(&label_dtype),
      "raw/npy label type: uint8, uint16, int32 or int64 (default: the stored one)")(
      "memory-budget", po::value(&budget)->default_value(budget),
      "memory for the predecessor export's block of samples")(
      "quiet,q", po::bool_switch(&quiet), "no progress bar and no summary line");
  po::positional_options_description pos;
  pos.add("dataset", 1);
  po::variables_map vm;
  if (!ParseCommandLine("export", "DATASET --format F -o PREFIX [options]", desc, &pos, args, vm,
                        out)) {
    return Status::Ok();
  }
  ExportOptions o;
  o.prefix = prefix;
  const std::optional<ExportFormat> f = ParseExportFormat(format);
  if (!f)
    throw UsageError("--format must be raw, idx, cifar, npy, predecessor or megatron, not '" +
                     format + "'");
  o.format = *f;
  const std::optional<ExportLayout> l = ParseExportLayout(layout);
  if (!l) throw UsageError("--layout must be auto, nchw, nhwc or nhw, not '" + layout + "'");
  o.layout = *l;
  if (!label_dtype.empty()) {
    if (label_dtype == "uint8") o.label_elem = Elem::kU8;
    if (label_dtype == "uint16") o.label_elem = Elem::kU16;
    if (label_dtype == "int32") o.label_elem = Elem::kI32;
    if (label_dtype == "int64") o.label_elem = Elem::kI64;
    if (!o.label_elem) {
      throw UsageError("--label-dtype must be uint8, uint16, int32 or int64, not '" + label_dtype +
                       "'");
    }
  }
  o.memory_budget = ParseSizeFlag("--memory-budget", budget);
  o.progress = !quiet;
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(dataset));
  RF_ASSIGN_OR_RETURN(ExportSummary s, Export(d, o));
  if (!quiet) {
    std::string files;
    for (const std::string& p : s.paths) files += (files.empty() ? "" : ", ") + p;
    out << SummaryLine("exported " + files, s.samples, d.chunk_count(), s.bytes, s.seconds) << "\n";
  }
  return Status::Ok();
}

Status RunRecompressCommand(const std::vector<std::string>& args, std::ostream& out) {
  std::string dataset, output;
  CodecFlags codec;
  bool quiet = false;
  po::options_description desc("recompress options");
  desc.add_options()("dataset", po::value(&dataset)->required(), "the dataset (positional)")(
      "output,o", po::value(&output)->required(),
      "the dataset to write (OUT.rfd), in as many shards as the input");
  AddCodecOptions(desc, codec);
  desc.add_options()("quiet,q", po::bool_switch(&quiet), "no progress bar and no summary line");
  po::positional_options_description pos;
  pos.add("dataset", 1);
  po::variables_map vm;
  if (!ParseCommandLine("recompress", "DATASET -o OUT.rfd --compress CODEC [options]", desc, &pos,
                        args, vm, out)) {
    return Status::Ok();
  }
  const CodecChoice c = ToCodecChoice(codec);
  RecompressOptions o;
  o.codec = c.codec;
  o.compress_threads = c.threads;
  o.format_version = c.format_version;
  o.progress = !quiet;
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(dataset));
  RF_ASSIGN_OR_RETURN(RecompressSummary s, Recompress(d, output, o));
  if (!quiet) out << RecompressReport(dataset, s);
  return Status::Ok();
}

Status RunInspectCommand(const std::vector<std::string>& args, std::ostream& out) {
  std::string dataset;
  bool verify = false;
  po::options_description desc("inspect options");
  desc.add_options()("dataset", po::value(&dataset)->required(), "the dataset (positional)")(
      "verify", po::bool_switch(&verify),
      "also read every chunk and check its checksum (and decompress it where it is compressed)");
  po::positional_options_description pos;
  pos.add("dataset", 1);
  po::variables_map vm;
  if (!ParseCommandLine("inspect", "DATASET [--verify]", desc, &pos, args, vm, out)) {
    return Status::Ok();
  }
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(dataset));
  out << DescribeDataset(d);
  if (verify) return PrintVerify(d, false, out);
  return Status::Ok();
}

Status RunVerifyCommand(const std::vector<std::string>& args, std::ostream& out) {
  std::string dataset;
  bool quiet = false;
  po::options_description desc("verify options");
  desc.add_options()("dataset", po::value(&dataset)->required(), "the dataset (positional)")(
      "quiet,q", po::bool_switch(&quiet), "no progress bar");
  po::positional_options_description pos;
  pos.add("dataset", 1);
  po::variables_map vm;
  if (!ParseCommandLine("verify", "DATASET", desc, &pos, args, vm, out)) return Status::Ok();
  RF_ASSIGN_OR_RETURN(Dataset d, OpenDatasetInput(dataset));
  return PrintVerify(d, quiet, out);
}

}  // namespace rf::convert
