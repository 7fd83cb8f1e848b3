// The converting subcommands: idx, cifar, npy, raw, predecessor, synthetic.

#include "tools/convert/cifar_input.h"
#include "tools/convert/commands.h"
#include "tools/convert/convert_options.h"
#include "tools/convert/converter.h"
#include "tools/convert/idx_input.h"
#include "tools/convert/input_file.h"
#include "tools/convert/npy_input.h"
#include "tools/convert/predecessor_input.h"
#include "tools/convert/progress.h"
#include "tools/convert/raw_input.h"
#include "tools/convert/synthetic_input.h"

namespace rf::convert {
namespace {

// The converter's options the flags ask for, the samples stored as `stored` (unset: the input's
// own rule).
Result<ConvertOptions> ToConvertOptions(const ConvertFlags& f, std::optional<DType> stored) {
  const ConvertConfig& c = f.config;
  RF_RETURN_IF_ERROR(CheckWriterVersion(c.writer, OptionFace::kCommandLine));
  ConvertOptions o;
  o.sample_dtype = stored;
  if (f.given.count("scale") != 0) o.scale = c.scale;
  // Given, a chunk size must hold one sample; by default a larger sample makes its own chunks.
  if (f.given.count("chunk-size") != 0) o.chunk_bytes = c.writer.options.chunk_bytes;
  o.shards = c.writer.options.shards;
  o.num_classes = c.writer.spec.num_classes;
  o.test_fraction = c.test_split;
  o.split_seed = c.split_seed;
  o.memory_budget = c.memory_budget;
  o.threads = c.threads;
  SetCodecFlags(c, &o);
  return o;
}

// The report line of a finished conversion, and the files it replaced.
void PrintConvertSummary(const ConvertSummary& s, bool quiet, std::ostream& out) {
  if (quiet) return;
  std::string what = "wrote " + s.paths.front();
  if (s.test_samples > 0) {
    what += " (" + std::to_string(s.samples) + " train, " + std::to_string(s.test_samples) +
            " test samples)";
  }
  out << SummaryLine(what, s.samples + s.test_samples, s.chunks, s.bytes, s.seconds) << "\n";
  for (const std::string& f : s.removed)
    out << "removed " << f << " (an older dataset of the same name)\n";
}

Status ConvertAndReport(Result<std::unique_ptr<SampleSource>> source, const ConvertFlags& f,
                        const ConvertOptions& o, std::ostream& out) {
  if (!source.ok()) return source.status();
  RF_ASSIGN_OR_RETURN(ConvertSummary s, Convert(**source, f.config.output, o));
  PrintConvertSummary(s, f.config.quiet, out);
  return Status::Ok();
}

}  // namespace

Status RunIdxCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kIdx = {"idx", kConvertIdx,
                                          "--images F [--labels F] -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kIdx, args, out));
  if (!f) return Status::Ok();  // --help
  const ConvertConfig& c = f->config;
  RF_ASSIGN_OR_RETURN(const ConvertOptions o, ToConvertOptions(*f, c.dtype));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({c.images, c.labels}));
  return ConvertAndReport(OpenIdxSource(c.images, c.labels), *f, o, out);
}

Status RunCifarCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kCifar = {"cifar", kConvertCifar, "FILE... -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kCifar, args, out));
  if (!f) return Status::Ok();
  const ConvertConfig& c = f->config;
  RF_ASSIGN_OR_RETURN(const ConvertOptions o, ToConvertOptions(*f, c.dtype));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular(c.inputs));
  return ConvertAndReport(OpenCifarSource(c.inputs, c.cifar100), *f, o, out);
}

Status RunNpyCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kNpy = {"npy", kConvertNpy,
                                          "--images X.npy [--labels Y.npy] -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kNpy, args, out));
  if (!f) return Status::Ok();
  const ConvertConfig& c = f->config;
  RF_ASSIGN_OR_RETURN(const ConvertOptions o, ToConvertOptions(*f, c.dtype));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({c.images, c.labels}));
  return ConvertAndReport(OpenNpySource(c.images, c.labels, c.nhwc), *f, o, out);
}

Status RunRawCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kRaw = {
      "raw", kConvertRaw, "--records F --shape D1[,D2...] [--dtype T] -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kRaw, args, out));
  if (!f) return Status::Ok();
  const ConvertConfig& c = f->config;
  RawOptions r;
  r.records_path = c.raw.records;
  r.shape = c.raw.shape;
  r.elem = ElemOf(c.raw.dtype);
  r.label_dtype = c.writer.spec.label_dtype;
  // --label's rule took first, last, none or file:PATH.
  if (c.raw.label == "first") {
    r.labels = RawOptions::Labels::kFirst;
  } else if (c.raw.label == "last") {
    r.labels = RawOptions::Labels::kLast;
  } else if (c.raw.label == "none") {
    r.labels = RawOptions::Labels::kNone;
  } else {
    r.labels = RawOptions::Labels::kFile;
    r.labels_path = c.raw.label.substr(5);
  }
  r.header_bytes = c.raw.header_bytes;
  // The records' own dtype is stored unless --out-dtype names another.
  RF_ASSIGN_OR_RETURN(const ConvertOptions o,
                      ToConvertOptions(*f, c.dtype ? c.dtype : std::optional(c.raw.dtype)));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({r.records_path, r.labels_path}));
  return ConvertAndReport(OpenRawSource(r), *f, o, out);
}

Status RunPredecessorCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kPredecessor = {
      "predecessor", kConvertPredecessor,
      "--images F --labels F --shape C,H,W -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f,
                      ReadConvertFlags(kPredecessor, args, out));
  if (!f) return Status::Ok();
  const ConvertConfig& c = f->config;
  RF_ASSIGN_OR_RETURN(const ConvertOptions o, ToConvertOptions(*f, c.dtype));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({c.images, c.labels}));
  const auto dim = [&](size_t i) { return static_cast<uint32_t>(c.image_shape[i]); };
  return ConvertAndReport(OpenPredecessorSource(c.images, c.labels, dim(0), dim(1), dim(2)), *f, o,
                          out);
}

Status RunSyntheticCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kSynthetic = {
      "synthetic", kConvertSynthetic, "--samples N [--shape C,H,W] [--classes K] -o OUT.rfd"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kSynthetic, args, out));
  if (!f) return Status::Ok();
  const ConvertConfig& c = f->config;
  RF_ASSIGN_OR_RETURN(ConvertOptions o, ToConvertOptions(*f, c.synthetic.dtype));
  o.num_classes = c.synthetic.classes;
  SyntheticOptions so;
  so.samples = c.synthetic.samples;
  so.channels = static_cast<uint32_t>(c.image_shape[0]);
  so.height = static_cast<uint32_t>(c.image_shape[1]);
  so.width = static_cast<uint32_t>(c.image_shape[2]);
  so.seed = c.synthetic.seed;
  so.threads = c.threads;  // generator threads too (0: one per hardware thread)
  so.classes = c.synthetic.classes;
  so.sorted = c.synthetic.sorted;
  so.dtype = c.synthetic.dtype;
  o.progress_label = "generating";
  o.dataset_id = SyntheticDatasetId(so);
  return ConvertAndReport(MakeSyntheticSource(so), *f, o, out);
}

}  // namespace rf::convert
