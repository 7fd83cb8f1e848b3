// OptionSpec: one option of ringfeed's programs, declared once. Its name, its type, its default,
// its range (bounds, or the words it takes), its help, the programs that take it and where it
// does something. Every face reads options through it:
//
//   the command line  --queue-depth 8, --queue-depth=8, a switch --drop-last / --no-verify,
//                     a one-letter name -o OUT
//   a --config file   queue-depth = 8 (the command line's names, one per line)
//   Python            Loader(..., queue_depth=8): the name with '_' for '-' (or its own name,
//                     PythonName: DatasetWriter's threads is ringfeed-convert's --compress-threads)
//
// so each face accepts and refuses the same values with the same rule. The declarations live
// beside the code that owns the options (pipeline/sources/pipeline_config.h, src/train_options.h,
// io/writer_options.h, tools/convert/convert_options.h); the binding of a declaration to a config's
// field is options/option_table.h's.
//
// Bounds: every number a user gives has both ends declared, so a size is checked before anything
// is sized from it. Text a user gave is quoted in messages with its control and non-UTF-8 bytes
// escaped (QuoteUserText), so a binary file cannot write raw bytes to a terminal.
//
// Thread safety: plain values and functions of them.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"

namespace rf {

enum class OptionType {
  kSwitch,    // bool. Command line: --NAME turns it on (default off), --no-NAME off (default on)
  kOnOff,     // bool. Command line: --NAME on|off
  kCount,     // an unsigned integer, decimal digits only
  kInteger,   // a signed integer, decimal digits with an optional '-'
  kNumber,    // a finite real number (decimal: no hex, no inf or nan)
  kWord,      // one of `words`
  kText,      // free text its owner parses (a path, a spec)
  kByteSize,  // bytes: "4MiB", "64KiB", "65536" (core/units.h); Python takes an int too
  kNumbers,   // a comma list of finite real numbers (Python: a sequence)
  kCounts,    // a comma list of min_items to max_items whole numbers, each as a kCount ("3,32,32";
              // Python: a sequence of ints, or one int)
  kTexts,     // several texts: the option given again, or a bare word each where it is
              // Positional (`cifar A B C`), each added in order (Python: a sequence of str)
};

// The programs that take options; each option names those that take it.
enum OptionUser : uint32_t {
  kTrainCommand = 1u << 0,  // ringfeed train
  kReadCommand = 1u << 1,   // ringfeed read
  kLoaderApi = 1u << 2,     // the library's loader as Python's ringfeed.Loader takes it
  kWriterApi = 1u << 3,  // the library's dataset writer as Python's ringfeed.DatasetWriter takes it
  // ringfeed-convert's subcommands (tools/convert/convert_options.h), one bit each.
  kConvertIdx = 1u << 4,
  kConvertCifar = 1u << 5,
  kConvertNpy = 1u << 6,
  kConvertRaw = 1u << 7,
  kConvertPredecessor = 1u << 8,
  kConvertSynthetic = 1u << 9,
  kConvertMegatron = 1u << 10,
  kConvertNpyDocs = 1u << 11,
  kConvertJsonl = 1u << 12,
  kConvertText = 1u << 13,
  kConvertImages = 1u << 14,
  kConvertExport = 1u << 15,
  kConvertRecompress = 1u << 16,
  kConvertInspect = 1u << 17,
  kConvertVerify = 1u << 18,
};
// The converter's subcommands by what they do: make a dataset of fixed-shape samples, of token
// documents, of images; and every one that writes a dataset (recompress too).
inline constexpr uint32_t kConvertSamples = kConvertIdx | kConvertCifar | kConvertNpy |
                                            kConvertRaw | kConvertPredecessor | kConvertSynthetic;
inline constexpr uint32_t kConvertTokens =
    kConvertMegatron | kConvertNpyDocs | kConvertJsonl | kConvertText;
inline constexpr uint32_t kConvertWriters =
    kConvertSamples | kConvertTokens | kConvertImages | kConvertRecompress;

// How a face spells an option in its messages: "--queue-depth" or "queue_depth".
enum class OptionFace { kCommandLine, kPython };

// A parsed value: bool (kSwitch, kOnOff), uint64_t (kCount, kByteSize), int64_t (kInteger),
// double (kNumber), std::string (kWord, kText), std::vector<double> (kNumbers),
// std::vector<uint64_t> (kCounts), std::vector<std::string> (kTexts).
using OptionValue = std::variant<bool, uint64_t, int64_t, double, std::string, std::vector<double>,
                                 std::vector<uint64_t>, std::vector<std::string>>;

// Where an option does something: while option `option` is one of `values` (its text: a word,
// "on"/"off"). Given anywhere else, it is refused naming both, with `why`.
struct OptionCondition {
  std::string option;
  std::vector<std::string> values;
  std::string why;
};

struct OptionSpec {
  std::string name;  // the command line's, without "--": "queue-depth"
  OptionType type = OptionType::kText;
  uint32_t users = 0;  // OptionUser bits
  std::string help;
  std::string metavar;      // the value's name in the help: "FILE", "SPEC" (defaults by type)
  char short_name = 0;      // the command line's one-letter name, '-o', where it has one
  std::string python_name;  // Python's name where it is not the name with '_' for '-'
  // The command line must give it (or its --config file): "no --output given" otherwise.
  bool required = false;
  // kCount, kInteger, kByteSize, each number of kCounts: from min_int to max_int, both included.
  int64_t min_int = 0;
  uint64_t max_int = std::numeric_limits<uint64_t>::max();
  uint64_t multiple = 1;  // kCount, kByteSize: a multiple of this (O_DIRECT's 4 KiB reads)
  size_t min_items = 1, max_items = 64;  // kCounts: how many numbers
  // kNumber, kNumbers: from min_real to max_real, each end included unless open.
  double min_real = -std::numeric_limits<double>::max();
  double max_real = std::numeric_limits<double>::max();
  bool min_open = false, max_open = false;
  // kNumber(s) over a float field (set by the table): a value is held as the field holds it, each
  // number rounded to float when read, checked and written ("0.01", not "0.009999999776").
  bool single_precision = false;
  // kWord: the words it takes; true_word/false_word: what a Python bool stands for (shuffle=True
  // is "window"), empty where a bool is refused. word_aliases: other spellings it takes too, not
  // listed in its rule ("bf16" for "bfloat16").
  std::vector<std::string> words;
  std::vector<std::string> word_aliases;
  std::string true_word, false_word;
  // kText: where its owner takes only some texts, the test of one (`takes`) and the rule that says
  // which ("none, lz4, zstd or zstd:LEVEL with LEVEL 1 to 22"), for its messages and help; every
  // face refuses a text `takes` refuses, naming the option as that face does. None: any text.
  std::string text_rule;
  std::function<bool(std::string_view)> takes;
  std::vector<OptionCondition> only_with;
  // Python: what leaving it unset (None) means where that is not one fixed value: "the header's
  // statistics". Empty: None means the default.
  std::string unset;
  bool positional = false;  // the command line also takes it as a bare word ("train DATA")
  // Older command-line names it is still taken by (`ringfeed read --slots`), shown in the help.
  std::vector<std::string> aliases;
  OptionValue default_value;  // set by the table from the config's default

