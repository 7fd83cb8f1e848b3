// The subcommands of ringfeed-convert. Each reads its command line through the option tables
// (tools/convert/convert_options.h: parsed, checked, --help made from the declarations), does its
// work through the library, and writes its report lines to `out`.
//
// Errors are the returned Status, which main() turns into its exit code: Status::Usage (exit 2)
// for a command line that cannot be run, naming the option (what the table refuses also names the
// subcommand: "idx: --shards must be ..."), and for flags that only the input shows to be wrong
// (--classes, --chunk-size against the sample's size); any other failure of the work (exit 1),
// naming file and offset where it applies. Nothing here throws.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf::convert {

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
