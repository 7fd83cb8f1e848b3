// The subcommands of ringfeed-convert. Each parses its own command line with
// Boost.Program_options (and prints its options with their defaults for --help), does its work
// through the library, and writes its report lines to `out`.
//
// Errors come back two ways, and main() turns each into its exit code: a command line that
// cannot be run throws UsageError (exit 2); a failure of the work itself is the returned Status
// (exit 1), naming file and offset where it applies, except Status::Usage (exit 2): flags that
// only the input shows to be wrong (--classes, --chunk-size against the sample's size).
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf::convert {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// args: everything after the program name; args[0] is the subcommand.
Status RunCommand(const std::vector<std::string>& args, std::ostream& out);

// The converting subcommands (convert_commands.cc) and the ones that read a dataset
// (dataset_commands.cc); args are those after the subcommand's name.
Status RunIdxCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunCifarCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunNpyCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunRawCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunPredecessorCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunSyntheticCommand(const std::vector<std::string>& args, std::ostream& out);
// The token corpus subcommands (token_commands.cc).
Status RunMegatronCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunNpyDocsCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunJsonlCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunTextCommand(const std::vector<std::string>& args, std::ostream& out);
// JPEG images (image_commands.cc).
Status RunImagesCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunExportCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunRecompressCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunInspectCommand(const std::vector<std::string>& args, std::ostream& out);
Status RunVerifyCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace rf::convert
