// The token corpus subcommands: megatron, npy-docs, jsonl, text. Each makes a tokens dataset, one
// record a document, through ConvertDocuments (token_converter.h).
#include <algorithm>

#include "tools/convert/commands.h"
#include "tools/convert/convert_options.h"
#include "tools/convert/input_file.h"
#include "tools/convert/megatron.h"
#include "tools/convert/token_converter.h"
#include "tools/convert/token_inputs.h"

namespace rf::convert {
namespace {

// The token converter's options the flags ask for.
Result<TokenConvertOptions> ToTokenOptions(const ConvertFlags& f) {
  const ConvertConfig& c = f.config;
  WriterConfig writer = c.writer;
  writer.spec.record_kind = format::RecordKind::kTokens;
  RF_RETURN_IF_ERROR(CheckWriterVersion(writer, OptionFace::kCommandLine));
  // An int64 id is 8 bytes: a smaller bound would refuse every document of such ids.
  if (writer.options.max_record_bytes < 8) {
    return Status::Usage(
        "--max-record-size must be at least 8 bytes for token documents (one int64 id), got " +
        std::to_string(writer.options.max_record_bytes));
  }
  TokenConvertOptions o;
  o.dtype = c.tokens.dtype;
  if (c.tokens.vocab_size != 0) o.vocab_size = c.tokens.vocab_size;
  o.chunk_bytes = writer.options.chunk_bytes;
  o.shards = writer.options.shards;
  o.max_record_bytes = writer.options.max_record_bytes;
  o.block_bytes = std::max<uint64_t>(c.tokens.memory_budget, 1);
  SetCodecFlags(c, &o);
  return o;
}

Status ConvertAndReport(Result<std::unique_ptr<DocumentSource>> source, const ConvertFlags& f,
                        const TokenConvertOptions& o, std::ostream& out) {
  if (!source.ok()) return source.status();
  RF_ASSIGN_OR_RETURN(TokenConvertSummary s, ConvertDocuments(**source, f.config.output, o));
  if (!f.config.quiet) out << TokenConvertReport(s);
  return Status::Ok();
}

}  // namespace

Status RunMegatronCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kMegatron = {"megatron", kConvertMegatron,
                                               "PREFIX -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kMegatron, args, out));
  if (!f) return Status::Ok();  // --help
  RF_ASSIGN_OR_RETURN(const TokenConvertOptions o, ToTokenOptions(*f));
  return ConvertAndReport(OpenMegatronSource(f->config.prefix), *f, o, out);
}

Status RunNpyDocsCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kNpyDocs = {
      "npy-docs", kConvertNpyDocs, "DIR | IDS.npy --offsets OFFSETS.npy -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kNpyDocs, args, out));
  if (!f) return Status::Ok();
  RF_ASSIGN_OR_RETURN(const TokenConvertOptions o, ToTokenOptions(*f));
  const std::string& input = f->config.tokens.input;
  const std::string& offsets = f->config.tokens.offsets;
  if (!offsets.empty()) RF_RETURN_IF_ERROR(CheckInputsAreRegular({input, offsets}));
  return ConvertAndReport(
      offsets.empty() ? OpenNpyDirectorySource(input) : OpenNpyOffsetsSource(input, offsets), *f, o,
      out);
}

Status RunJsonlCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kJsonl = {"jsonl", kConvertJsonl, "FILE... -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kJsonl, args, out));
  if (!f) return Status::Ok();
  RF_ASSIGN_OR_RETURN(const TokenConvertOptions o, ToTokenOptions(*f));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular(f->config.inputs));
  return ConvertAndReport(OpenJsonLinesSource(f->config.inputs, o.max_record_bytes, o.block_bytes),
                          *f, o, out);
}

Status RunTextCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kText = {
      "text", kConvertText, "FILE... --tokenizer bytes [--split lines] -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kText, args, out));
  if (!f) return Status::Ok();
  RF_ASSIGN_OR_RETURN(const TokenConvertOptions o, ToTokenOptions(*f));
  RF_RETURN_IF_ERROR(CheckInputsAreRegular(f->config.inputs));
  return ConvertAndReport(OpenByteTextSource(f->config.inputs, f->config.tokens.lines), *f, o, out);
}

}  // namespace rf::convert
