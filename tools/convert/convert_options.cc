#include "tools/convert/convert_options.h"

#include <cfloat>
#include <limits>

#include "io/chunk_cache.h"
#include "io/remote/retry_policy.h"
#include "options/command_line.h"
#include "options/dtype_words.h"

namespace rf::convert {
namespace {

using Table = OptionTable<ConvertConfig>;

// The subcommands that read a dataset, and those that take the conversion's own flags.
constexpr uint32_t kDatasetReaders =
    kConvertExport | kConvertRecompress | kConvertInspect | kConvertVerify;
constexpr uint32_t kSamplesButSynthetic = kConvertSamples & ~kConvertSynthetic;
constexpr uint32_t kEveryCommand = kConvertWriters | kDatasetReaders;
constexpr uint32_t kMaxSide = 65535;  // an image side (decode/jpeg_image.h's bound)
// A memory budget past any machine's is a typo (it is a budget: what a block takes is bounded by
// the data too).
constexpr uint64_t kMaxBudget = uint64_t{1} << 40;

// An option that must be given, as bare words or by name: `ringfeed-convert inspect DATASET`
// (kText), `cifar A B C` (kTexts).
template <typename Access>
void Bare(Table& t, const char* name, OptionType type, Access access, const char* metavar,
          uint32_t users, const char* help) {
  t.Field(name, type, access).Positional().Required().Metavar(metavar).For(users).Help(help);
}

// The input files of `users`, in order.
void Inputs(Table& t, uint32_t users, const char* metavar, const char* help) {
  Bare(
      t, "input", OptionType::kTexts, [](auto& c) -> auto& { return c.inputs; }, metavar, users,
      help);
}

// The options every subcommand that makes a dataset of fixed-shape samples takes.
void AddSampleOptions(Table& t) {
  t.Word(
       "dtype", [](auto& c) -> auto& { return c.dtype; },
       DTypeWords<std::optional<DType>>({DType::kUInt8, DType::kUInt16, DType::kInt32,
                                         DType::kInt64, DType::kFloat16, DType::kBFloat16,
                                         DType::kFloat32}))
      .For(kSamplesButSynthetic & ~kConvertRaw)
      .Help(
          "stored sample dtype: uint8, float16, bfloat16, float32 (intensities), or uint16, "
          "int32, int64 (ids such as token ids: integer input only, stored exactly) (default: "
          "the input's own where it is one of these, int64 for uint32/uint64 input, else "
          "float32)");
  t.Field(
       "scale", OptionType::kNumber, [](auto& c) -> auto& { return c.scale; })
      .RangeReal(0, FLT_MAX, /*min_open=*/true)
      .For(kSamplesButSynthetic)
      .Help(
          "stored = input * scale (default: 255 when float input is stored as uint8, else 1); "
          "uint8 rounds to nearest and clamps to 0..255");
  t.Field(
       "test-split", OptionType::kNumber, [](auto& c) -> auto& { return c.test_split; })
      .RangeReal(0, 1, false, /*max_open=*/true)
      .For(kConvertSamples)
      .Help(
          "fraction of samples written to a second dataset, OUT with .rfd replaced by .test.rfd; "
          "a sample goes there by a seeded hash of its index");
  t.Field(
       "split-seed", OptionType::kCount, [](auto& c) -> auto& { return c.split_seed; })
      .For(kConvertSamples)
      .Help("seed of the test-split hash");
  t.Field(
       "memory-budget", OptionType::kByteSize, [](auto& c) -> auto& { return c.memory_budget; })
      .Range(0, kMaxBudget)
      .For(kConvertSamples | kConvertExport)
      .Help(
          "memory for the blocks of samples in flight (up to four: one read, ones converted, one "
          "written); export: the predecessor export's block of samples");
  t.Field(
       "threads", OptionType::kCount, [](auto& c) -> auto& { return c.threads; })
      .Range(0, 1024)
      .For(kConvertSamples | kConvertImages)
      .Help(
          "threads that decode, transpose, convert and sum samples (synthetic: generate them; "
          "images: check and re-encode images) while one reads and one writes (0: the CPUs this "
          "process may run on); the output is the same for any count");
}

// Each converting subcommand's own options.
void AddSampleInputs(Table& t) {
  t.Field(
       "images", OptionType::kText, [](auto& c) -> auto& { return c.images; })
      .Required()
      .Metavar("FILE")
      .For(kConvertIdx | kConvertNpy | kConvertPredecessor)
      .Help(
          "the samples: idx: an IDX images file (N,H,W or N,C,H,W; plain or gzipped); npy: a "
          ".npy of shape (N, d1, ..., dk), k = 1 to 4, kept as the sample shape ((N,C,H,W) "
          "images, (N,2048) token rows), or (N,H,W,C) with --layout nhwc; predecessor: "
          "images_train.bin, float32, feature-major (feature f of sample s at f*N+s)");
  t.Field(
       "labels", OptionType::kText, [](auto& c) -> auto& { return c.labels; })
      .Metavar("FILE")
      .For(kConvertIdx | kConvertNpy)
      .Help(
          "the labels: idx: an IDX labels file (N); npy: a .npy of N integers; without it the "
          "dataset has no labels");
  t.Field(
       "labels", OptionType::kText, [](auto& c) -> auto& { return c.labels; })
      .Required()
      .Metavar("FILE")
      .For(kConvertPredecessor)
      .Help("labels_train.bin: N int32 labels, 0-based");
  Inputs(t, kConvertCifar, "FILE", "CIFAR binary batch files (several make one dataset, in order)");
  t.Field(
       "cifar100", OptionType::kSwitch, [](auto& c) -> auto& { return c.cifar100; })
      .For(kConvertCifar)
      .Help("CIFAR-100 records (coarse and fine label bytes; the fine label is kept)");
  t.Word("layout", [](auto& c) -> auto& { return c.nhwc; }, {{"nchw", false}, {"nhwc", true}})
      .For(kConvertNpy)
      .Help("nchw (samples as they are), or nhwc: (N,H,W,C) images transposed to C,H,W per sample");
  t.Field(
       "records", OptionType::kText, [](auto& c) -> auto& { return c.raw.records; })
      .Required()
      .Metavar("FILE")
      .For(kConvertRaw)
      .Help("the records file");
  t.Field(
       "shape", OptionType::kCounts, [](auto& c) -> auto& { return c.raw.shape; })
      .Range(1, std::numeric_limits<uint32_t>::max())
      .Items(1, 4)
      .Required()
      .Metavar("D1[,D2...]")
      .For(kConvertRaw)
      .Help("sample shape: 1 to 4 dims (C,H,W for an image, 2048 for a token row)");
  t.Word(
       "dtype", [](auto& c) -> auto& { return c.raw.dtype; },
       DTypeWords({DType::kUInt8, DType::kUInt16, DType::kInt32, DType::kInt64, DType::kFloat16,
                   DType::kBFloat16, DType::kFloat32}))
      .For(kConvertRaw)
      .Help("element type in the records (also the stored one, unless --out-dtype)");
  t.Field(
       "label", OptionType::kText, [](auto& c) -> auto& { return c.raw.label; })
      .TextRule("first, last, none or file:PATH",
                [](std::string_view l) {
                  return l == "first" || l == "last" || l == "none" ||
                         (l.starts_with("file:") && l.size() > 5);
                })
      .Metavar("WHERE")
      .For(kConvertRaw)
      .Help(
          "where labels are: first or last in each record, none (the dataset has no labels), or "
          "file:PATH (a file of N labels)");
  t.Field(
       "header-bytes", OptionType::kCount, [](auto& c) -> auto& { return c.raw.header_bytes; })
      .For(kConvertRaw)
      .Help("bytes to skip at the start of the records file");
  t.Word(
       "out-dtype", [](auto& c) -> auto& { return c.dtype; },
       DTypeWords<std::optional<DType>>({DType::kUInt8, DType::kUInt16, DType::kInt32,
                                         DType::kInt64, DType::kFloat16, DType::kBFloat16,
                                         DType::kFloat32}))
      .For(kConvertRaw)
      .Help("stored sample dtype (default: --dtype)");
  t.Field(
       "shape", OptionType::kCounts, [](auto& c) -> auto& { return c.image_shape; })
      .Range(1, std::numeric_limits<uint32_t>::max())
      .Items(3, 3)
      .Metavar("C,H,W")
      .For(kConvertPredecessor | kConvertSynthetic)
      .Help("sample shape C,H,W");
}

void AddSyntheticOptions(Table& t) {
  t.Field(
       "samples", OptionType::kCount, [](auto& c) -> auto& { return c.synthetic.samples; })
      .Range(1, std::numeric_limits<uint64_t>::max())
      .Required()
      .For(kConvertSynthetic)
      .Help("number of samples");
  t.Field(
       "seed", OptionType::kCount, [](auto& c) -> auto& { return c.synthetic.seed; })
      .For(kConvertSynthetic)
      .Help("the output is a function of the seed alone");
  t.Word("order", [](auto& c) -> auto& { return c.synthetic.sorted; },
         {{"random", false}, {"sorted", true}})
      .For(kConvertSynthetic)
      .Help("labels: random per sample, or sorted (the dataset ordered by label)");
  t.Field(
       "classes", OptionType::kCount, [](auto& c) -> auto& { return c.synthetic.classes; })
      .Range(2, std::numeric_limits<uint32_t>::max())
      .For(kConvertSynthetic)
      .Help("number of classes the generator makes");
  t.Word(
       "dtype", [](auto& c) -> auto& { return c.synthetic.dtype; },
       DTypeWords({DType::kUInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32}))
      .For(kConvertSynthetic)
      .Help("stored sample dtype");
}

void AddTokenOptions(Table& t) {
  Bare(
      t, "prefix", OptionType::kText, [](auto& c) -> auto& { return c.prefix; }, "PREFIX",
      kConvertMegatron, "PREFIX of PREFIX.bin and PREFIX.idx (either file's name too)");
  Bare(
      t, "input", OptionType::kText, [](auto& c) -> auto& { return c.tokens.input; }, "DIR|IDS.npy",
      kConvertNpyDocs,
      "a directory of .npy files, one 1-D integer array a document, read in name order; or, with "
      "--offsets, one 1-D .npy of every document's ids");
  t.Field(
       "offsets", OptionType::kText, [](auto& c) -> auto& { return c.tokens.offsets; })
      .Metavar("FILE")
      .For(kConvertNpyDocs)
      .Help(
          "a 1-D integer .npy of N + 1 element offsets into the ids: document i is "
          "ids[offsets[i]:offsets[i + 1]], 0 first, the ids' length last");
  Inputs(t, kConvertJsonl, "FILE",
         "JSON lines files (several make one dataset, in order): each line a list of token ids, "
         "or an object whose \"tokens\" or \"input_ids\" is one");
  Inputs(t, kConvertText, "FILE", "text files (several make one dataset, in order)");
  t.Field(
       "tokenizer", OptionType::kWord, [](auto& c) -> auto& { return c.tokens.tokenizer; })
      .Words({"bytes"})
      .Required()
      .For(kConvertText)
      .Help(
          "bytes: each byte its own id (0 to 255), and 256 ending every document (uint16); the "
          "one built in (any other: tokenize in Python and write with ringfeed.DatasetWriter)");
  t.Word("split", [](auto& c) -> auto& { return c.tokens.lines; },
         {{"files", false}, {"lines", true}})
      .For(kConvertText)
      .Help("files: a document a file; lines: a document a line (its newline not kept)");
  t.Word(
       "dtype", [](auto& c) -> auto& { return c.tokens.dtype; },
       DTypeWords<std::optional<DType>>({DType::kUInt16, DType::kInt32, DType::kInt64}))
      .For(kConvertTokens)
      .Help(
          "stored id dtype (default: uint16 where every id fits, else int32; int64 only when "
          "given)");
  t.Field(
       "vocab-size", OptionType::kCount, [](auto& c) -> auto& { return c.tokens.vocab_size; })
      .For(kConvertTokens)
      .Help(
          "every id must be below it (0: not declared); it also decides the dtype (at most "
          "65536: uint16, else int32) without a first pass over the input");
  t.Field(
       "memory-budget", OptionType::kByteSize,
       [](auto& c) -> auto& { return c.tokens.memory_budget; })
      .Range(0, kMaxBudget)
      .For(kConvertTokens)
      .Help("ids read at a time (a block of whole documents; one document at least)");
}

void AddImageOptions(Table& t) {
  Inputs(t, kConvertImages, "DIR|SHARD.tar",
         "an ImageFolder directory (one subfolder a class, indexed in sorted order), or "
         "WebDataset .tar shards (KEY.jpg, .png or .webp with KEY.cls), in order");
  t.Field(
       "max-image-side", OptionType::kCount,
       [](auto& c) -> auto& { return c.images_options.max_image_side; })
      .Range(1, kMaxSide)
      .For(kConvertImages)
      .Help(
          "the most pixels a side of an image stored as it is, from its header; a larger one is "
          "refused before anything is allocated for it (with --max-side, which may not pass it, "
          "every stored image is within it)");
  t.Field(
       "max-side", OptionType::kCount, [](auto& c) -> auto& { return c.images_options.max_side; })
      .Range(1, kMaxSide)
      .For(kConvertImages)
      .Help(
          "shrink: an image with a side above N is resized to N on its longer side and "
          "re-encoded as a baseline JPEG at --quality; the others are stored as they are "
          "(without it, nothing is re-encoded)");
  t.Field(
       "quality", OptionType::kCount, [](auto& c) -> auto& { return c.images_options.quality; })
      .Range(1, 100)
      .For(kConvertImages)
      .Help("the JPEG quality of a re-encode (only with --max-side)");
  t.Field(
       "keep-order", OptionType::kSwitch,
       [](auto& c) -> auto& { return c.images_options.keep_order; })
      .For(kConvertImages)
      .Help(
          "store an ImageFolder's images in the walk's order (class by class, each folder in "
          "name order); without it they are stored in a fixed shuffle, so that every chunk "
          "mixes classes (WebDataset shards keep their own order either way)");
  t.Field(
       "fields", OptionType::kTexts, [](auto& c) -> auto& { return c.images_options.fields; })
      .For(kConvertImages)
      .Metavar("EXT,...")
      .Help(
          "keep these members of each WebDataset sample (an ImageFolder: these files beside each "
          "image, a/x.txt for a/x.jpg) as its fields, by extension (jpg,txt,json,cls: the "
          "image, its caption, its metadata, its label), each sample holding every one; without "
          "it a sample is its image and its label alone");
  t.Field(
       "list-images", OptionType::kSwitch,
       [](auto& c) -> auto& { return c.images_options.list_images; })
      .For(kConvertImages)
      .Help(
          "list each stored image's source in OUT.images.tsv beside the output, in the "
          "dataset's order (sample index, path, label): where a sample came from once the "
          "tree's order is shuffled");
  t.Field(
       "skip-bad", OptionType::kSwitch, [](auto& c) -> auto& { return c.images_options.skip_bad; })
      .For(kConvertImages)
      .Help(
          "keep going past an image that cannot be stored (damaged, truncated, empty, not a "
          "JPEG, PNG or WebP, or too large without --max-side): write the others, and list each "
          "one left out with its reason in OUT's report (OUT.skipped.tsv)");
}

void AddDatasetOptions(Table& t) {
  Bare(
      t, "dataset", OptionType::kText, [](auto& c) -> auto& { return c.dataset; }, "DATASET",
      kDatasetReaders,
      "the dataset: a .rfd file, any one of its shards, or a directory of datasets");
  t.Word("format", [](auto& c) -> auto& { return c.export_options.format; },
         {{"raw", ExportFormat::kRaw},
          {"idx", ExportFormat::kIdx},
          {"cifar", ExportFormat::kCifar},
          {"npy", ExportFormat::kNpy},
          {"predecessor", ExportFormat::kPredecessor},
          {"megatron", ExportFormat::kMegatron}})
      .Required()
      .For(kConvertExport)
      .Help(
          "raw, idx, cifar, npy or predecessor (fixed-shape samples), or megatron (token "
          "records: PREFIX.bin + PREFIX.idx)");
  t.Word("layout", [](auto& c) -> auto& { return c.export_options.layout; },
         {{"auto", ExportLayout::kAuto},
          {"nchw", ExportLayout::kNchw},
          {"nhwc", ExportLayout::kNhwc},
          {"nhw", ExportLayout::kNhw}})
      .For(kConvertExport)
      .Help(
          "raw/idx/npy sample layout: nchw, nhwc, nhw (C = 1), or auto (npy: the stored shape, a "
          "channel of 1 kept; raw and idx: nhw for one channel, else nchw)");
  t.Word(
       "label-dtype", [](auto& c) -> auto& { return c.export_options.label_elem; },
       {{"uint8", Elem::kU8}, {"uint16", Elem::kU16}, {"int32", Elem::kI32}, {"int64", Elem::kI64}})
      .For(kConvertExport)
      .Help("raw/npy label type (default: the stored one)");
  t.Field(
       "ca-bundle", OptionType::kText, [](auto& c) -> auto& { return c.ca_bundle; })
      .For(kDatasetReaders)
      .Help(
          "remote datasets: a PEM file of the certificates to trust for https:// (default: the "
          "system's); certificates and host names are always verified");
  t.Field(
       "remote-deadline", OptionType::kCount, [](auto& c) -> auto& { return c.remote_deadline; })
      .Range(1, kMaxFetchDeadlineSeconds)
      .For(kDatasetReaders)
      .Help(
          "remote datasets: seconds one range request may take, its retries (5xx, 429, resets, "
          "timeouts, with backoff and jitter) included, before the command stops naming it");
  t.Field(
       "cache-dir", OptionType::kText, [](auto& c) -> auto& { return c.cache_dir; })
      .For(kDatasetReaders)
      .Help(
          "remote datasets: read the chunks through the node-local cache in this directory (with "
          "--cache-size; the one `ringfeed train` and `ringfeed.Loader` fill): a chunk cached is "
          "read from it, one fetched is kept there");
  t.Field(
       "cache-size", OptionType::kByteSize, [](auto& c) -> auto& { return c.cache_bytes; })
      .Range(0, kMaxCacheBytes)
      .For(kDatasetReaders)
      .Help("remote datasets: the cache's budget (\"200GiB\"); needs --cache-dir");
  t.Field(
       "verify", OptionType::kSwitch, [](auto& c) -> auto& { return c.verify; })
      .For(kConvertInspect)
      .Help(
          "also read every chunk and check its checksum (and decompress it where it is "
          "compressed)");
}

Table MakeTable() {
  Table t;
  t.Field(
       "output", OptionType::kText, [](auto& c) -> auto& { return c.output; })
      .Short('o')
      .Required()
      .Metavar("OUT")
      .For(kConvertWriters | kConvertExport)
      .Help(
          "the dataset to write (OUT.rfd; recompress: in as many shards as the input); export: "
          "the output prefix (PREFIX.records, ...)");
  AddSampleInputs(t);
  AddSyntheticOptions(t);
  AddTokenOptions(t);
  AddImageOptions(t);
  AddDatasetOptions(t);
  AddSampleOptions(t);
  t.Include(
      WriterOptionTable(), kEveryCommand, [](auto& c) -> auto& { return c.writer; });
  t.Field(
       "quiet", OptionType::kSwitch, [](auto& c) -> auto& { return c.quiet; })
      .Short('q')
      .For(kConvertWriters | kConvertExport | kConvertVerify)
      .Help("no progress bar and no summary line (verify: no progress bar)");
  return t;
}

}  // namespace

const OptionTable<ConvertConfig>& ConvertOptionTable() {
  static const OptionTable<ConvertConfig> table = MakeTable();
  return table;
}

Result<std::optional<ConvertFlags>> ReadConvertFlags(const ConvertCommand& command,
                                                     const std::vector<std::string>& args,
                                                     std::ostream& out) {
  const OptionTable<ConvertConfig>& table = ConvertOptionTable();
  const std::vector<OptionSpec> specs = table.Specs(command.user);
  // Named with the subcommand, as the program's other usage errors are with theirs.
  const auto named = [&](const Status& st) {
    return Status::Usage(std::string(command.name) + ": " + st.message());
  };
  Result<ParsedOptions> parsed = ParseCommandLine(specs, args);
  if (!parsed.ok()) return named(parsed.status());
  if (parsed->help) {
    out << "Usage: ringfeed-convert " << command.name << " " << command.usage << "\n\n"
        << FormatOptionsHelp(specs);
    return std::optional<ConvertFlags>();
  }
  ConvertFlags f;
  for (const auto& [name, value] : parsed->values) {
    const Status st = table.Set(&f.config, *table.FindByName(name, command.user), value,
                                OptionFace::kCommandLine);
    if (!st.ok()) return named(st);
  }
  f.given = parsed->given;
  const Status idle = table.RefuseIdle(f.config, f.given, OptionFace::kCommandLine, command.user);
  if (!idle.ok()) return named(idle);
  return std::optional<ConvertFlags>(std::move(f));
}

}  // namespace rf::convert
