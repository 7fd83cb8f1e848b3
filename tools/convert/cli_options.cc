#include "tools/convert/cli_options.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/units.h"
#include "io/format.h"
#include "options/option_spec.h"
#include "options/unsigned_flags.h"
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
    const po::parsed_options given = parser.run();
    if (auto negative = NegativeUnsignedFlag(given, options)) {
      throw UsageError(command + ": " + *negative);
    }
    po::store(given, vm);
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

void AddCodecOptions(po::options_description& options, CodecFlags& f) {
  auto add = options.add_options();
  add("compress", po::value(&f.compress)->default_value(f.compress),
      "each chunk's codec: none, lz4, zstd (level 3) or zstd:LEVEL (1 to 22); a chunk that does "
      "not shrink is stored raw. Any codec writes format version 2 (3 for records of any size)");
  add("compress-threads", po::value(&f.threads)->default_value(f.threads),
      "threads that compress (0: one per core, at most 16)");
  add("format-version", po::value(&f.format_version)->default_value(f.format_version),
      "1, 2 or 3 (0: 1 without a codec, so any ringfeed reads it; 2 with one; 3 for records of "
      "any size, whose index gives each chunk's record bytes)");
}

CodecChoice ToCodecChoice(const CodecFlags& f) {
  Result<CodecSpec> codec = ParseCodec(f.compress);
  if (!codec.ok()) {
    // One line naming every valid value, whatever was wrong (an unknown name, a level out of
    // range, a level given to lz4), with the text quoted safely.
    throw UsageError("--compress must be none, lz4, zstd or zstd:LEVEL with LEVEL 1 to " +
                     std::to_string(MaxZstdLevel()) + ", not " + QuoteUserText(f.compress));
  }
  if (f.threads > 1024) throw UsageError("--compress-threads: at most 1024");
  if (f.format_version > format::kVersion) {
    throw UsageError("--format-version must be 1, 2 or 3 (0: by the codec and the records), not " +
                     std::to_string(f.format_version));
  }
  if (f.format_version == 1 && codec->codec != Codec::kNone) {
    throw UsageError("--format-version 1 has no compression: --compress " + CodecText(*codec) +
                     " needs version 2");
  }
  return {*codec, f.threads, f.format_version};
}

void AddCommonConvertOptions(po::options_description& options, CommonConvertFlags& f,
                             bool with_dtype, bool with_scale) {
  auto add = options.add_options();
  add("output,o", po::value(&f.output)->required(), "the dataset to write (OUT.rfd)");
  if (with_dtype) {
    add("dtype", po::value(&f.dtype),
        "stored sample dtype: uint8, float16, bfloat16, float32 (intensities), or uint16, int32, "
        "int64 (ids such as token ids: integer input only, stored exactly) (default: the input's "
        "own where it is one of these, int64 for uint32/uint64 input, else float32)");
  }
  if (with_scale) {
    add("scale", po::value(&f.scale),
        "stored = input * scale, a finite number > 0 (default: 255 when float input is stored as "
        "uint8, else 1); uint8 rounds to nearest and clamps to 0..255");
  }
  add("chunk-size", po::value(&f.chunk_size)->default_value(f.chunk_size, "4MiB"),
      "target stored chunk size (suffixes KiB, MiB, GiB): from 4KiB to 1GiB, and at least one "
      "sample with its label (by default, a sample larger than 4MiB makes chunks of one "
      "sample)");
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
      "memory for the blocks of samples in flight (up to four)");
  add("threads", po::value(&f.threads)->default_value(f.threads),
      "threads that decode, transpose, convert and sum samples (0: the CPUs this process may "
      "run on); the output is the same for any count");
  AddCodecOptions(options, f.codec);
  add("quiet,q", po::bool_switch(&f.quiet), "no progress bar and no summary line");
}

