// A program's command line and --config file, read by the specs of the options it takes
// (options/option_spec.h), and its --help made from them. The one command-line parser of both
// programs: ringfeed (train, read) and every ringfeed-convert subcommand.
//
// Why the tables' own parser, not Boost.Program_options under the tables (ringfeed-convert used
// Boost until issue 41): what a value may be is the declaration's, and this parser reads each
// value by its declaration directly, so every face takes and refuses by one rule. Under Boost the
// tables would have had to declare every value to Boost as a string and parse it again here:
// Boost's own typed values were the bugs the tables fixed (an unsigned option read "-1" as
// 2^64 - 1, options/unsigned_flags.h patched that afterwards; a value starting with '-', such as
// --gpu -1, was taken for an option; its messages could not name the rule nor quote the text
// safely). What Boost would have added is here in a few lines (-o, several values of one option,
// options that must be given), and what the tables need Boost does not do: exact one-line errors
// naming option, rule and text (QuoteUserText), --config files with the command line's names,
// --no-NAME switches, byte sizes, conditions (an idle option refused), and the same declarations
// read by Python's keyword arguments. One parser also means one dependency less to build, carry
// to the GPU machines and link into the wheel. Boost's guessing of abbreviated names (--comp for
// --compress) is not kept: a name is given whole.
//
// The command line: `--name value`, `--name=value`, a switch alone (`--drop-last`,
// `--no-verify`) or with a value (`--drop-last=false`), `--help` / `-h`, and a bare word for the
// one option declared Positional (`ringfeed train DATA`); after `--` every word is a bare word.
// A value may start with '-' (`--gpu -1`), so `--lr -1` reaches the range check instead of being
// read as an option. Each option at most once.
//
// A --config FILE (where the program declares an option named "config"): one `name = value` a
// line, with the command line's names (`no-verify = true`), `#` comment lines and blank lines;
// what it sets counts as given (an option that would do nothing is refused from there too), and
// the command line wins where both set one. The file is read once, at most kMaxConfigBytes of
// text (no NUL, no control bytes but tab and line ends, UTF-8): a device such as /dev/zero or a
// binary file is refused before its content is used, and a directory is named as one.
//
// Errors: Usage naming the option, the rule and the text given (quoted with QuoteUserText), and
// for a --config file its path and line.
//
// Thread safety: functions of their arguments (and, for --config, of the file).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "options/option_spec.h"

namespace rf {

inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

struct ParsedOptions {
  bool help = false;
  // Each option given, by spec name, with its value (checked against the spec); the command
  // line's where it and the --config file both gave one.
  std::map<std::string, OptionValue> values;
  std::set<std::string> given;  // the keys of `values`
};

Result<ParsedOptions> ParseCommandLine(const std::vector<OptionSpec>& specs,
                                       const std::vector<std::string>& args);

// The options a --config file's `text` sets (the file named `path` in messages), added to `out`
// where the command line (out->given) did not set them; Usage naming the path and line of a line
// that is not `name = value`, an unknown name, a name given twice in the file, or a bad value.
Status ParseConfigText(const std::vector<OptionSpec>& specs, const std::string& path,
                       const std::string& text, ParsedOptions* out);

// A --config file's text: Usage naming the file where it cannot be read, is a directory, holds
// more than kMaxConfigBytes, or is not text.
Result<std::string> ReadConfigText(const std::string& path);

// The options' help: each option with its value's form, what it does, its range, its default and
// where it does something (a condition on an option of `specs`), wrapped at 100 columns.
std::string FormatOptionsHelp(const std::vector<OptionSpec>& specs);

}  // namespace rf
