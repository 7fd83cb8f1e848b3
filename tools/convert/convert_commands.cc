// The converting subcommands: idx, cifar, npy, raw, predecessor, synthetic.

#include "tools/convert/cifar_input.h"
#include "tools/convert/cli_options.h"
#include "tools/convert/commands.h"
#include "tools/convert/converter.h"
#include "tools/convert/idx_input.h"
#include "tools/convert/input_file.h"
#include "tools/convert/npy_input.h"
#include "tools/convert/predecessor_input.h"
#include "tools/convert/raw_input.h"
#include "tools/convert/synthetic_input.h"

namespace rf::convert {
namespace {

Status ConvertAndReport(Result<std::unique_ptr<SampleSource>> source, const CommonConvertFlags& f,
                        const ConvertOptions& o, std::ostream& out) {
  if (!source.ok()) return source.status();
  RF_ASSIGN_OR_RETURN(ConvertSummary s, Convert(**source, f.output, o));
  PrintConvertSummary(s, f.quiet, out);
  return Status::Ok();
}

}  // namespace

Status RunIdxCommand(const std::vector<std::string>& args, std::ostream& out) {
  CommonConvertFlags f;
  std::string images, labels;
  po::options_description desc("idx options");
  desc.add_options()("images", po::value(&images)->required(),
                     "IDX images file (N,H,W or N,C,H,W; plain or gzipped)")(
      "labels", po::value(&labels), "IDX labels file (N); without it the dataset has no labels");
  AddCommonConvertOptions(desc, f, true, true);
  po::variables_map vm;
  if (!ParseCommandLine("idx", "--images F [--labels F] -o OUT.rfd [options]", desc, nullptr, args,
                        vm, out)) {
    return Status::Ok();
  }
  const ConvertOptions o = ToConvertOptions(f, "--dtype");
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({images, labels}));
  return ConvertAndReport(OpenIdxSource(images, labels), f, o, out);
}

Status RunCifarCommand(const std::vector<std::string>& args, std::ostream& out) {
  CommonConvertFlags f;
  std::vector<std::string> files;
  bool cifar100 = false;
  po::options_description desc("cifar options");
  desc.add_options()("input", po::value(&files)->required()->multitoken(),
                     "CIFAR binary batch files (positional; several make one dataset)")(
      "cifar100", po::bool_switch(&cifar100),
      "CIFAR-100 records (coarse and fine label bytes; the fine label is kept)");
  AddCommonConvertOptions(desc, f, true, true);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!ParseCommandLine("cifar", "FILE... -o OUT.rfd [options]", desc, &pos, args, vm, out)) {
    return Status::Ok();
  }
  const ConvertOptions o = ToConvertOptions(f, "--dtype");
  RF_RETURN_IF_ERROR(CheckInputsAreRegular(files));
  return ConvertAndReport(OpenCifarSource(files, cifar100), f, o, out);
}

Status RunNpyCommand(const std::vector<std::string>& args, std::ostream& out) {
  CommonConvertFlags f;
  std::string images, labels, layout = "nchw";
  po::options_description desc("npy options");
  desc.add_options()("images", po::value(&images)->required(),
                     "samples .npy of shape (N, d1, ..., dk), k = 1 to 4, kept as the sample "
                     "shape ((N,C,H,W) images, (N,2048) token rows), or (N,H,W,C) with --layout "
                     "nhwc")("labels", po::value(&labels),
                             "labels .npy: (N,) integers; without it the dataset has no labels")(
      "layout", po::value(&layout)->default_value(layout),
      "nchw (samples as they are), or nhwc: (N,H,W,C) images transposed to C,H,W per sample");
  AddCommonConvertOptions(desc, f, true, true);
  po::variables_map vm;
  if (!ParseCommandLine("npy", "--images X.npy [--labels Y.npy] -o OUT.rfd [options]", desc,
                        nullptr, args, vm, out)) {
    return Status::Ok();
  }
  if (layout != "nchw" && layout != "nhwc") {
    throw UsageError("--layout must be nchw or nhwc, not '" + layout + "'");
  }
  const ConvertOptions o = ToConvertOptions(f, "--dtype");
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({images, labels}));
  return ConvertAndReport(OpenNpySource(images, labels, layout == "nhwc"), f, o, out);
}

