// The token corpus subcommands: megatron, npy-docs, jsonl, text. Each makes a tokens dataset, one
// record a document, through ConvertDocuments (token_converter.h).
#include "tools/convert/cli_options.h"
#include "tools/convert/commands.h"
#include "tools/convert/input_file.h"
#include "tools/convert/megatron.h"
#include "tools/convert/token_converter.h"
#include "tools/convert/token_inputs.h"

namespace rf::convert {
namespace {

// The options every token subcommand takes.
struct TokenFlags {
  std::string output;
  std::string dtype;
  uint64_t vocab_size = 0;
  std::string chunk_size = "4MiB";
  uint32_t shards = 1;
  std::string max_record_size = "64MiB";
  std::string memory_budget = "16MiB";
  CodecFlags codec;
  bool quiet = false;
};

void AddTokenOptions(po::options_description& desc, TokenFlags& f) {
  auto add = desc.add_options();
  add("output,o", po::value(&f.output)->required(), "the dataset to write (OUT.rfd)");
  add("dtype", po::value(&f.dtype),
      "stored id dtype: uint16, int32 or int64 (default: uint16 where every id fits, else int32; "
      "int64 only when given)");
  add("vocab-size", po::value(&f.vocab_size)->default_value(0),
      "every id must be below it (0: not declared); it also decides the dtype (at most 65536: "
      "uint16, else int32) without a first pass over the input");
  add("chunk-size", po::value(&f.chunk_size)->default_value(f.chunk_size),
      "target chunk size (4KiB to 1GiB); a chunk ends where the next document would pass it");
  add("shards", po::value(&f.shards)->default_value(f.shards), "number of shard files");
  add("max-record-size", po::value(&f.max_record_size)->default_value(f.max_record_size),
      "the longest document, in stored bytes (up to 1GiB); a longer one is refused (jsonl: with "
      "--memory-budget, the smaller, 64KiB at least, also a line's longest string)");
  add("memory-budget", po::value(&f.memory_budget)->default_value(f.memory_budget),
      "ids read at a time (a block of whole documents; one document at least)");
  AddCodecOptions(desc, f.codec);
  add("quiet,q", po::bool_switch(&f.quiet), "no progress bar and no summary line");
}

TokenConvertOptions ToTokenOptions(const TokenFlags& f) {
  TokenConvertOptions o;
  if (!f.dtype.empty()) {
    const DType t = ParseDTypeFlag("--dtype", f.dtype, DTypeKind::kSample);
    if (IsImageDType(t))
      throw UsageError("--dtype must be uint16, int32 or int64 for token ids, not '" + f.dtype +
                       "'");
    o.dtype = t;
  }
  if (f.vocab_size != 0) o.vocab_size = f.vocab_size;
  o.chunk_bytes = ParseSizeFlag("--chunk-size", f.chunk_size);
  if (o.chunk_bytes < format::kAlign || o.chunk_bytes > kMaxChunkBytes)
    throw UsageError("--chunk-size must be from 4KiB to 1GiB, not '" + f.chunk_size + "'");
  if (f.shards == 0 || f.shards > 99999) throw UsageError("--shards must be 1 to 99999");
  o.shards = f.shards;
  o.max_record_bytes = ParseSizeFlag("--max-record-size", f.max_record_size);
  if (o.max_record_bytes < 8 || o.max_record_bytes > format::kMaxChunkTarget)
    throw UsageError("--max-record-size must be from 8 bytes to 1GiB, not '" + f.max_record_size +
                     "'");
  o.block_bytes = std::max<uint64_t>(ParseSizeFlag("--memory-budget", f.memory_budget), 1);
  const CodecChoice c = ToCodecChoice(f.codec);
  if (c.format_version == 1)
    throw UsageError("--format-version 1 holds fixed-shape samples only: tokens need version 2");
  o.codec = c.codec;
  o.compress_threads = c.threads;
  o.format_version = c.format_version;
  o.progress = !f.quiet;
  return o;
}

Status ConvertAndReport(Result<std::unique_ptr<DocumentSource>> source, const TokenFlags& f,
                        const TokenConvertOptions& o, std::ostream& out) {
  if (!source.ok()) return source.status();
  RF_ASSIGN_OR_RETURN(TokenConvertSummary s, ConvertDocuments(**source, f.output, o));
  if (!f.quiet) out << TokenConvertReport(s);
  return Status::Ok();
}

}  // namespace

Status RunMegatronCommand(const std::vector<std::string>& args, std::ostream& out) {
  TokenFlags f;
  std::string prefix;
  po::options_description desc("megatron options");
  desc.add_options()("prefix", po::value(&prefix)->required(),
                     "PREFIX of PREFIX.bin and PREFIX.idx (positional; either file's name too)");
  AddTokenOptions(desc, f);
  po::positional_options_description pos;
  pos.add("prefix", 1);
  po::variables_map vm;
  if (!ParseCommandLine("megatron", "PREFIX -o OUT.rfd [options]", desc, &pos, args, vm, out))
    return Status::Ok();
  const TokenConvertOptions o = ToTokenOptions(f);
  return ConvertAndReport(OpenMegatronSource(prefix), f, o, out);
}

Status RunNpyDocsCommand(const std::vector<std::string>& args, std::ostream& out) {
  TokenFlags f;
  std::string input, offsets;
  po::options_description desc("npy-docs options");
  desc.add_options()(
      "input", po::value(&input)->required(),
      "a directory of .npy files, one 1-D integer array a document, read in name "
      "order; or, with --offsets, one 1-D .npy of every document's ids (positional)")(
      "offsets", po::value(&offsets),
      "a 1-D integer .npy of N + 1 element offsets into the ids: document i is ids[offsets[i]:"
      "offsets[i + 1]], 0 first, the ids' length last");
  AddTokenOptions(desc, f);
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!ParseCommandLine("npy-docs", "DIR | IDS.npy --offsets OFFSETS.npy -o OUT.rfd [options]",
                        desc, &pos, args, vm, out))
    return Status::Ok();
  const TokenConvertOptions o = ToTokenOptions(f);
  if (!offsets.empty()) RF_RETURN_IF_ERROR(CheckInputsAreRegular({input, offsets}));
  return ConvertAndReport(
      offsets.empty() ? OpenNpyDirectorySource(input) : OpenNpyOffsetsSource(input, offsets), f, o,
      out);
}

