// ringfeed-convert's options, declared once (options/option_table.h): each with its type, default,
// bounds, help and the subcommands that take it (options/option_spec.h's kConvert* bits). The
// writer's flags (--chunk-size, --shards, --compress, --compress-threads, --format-version,
// --max-record-size, --classes, raw's --label-dtype) are io/writer_options.h's, included, so
// ringfeed.DatasetWriter takes them by the same declarations. A name that means another thing to
// another subcommand (--dtype: the samples', the token ids', synthetic's; --memory-budget: sample
// blocks or token ids) is declared once for each meaning, with the subcommands of that meaning.
//
// Every subcommand reads its command line through ReadConvertFlags: parsed by the tables' parser
// (options/command_line.h), each value checked against its declaration and set through the table,
// an option given that does nothing refused, and --help made from the same declarations. What
// the flags refuse together (--quality without --max-side) each subcommand checks after.
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "decode/jpeg_image.h"
#include "io/writer_options.h"
#include "options/option_table.h"
#include "tools/convert/elem_type.h"
#include "tools/convert/exporter.h"

namespace rf::convert {

// What a subcommand's command line asks: every option of every subcommand, each subcommand
// reading its own.
struct ConvertConfig {
  WriterConfig writer;              // the writer's flags (io/writer_options.h)
  std::string output;               // -o: the dataset, or export's prefix
  std::vector<std::string> inputs;  // cifar, jsonl, text, images
  std::string dataset;              // export, recompress, inspect, verify
  std::string images, labels;       // idx, npy, predecessor
  bool quiet = false;
  // export, recompress, inspect, verify of a remote dataset (docs/remote.md).
  std::string ca_bundle;
  uint32_t remote_deadline = 120;  // seconds
  std::string cache_dir;           // the node-local cache (io/chunk_cache.h), with cache_bytes
  uint64_t cache_bytes = 0;
  // The converting subcommands' samples (and raw's --out-dtype); unset: the input's own rule.
  std::optional<DType> dtype;
  float scale = 0;  // 0: the default rule (--scale's own rule refuses 0)
  double test_split = 0;
  uint64_t split_seed = 0;
  uint64_t memory_budget = uint64_t{256} << 20;  // blocks of samples in flight; export's block
  uint32_t threads = 0;
  bool cifar100 = false;
  bool nhwc = false;  // npy --layout
  struct Raw {
    std::string records;
    std::vector<uint64_t> shape;
    DType dtype = DType::kUInt8;  // the records' elements
    std::string label = "first";
    uint64_t header_bytes = 0;
  } raw;
  std::vector<uint64_t> image_shape = {3, 32, 32};  // predecessor, synthetic: C,H,W
  struct Synthetic {
    uint64_t samples = 0;
    uint64_t seed = 0;
    bool sorted = false;  // --order
    uint32_t classes = 10;
    DType dtype = DType::kUInt8;
  } synthetic;
  struct Tokens {
    std::optional<DType> dtype;  // unset: uint16 where every id fits, else int32
    uint64_t vocab_size = 0;
    uint64_t memory_budget = uint64_t{16} << 20;  // ids read at a time
    std::string input;                            // npy-docs: the directory, or the ids
    std::string offsets;                          // npy-docs
    std::string tokenizer;                        // text
    bool lines = false;                           // text --split
  } tokens;
  std::string prefix;  // megatron
  struct Images {
    uint32_t max_image_side = kDefaultMaxImageSide;
    uint32_t max_side = 0;  // 0: nothing re-encoded (--max-side's own rule refuses 0)
    uint32_t quality = 90;
    bool skip_bad = false;     // leave refused images out, listed in a report
    bool keep_order = false;   // an ImageFolder's walk order, not its shuffle
    bool list_images = false;  // each sample's source listed beside the output
    // --fields: the members of each WebDataset sample kept, by extension (jpg,txt,json,cls);
    // empty: the image and its .cls alone, as image records.
    std::vector<std::string> fields;
  } images_options;
  struct Export {
    ExportFormat format = ExportFormat::kRaw;
    ExportLayout layout = ExportLayout::kAuto;
    std::optional<Elem> label_elem;
  } export_options;
  bool verify = false;  // inspect
};

const OptionTable<ConvertConfig>& ConvertOptionTable();

// A subcommand as its command line and --help name it.
struct ConvertCommand {
  const char* name;   // "idx"
  uint32_t user;      // kConvertIdx
  const char* usage;  // "--images F [--labels F] -o OUT.rfd [options]"
};

struct ConvertFlags {
  ConvertConfig config;
  std::set<std::string> given;  // the options given, by spec name
};

// The codec flags and --quiet into a converter's options (ConvertOptions, TokenConvertOptions,
// ImageConvertOptions, RecompressOptions: each names them alike).
template <typename Options>
void SetCodecFlags(const ConvertConfig& c, Options* o) {
  o->codec = c.writer.options.codec;
  o->compress_threads = c.writer.options.threads;
  o->format_version = c.writer.options.version;
  o->progress = !c.quiet;
}

// `command`'s command line (the arguments after its name) read through the table: the flags, each
// within its declaration, none given that does nothing with the others; nullopt where --help was
// asked, the help (made from the declarations) written to `out`. Errors: Usage naming the
// subcommand and the option ("idx: --shards must be a whole number from 1 to 99999, got 0").
Result<std::optional<ConvertFlags>> ReadConvertFlags(const ConvertCommand& command,
                                                     const std::vector<std::string>& args,
                                                     std::ostream& out);

}  // namespace rf::convert