  // A declaration of `name` and `type`, the rest to be set by the helpers below.
  static OptionSpec Of(std::string name, OptionType type);
  // Declaration helpers, each returning *this.
  OptionSpec& Help(std::string text);
  OptionSpec& For(uint32_t users);
  OptionSpec& Range(int64_t min, uint64_t max);  // kCount, kInteger, kByteSize, kCounts
  OptionSpec& MultipleOf(uint64_t m);            // kCount, kByteSize
  OptionSpec& Items(size_t min, size_t max);     // kCounts
  // kNumber(s): [min, max], an end open where said: RangeReal(0, 1, false, true) is [0, 1).
  OptionSpec& RangeReal(double min, double max, bool min_open = false, bool max_open = false);
  OptionSpec& OnlyWith(std::string option, std::vector<std::string> values, std::string why);
  OptionSpec& Metavar(std::string name);
  OptionSpec& Unset(std::string meaning);
  OptionSpec& Positional();
  OptionSpec& BoolWords(std::string when_true, std::string when_false);
  OptionSpec& Words(std::vector<std::string> w);  // kWord over a std::string field
  OptionSpec& Alias(std::string old_name);
  OptionSpec& Short(char name);
  OptionSpec& PythonName(std::string name);
  OptionSpec& Required();
  OptionSpec& TextRule(std::string rule, std::function<bool(std::string_view)> takes_text);
};

// The name as `face` spells it: "--queue-depth" / "queue_depth"; a switch that is on by default
// is "--no-verify" on the command line.
std::string OptionName(const OptionSpec& s, OptionFace face);
// The name a --config file and the command line take without "--": "no-verify" for such a switch.
std::string CommandLineKey(const OptionSpec& s);

// Text as a face reads it (the command line, a --config file), checked against the spec: the
// value, or Usage naming the option, the rule and the text given. `text` of a switch: true/false,
// on/off, yes/no, 1/0 (what it means for the --no- spelling: "no-verify = true" turns verify off).
Result<OptionValue> ParseOptionText(const OptionSpec& s, std::string_view text, OptionFace face);
// A value of the spec's type inside its range, or Usage naming the option, the rule and the value.
Status CheckOptionValue(const OptionSpec& s, const OptionValue& v, OptionFace face);
// A value as the command line writes it: "8", "4MiB", "0.01", "on", "window", "1,2.5".
std::string OptionValueText(const OptionSpec& s, const OptionValue& v);
// The rule, for help and messages: "1 to 32768", "in [0, 1)", "streaming or managed",
// "1 to 4 comma-separated whole numbers from 1 to 4294967295".
std::string OptionRuleText(const OptionSpec& s);

// `text` quoted for a message: "'...'" with control bytes, DEL and bytes that are not UTF-8 as
// \xNN, and cut after `max` bytes ("..."), so no input can put raw bytes on a terminal.
std::string QuoteUserText(std::string_view text, size_t max = 80);
// The length of the printable character (UTF-8) at `at`, or 0 where the byte there is a control
// byte, DEL, or not the start of a whole UTF-8 sequence.
size_t TextCharLength(std::string_view text, size_t at);

}  // namespace rf