Status RunJsonlCommand(const std::vector<std::string>& args, std::ostream& out) {
  TokenFlags f;
  std::vector<std::string> files;
  po::options_description desc("jsonl options");
  desc.add_options()("input", po::value(&files)->required()->multitoken(),
                     "JSON lines files (positional; several make one dataset, in order): each "
                     "line a list of token ids, or an object whose \"tokens\" or \"input_ids\" "
                     "is one");
  AddTokenOptions(desc, f);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!ParseCommandLine("jsonl", "FILE... -o OUT.rfd [options]", desc, &pos, args, vm, out))
    return Status::Ok();
  const TokenConvertOptions o = ToTokenOptions(f);
  RF_RETURN_IF_ERROR(CheckInputsAreRegular(files));
  return ConvertAndReport(OpenJsonLinesSource(files, o.max_record_bytes, o.block_bytes), f, o, out);
}

Status RunTextCommand(const std::vector<std::string>& args, std::ostream& out) {
  TokenFlags f;
  std::vector<std::string> files;
  std::string tokenizer, split = "files";
  po::options_description desc("text options");
  desc.add_options()("input", po::value(&files)->required()->multitoken(),
                     "text files (positional; several make one dataset, in order)")(
      "tokenizer", po::value(&tokenizer)->required(),
      "bytes: each byte its own id (0 to 255), and 256 ending every document (uint16)")(
      "split", po::value(&split)->default_value(split),
      "files: a document a file; lines: a document a line (its newline not kept)");
  AddTokenOptions(desc, f);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!ParseCommandLine("text", "FILE... --tokenizer bytes [--split lines] -o OUT.rfd [options]",
                        desc, &pos, args, vm, out))
    return Status::Ok();
  if (tokenizer != "bytes")
    throw UsageError(
        "--tokenizer must be bytes (the one built in; any other: tokenize in Python "
        "and write with ringfeed.DatasetWriter), not '" +
        tokenizer + "'");
  if (split != "files" && split != "lines")
    throw UsageError("--split must be files or lines, not '" + split + "'");
  const TokenConvertOptions o = ToTokenOptions(f);
  RF_RETURN_IF_ERROR(CheckInputsAreRegular(files));
  return ConvertAndReport(OpenByteTextSource(files, split == "lines"), f, o, out);
}

}  // namespace rf::convert