Status RunRawCommand(const std::vector<std::string>& args, std::ostream& out) {
  CommonConvertFlags f;
  std::string records, shape, dtype = "uint8", label_dtype = "uint8", label = "first";
  uint64_t header_bytes = 0;
  po::options_description desc("raw options");
  desc.add_options()("records", po::value(&records)->required(), "the records file")(
      "shape", po::value(&shape)->required(),
      "sample shape: 1 to 4 comma-separated dims (C,H,W for an image, 2048 for a token row)")(
      "dtype", po::value(&dtype)->default_value(dtype),
      "element type in the records: uint8, uint16, int32, int64, float16, bfloat16 or float32")(
      "label-dtype", po::value(&label_dtype)->default_value(label_dtype),
      "label type: uint8, uint16 or int32 (also the stored label dtype)")(
      "label", po::value(&label)->default_value(label),
      "where labels are: first or last in each record, none (the dataset has no labels), or "
      "file:PATH (a file of N labels)")("header-bytes", po::value(&header_bytes)->default_value(0),
                                        "bytes to skip at the start of the records file");
  AddCommonConvertOptions(desc, f, false, true);
  desc.add_options()("out-dtype", po::value(&f.dtype),
                     "stored sample dtype (default: --dtype): uint8, uint16, int32, int64, "
                     "float16, bfloat16, float32");
  po::variables_map vm;
  if (!ParseCommandLine("raw", "--records F --shape D1[,D2...] [--dtype T] -o OUT.rfd [options]",
                        desc, nullptr, args, vm, out)) {
    return Status::Ok();
  }
  RawOptions r;
  r.records_path = records;
  r.shape = ParseShape("--shape", shape);
  r.elem = ElemOf(ParseDTypeFlag("--dtype", dtype, DTypeKind::kSample));
  r.label_dtype = ParseDTypeFlag("--label-dtype", label_dtype, DTypeKind::kLabel);
  if (label == "first") {
    r.labels = RawOptions::Labels::kFirst;
  } else if (label == "last") {
    r.labels = RawOptions::Labels::kLast;
  } else if (label == "none") {
    r.labels = RawOptions::Labels::kNone;
  } else if (label.starts_with("file:") && label.size() > 5) {
    r.labels = RawOptions::Labels::kFile;
    r.labels_path = label.substr(5);
  } else {
    throw UsageError("--label must be first, last, none or file:PATH, not '" + label + "'");
  }
  r.header_bytes = header_bytes;
  const ConvertOptions o = ToConvertOptions(f, "--out-dtype");
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({r.records_path, r.labels_path}));
  return ConvertAndReport(OpenRawSource(r), f, o, out);
}

Status RunPredecessorCommand(const std::vector<std::string>& args, std::ostream& out) {
  CommonConvertFlags f;
  std::string images, labels, shape = "3,32,32";
  po::options_description desc("predecessor options");
  desc.add_options()("images", po::value(&images)->required(),
                     "images_train.bin: float32, feature-major (feature f of sample s at f*N+s)")(
      "labels", po::value(&labels)->required(), "labels_train.bin: N int32 labels, 0-based")(
      "shape", po::value(&shape)->default_value(shape), "sample shape C,H,W");
  AddCommonConvertOptions(desc, f, true, true);
  po::variables_map vm;
  if (!ParseCommandLine("predecessor", "--images F --labels F --shape C,H,W -o OUT.rfd [options]",
                        desc, nullptr, args, vm, out)) {
    return Status::Ok();
  }
  const ShapeFlag s = ParseImageShape("--shape", shape);
  const ConvertOptions o = ToConvertOptions(f, "--dtype");
  RF_RETURN_IF_ERROR(CheckInputsAreRegular({images, labels}));
  return ConvertAndReport(OpenPredecessorSource(images, labels, s.channels, s.height, s.width), f,
                          o, out);
}

Status RunSyntheticCommand(const std::vector<std::string>& args, std::ostream& out) {
  CommonConvertFlags f;
  f.classes = 10;
  f.dtype = "uint8";
  SyntheticOptions so;
  std::string shape = "3,32,32", order = "random";
  po::options_description desc("synthetic options");
  desc.add_options()("samples", po::value(&so.samples)->required(), "number of samples")(
      "shape", po::value(&shape)->default_value(shape), "sample shape C,H,W")(
      "seed", po::value(&so.seed)->default_value(0), "the output is a function of the seed alone")(
      "order", po::value(&order)->default_value(order),
      "labels: random per sample, or sorted (the dataset ordered by label)");
  AddCommonConvertOptions(desc, f, false, false);
  desc.add_options()("dtype", po::value(&f.dtype)->default_value(f.dtype),
                     "stored sample dtype: uint8, float16, bfloat16 or float32");
  po::variables_map vm;
  if (!ParseCommandLine("synthetic", "--samples N [--shape C,H,W] [--classes K] -o OUT.rfd", desc,
                        nullptr, args, vm, out)) {
    return Status::Ok();
  }
  ConvertOptions o = ToConvertOptions(f, "--dtype", DTypeKind::kImage);
  const ShapeFlag s = ParseImageShape("--shape", shape);
  so.channels = s.channels;
  so.height = s.height;
  so.width = s.width;
  if (f.classes < 2) throw UsageError("--classes must be at least 2 for synthetic data");
  if (so.samples == 0) throw UsageError("--samples must be at least 1");
  so.threads = f.threads;  // generator threads too (0: one per hardware thread)
  if (order != "random" && order != "sorted") {
    throw UsageError("--order must be random or sorted, not '" + order + "'");
  }
  so.classes = f.classes;
  so.sorted = order == "sorted";
  so.dtype = *o.sample_dtype;
  o.progress_label = "generating";
  o.dataset_id = SyntheticDatasetId(so);
  return ConvertAndReport(MakeSyntheticSource(so), f, o, out);
}

}  // namespace rf::convert