ConvertOptions ToConvertOptions(const CommonConvertFlags& f, const std::string& dtype_flag,
                                DTypeKind dtype_kind) {
  ConvertOptions o;
  if (!f.dtype.empty()) o.sample_dtype = ParseDTypeFlag(dtype_flag, f.dtype, dtype_kind);
  if (!f.scale.empty()) {
    // Decimal digits only (strtod would take hex, inf and nan); a scale of 0, a negative or a
    // non-finite one would write every sample as 0 or NaN.
    char* end = nullptr;
    const double v = std::strtod(f.scale.c_str(), &end);
    if (f.scale.find_first_not_of("0123456789.eE+-") != std::string::npos ||
        end != f.scale.c_str() + f.scale.size() || !std::isfinite(v) || !(v > 0) ||
        v > std::numeric_limits<float>::max()) {
      throw UsageError("--scale must be a finite number > 0, not " + QuoteUserText(f.scale));
    }
    o.scale = static_cast<float>(v);
  }
  if (!f.chunk_size.empty()) {
    o.chunk_bytes = ParseSizeFlag("--chunk-size", f.chunk_size);
    // Chunks are stored in 4 KiB blocks: a smaller target only makes every chunk one block of
    // mostly padding (--chunk-size 1 made a chunk per sample).
    if (*o.chunk_bytes < format::kAlign || *o.chunk_bytes > kMaxChunkBytes) {
      throw UsageError(
          "--chunk-size must be from 4KiB (chunks are stored in 4096-byte blocks) to 1GiB (a "
          "chunk is read whole into one ring slot), not " +
          QuoteUserText(f.chunk_size));
    }
  }
  if (f.shards == 0 || f.shards > 99999) throw UsageError("--shards must be 1 to 99999");
  o.shards = f.shards;
  o.num_classes = f.classes;
  if (!(f.test_split >= 0 && f.test_split < 1)) {
    throw UsageError("--test-split must be in [0, 1), not " + std::to_string(f.test_split));
  }
  o.test_fraction = f.test_split;
  o.split_seed = f.split_seed;
  o.memory_budget = ParseSizeFlag("--memory-budget", f.memory_budget);
  if (f.threads > 1024)
    throw UsageError("--threads " + std::to_string(f.threads) + ": at most 1024");
  o.threads = f.threads;
  const CodecChoice codec = ToCodecChoice(f.codec);
  o.codec = codec.codec;
  o.compress_threads = codec.threads;
  o.format_version = codec.format_version;
  o.progress = !f.quiet;
  return o;
}

namespace {

// 1 to 4 comma-separated positive integers of at most 9 digits (every dim below 2^32; the
// product is checked where the dtype is known), or nothing.
std::optional<std::vector<uint64_t>> SplitDims(const std::string& text) {
  std::vector<uint64_t> dims;
  if (text.empty() || text.back() == ',') return std::nullopt;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (dims.size() == 4 || item.empty() || item.size() > 9 ||
        item.find_first_not_of("0123456789") != std::string::npos || std::stoul(item) == 0) {
      return std::nullopt;
    }
    dims.push_back(std::stoul(item));
  }
  return dims;
}

}  // namespace

std::vector<uint64_t> ParseShape(const std::string& flag, const std::string& text) {
  std::optional<std::vector<uint64_t>> d = SplitDims(text);
  if (!d) {
    throw UsageError(flag + " must be 1 to 4 comma-separated positive integers (C,H,W for an " +
                     "image), not '" + text + "'");
  }
  return *d;
}

ShapeFlag ParseImageShape(const std::string& flag, const std::string& text) {
  std::optional<std::vector<uint64_t>> d = SplitDims(text);
  if (!d || d->size() != 3) {
    throw UsageError(flag + " must be C,H,W with positive integers, not '" + text + "'");
  }
  const auto dim = [&](size_t i) { return static_cast<uint32_t>((*d)[i]); };
  return {dim(0), dim(1), dim(2)};
}

DType ParseDTypeFlag(const std::string& flag, const std::string& text, DTypeKind kind) {
  const std::optional<DType> t = ParseDType(text);
  switch (kind) {
    case DTypeKind::kSample:
      if (!t || !IsSampleDType(*t)) {
        throw UsageError(flag + " must be uint8, uint16, int32, int64, float16, bfloat16 or " +
                         "float32, not '" + text + "'");
      }
      break;
    case DTypeKind::kImage:
      if (!t || !IsImageDType(*t)) {
        throw UsageError(flag + " must be uint8, float16, bfloat16 or float32, not '" + text + "'");
      }
      break;
    case DTypeKind::kLabel:
      if (!t || !IsLabelDType(*t)) {
        throw UsageError(flag + " must be uint8, uint16 or int32, not '" + text + "'");
      }
      break;
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
  for (const std::string& f : s.removed)
    out << "removed " << f << " (an older dataset of the same name)\n";
}

}  // namespace rf::convert
