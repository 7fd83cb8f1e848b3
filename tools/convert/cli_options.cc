#include "tools/convert/cli_options.h"

#include <sstream>

#include "io/units.h"
#include "tools/convert/commands.h"
#include "tools/convert/progress.h"

namespace rf::convert {

bool ParseCommandLine(const std::string& command, const std::string& usage,
                      po::options_description& options,
                      const po::positional_options_description* positional,
                      const std::vector<std::string>& args, po::variables_map& vm,
                      std::ostream& out) {
  options.add_options()("help,h", "print this help");
  try {
    po::command_line_parser parser(args);
    parser.options(options);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      out << "Usage: ringfeed-convert " << command << " " << usage << "\n" << options;
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what() + " (try 'ringfeed-convert " + command +
                     " --help')");
  }
  return true;
}

void AddCommonConvertOptions(po::options_description& options, CommonConvertFlags& f,
                             bool with_dtype, bool with_scale) {
  auto add = options.add_options();
  add("output,o", po::value(&f.output)->required(), "the dataset to write (OUT.rfd)");
  if (with_dtype) {
    add("dtype", po::value(&f.dtype),
        "stored sample dtype: uint8, float16, bfloat16 or float32 (default: the input's own "
        "where it is one of these, else float32)");
  }
  if (with_scale) {
    add("scale", po::value(&f.scale),
        "stored = input * scale (default: 255 when float input is stored as uint8, else 1); "
        "uint8 rounds to nearest and clamps to 0..255");
  }
  add("chunk-size", po::value(&f.chunk_size)->default_value(f.chunk_size),
      "target stored chunk size (suffixes KiB, MiB, GiB)");
  add("shards", po::value(&f.shards)->default_value(f.shards), "number of shard files");
  add("classes", po::value(&f.classes)->default_value(f.classes),
      "number of classes; every label must be below it (0: known from the format, or one more "
      "than the largest label)");
  add("test-split", po::value(&f.test_split)->default_value(f.test_split),
      "fraction of samples written to a second dataset, OUT with .rfd replaced by .test.rfd; "
      "a sample goes there by a seeded hash of its index");
  add("split-seed", po::value(&f.split_seed)->default_value(f.split_seed),
      "seed of the test-split hash");
  add("memory-budget", po::value(&f.memory_budget)->default_value(f.memory_budget),
      "memory for the block of samples being converted");
  add("quiet,q", po::bool_switch(&f.quiet), "no progress bar and no summary line");
}

ConvertOptions ToConvertOptions(const CommonConvertFlags& f, const std::string& dtype_flag) {
  ConvertOptions o;
  if (!f.dtype.empty()) o.sample_dtype = ParseDTypeFlag(dtype_flag, f.dtype, true);
  if (f.scale != 0) o.scale = f.scale;
  o.chunk_bytes = ParseSizeFlag("--chunk-size", f.chunk_size);
  if (o.chunk_bytes == 0) throw UsageError("--chunk-size must be positive");
  if (f.shards == 0 || f.shards > 99999) throw UsageError("--shards must be 1 to 99999");
  o.shards = f.shards;
  o.num_classes = f.classes;
  if (!(f.test_split >= 0 && f.test_split < 1)) {
    throw UsageError("--test-split must be in [0, 1), not " + std::to_string(f.test_split));
  }
  o.test_fraction = f.test_split;
  o.split_seed = f.split_seed;
  o.memory_budget = ParseSizeFlag("--memory-budget", f.memory_budget);
  o.progress = !f.quiet;
  return o;
}

ShapeFlag ParseShape(const std::string& flag, const std::string& text) {
  ShapeFlag s;
  uint32_t* parts[3] = {&s.channels, &s.height, &s.width};
  std::istringstream in(text);
  std::string item;
  int n = 0;
  while (std::getline(in, item, ',')) {
    if (n == 3 || item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 9 || std::stoul(item) == 0) {
      n = 4;
      break;
    }
    *parts[n++] = static_cast<uint32_t>(std::stoul(item));
  }
  if (n != 3) throw UsageError(flag + " must be C,H,W with positive integers, not '" + text + "'");
  return s;
}

DType ParseDTypeFlag(const std::string& flag, const std::string& text, bool sample) {
  std::optional<DType> t = ParseDType(text);
  if (sample && (!t || !IsSampleDType(*t))) {
    throw UsageError(flag + " must be uint8, float16, bfloat16 or float32, not '" + text + "'");
  }
  if (!sample && (!t || !IsLabelDType(*t))) {
    throw UsageError(flag + " must be uint8, uint16 or int32, not '" + text + "'");
  }
  return *t;
}

uint64_t ParseSizeFlag(const std::string& flag, const std::string& text) {
  Result<uint64_t> v = ParseByteSize(text);
  if (!v.ok()) throw UsageError(flag + ": " + v.status().message());
  return *v;
}

void PrintConvertSummary(const ConvertSummary& s, bool quiet, std::ostream& out) {
  if (quiet) return;
  std::string what = "wrote " + s.paths.front();
  if (s.test_samples > 0) {
    what += " (" + std::to_string(s.samples) + " train, " + std::to_string(s.test_samples) +
            " test samples)";
  }
  out << SummaryLine(what, s.samples + s.test_samples, s.chunks, s.bytes, s.seconds) << "\n";
}

}  // namespace rf::convert
