// The option parser on hostile text: the fuzzer's bytes as a command line (split at NUL bytes)
// and as a --config file's text, read by the loader's declarations (pipeline/plan/loader_options.h:
// the pipeline's options and the output's, every type the schema has) through the parser every
// program uses (options/command_line.h), then set through the table. Whatever is accepted meets
// the schema's contract:
//   - every value set is inside its declaration's bounds, and so is the config after it;
//   - a value written as the command line writes it (OptionValueText) reads back to itself;
//   - refusals are Usage errors, never a crash, a hang or an allocation sized from the text.
// (--config FILE itself is not fuzzed here: its file checks are tests/options' command-line
// tests; a "config" option is not among the loader's.)
#include <cstdint>
#include <string>
#include <vector>

#include "options/command_line.h"
#include "pipeline/plan/loader_options.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;

namespace {

// `v`, written as the command line writes it, reads back to itself.
void CheckRoundTrip(const OptionSpec& s, const OptionValue& v) {
  // Free text: its owner parses it (several texts are written joined, read as one).
  if (s.type == OptionType::kText || s.type == OptionType::kTexts) return;
  const std::string text = OptionValueText(s, v);
  Result<OptionValue> back = ParseOptionText(s, text, OptionFace::kCommandLine);
  RF_FUZZ_CHECK(back.ok());
  if (s.type == OptionType::kSwitch) return;  // text is the --no- spelling's: checked by value
  RF_FUZZ_CHECK(*back == v);
}

void Apply(const OptionTable<LoaderOptions>& table, const ParsedOptions& parsed) {
  LoaderOptions o;
  for (const auto& [name, value] : parsed.values) {
    const auto* e = table.FindByName(name);
    RF_FUZZ_CHECK(e != nullptr);
    RF_FUZZ_CHECK(CheckOptionValue(e->spec, value, OptionFace::kCommandLine).ok());
    CheckRoundTrip(e->spec, value);
    const Status st = table.Set(&o, *e, value, OptionFace::kCommandLine);
    RF_FUZZ_CHECK(st.ok() || st.IsUsage());
  }
  RF_FUZZ_CHECK(table.Check(o, kLoaderApi, OptionFace::kCommandLine).ok());
  const Status idle = table.RefuseIdle(o, parsed.given, OptionFace::kPython);
  RF_FUZZ_CHECK(idle.ok() || idle.IsUsage());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const OptionTable<LoaderOptions>& table = LoaderOptionTable();
  static const std::vector<OptionSpec> specs = table.Specs(kLoaderApi);
  const std::string text(reinterpret_cast<const char*>(data), size);

  // As a command line: words split at NUL bytes.
  std::vector<std::string> args;
  size_t start = 0;
  while (start <= text.size() && args.size() < 64) {
    const size_t end = std::min(text.find('\0', start), text.size());
    args.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  Result<ParsedOptions> parsed = ParseCommandLine(specs, args);
  RF_FUZZ_CHECK(parsed.ok() || parsed.status().IsUsage());
  if (parsed.ok()) Apply(table, *parsed);

  // As a --config file's text.
  ParsedOptions from_file;
  const Status st = ParseConfigText(specs, "fuzz.cfg", text, &from_file);
  RF_FUZZ_CHECK(st.ok() || st.IsUsage());
  if (st.ok()) Apply(table, from_file);

  // Every declaration's own reading of the whole text.
  for (const OptionSpec& s : specs) {
    Result<OptionValue> v = ParseOptionText(s, text, OptionFace::kCommandLine);
    RF_FUZZ_CHECK(v.ok() || v.status().IsUsage());
    if (v.ok()) {
      RF_FUZZ_CHECK(CheckOptionValue(s, *v, OptionFace::kCommandLine).ok());
      CheckRoundTrip(s, *v);
    }
  }
  return 0;
}
