// Command-line pieces the subcommands share: parsing with Boost.Program_options (with --help),
// the options every converting subcommand takes, and value parsers for shapes, dtypes and byte
// sizes. Every parse failure throws UsageError naming the option.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/format.h"
#include "tools/convert/converter.h"

namespace rf::convert {

namespace po = boost::program_options;

// Parses args into vm. Returns false when --help was given (the options were printed to out
// after `usage`); throws UsageError for anything Boost rejects, naming the command.
bool ParseCommandLine(const std::string& command, const std::string& usage,
                      po::options_description& options,
                      const po::positional_options_description* positional,
                      const std::vector<std::string>& args, po::variables_map& vm,
                      std::ostream& out);

// --compress, --compress-threads and --format-version: how the chunks of a dataset being written
// are stored (every converting subcommand and recompress take them).
struct CodecFlags {
  std::string compress = "none";
  uint32_t threads = 0;
  uint32_t format_version = 0;
};
void AddCodecOptions(po::options_description& options, CodecFlags& flags);
// What the writer is given (io/dataset_writer.h's WriterOptions: codec, threads, version), the
// flags checked: an unknown codec or zstd level, more than 1024 threads, a version this build
// does not write, or version 1 with a codec, throws UsageError naming the valid values.
struct CodecChoice {
  CodecSpec codec;
  uint32_t threads = 0;
  uint32_t format_version = 0;
};
CodecChoice ToCodecChoice(const CodecFlags& flags);

// The options of every converting subcommand. sample_dtype/scale are off for subcommands
// that define their own (raw's --dtype is the input's type; synthetic has no --scale).
struct CommonConvertFlags {
  std::string output;
  std::string dtype;
  std::string scale;       // empty: the default rule
  std::string chunk_size;  // empty: ConvertOptions' default (4 MiB)
  uint32_t shards = 1;
  uint32_t classes = 0;
  double test_split = 0;
  uint64_t split_seed = 0;
  std::string memory_budget = "256MiB";
  uint32_t threads = 0;  // ConvertOptions::threads
  CodecFlags codec;
  bool quiet = false;
};
void AddCommonConvertOptions(po::options_description& options, CommonConvertFlags& flags,
                             bool with_dtype, bool with_scale);
// The largest --chunk-size: a chunk is read whole into one ring slot (and the writer keeps three
// chunks in memory), so a size a user gives is bounded before anything is sized from it.
inline constexpr uint64_t kMaxChunkBytes = format::kMaxChunkTarget;

// Which dtypes a flag takes: any sample dtype, the intensity ones alone (core/dtype.h's
// IsImageDType: what a generator of images makes), or a label dtype.
enum class DTypeKind { kSample, kImage, kLabel };

// Checks the common flags and builds the converter's options.
ConvertOptions ToConvertOptions(const CommonConvertFlags& flags, const std::string& dtype_flag,
                                DTypeKind dtype_kind = DTypeKind::kSample);

// A sample shape: 1 to 4 comma-separated positive dims ("2048", "3,32,32").
std::vector<uint64_t> ParseShape(const std::string& flag, const std::string& text);
// An image shape, exactly "C,H,W".
struct ShapeFlag {
  uint32_t channels = 0, height = 0, width = 0;
};
ShapeFlag ParseImageShape(const std::string& flag, const std::string& text);
DType ParseDTypeFlag(const std::string& flag, const std::string& text, DTypeKind kind);
uint64_t ParseSizeFlag(const std::string& flag, const std::string& text);

// The report line of a finished conversion, and the file list.
void PrintConvertSummary(const ConvertSummary& s, bool quiet, std::ostream& out);

}  // namespace rf::convert
