// The ringfeed subcommands. Each parses its own options, does its work, and hands main how it
// ended; only main turns that into the exit code and the one line on stderr:
//   0  success (--help included)
//   1  a data, file, I/O or run-time error (a damaged chunk or checkpoint, a missing file)
//   2  a usage error: Status::Usage (a bad or contradictory flag, flags that disagree with the
//      files they name, an output that is an input, what the option tables' parser refuses),
//      an unknown command
#pragma once

#include "core/status.h"

namespace rf {

struct CommandStatus {
  Status status;
  // The line's first words: "ringfeed", or "ringfeed train" / "ringfeed read" for errors in the
  // command line's own syntax (the parser's, an unreadable --config, a missing DATASET).
  const char* who = "ringfeed";
};

// argv[0] is the command's name ("read", "train").
CommandStatus RunReadCommand(int argc, char** argv);
CommandStatus RunTrainCommand(int argc, char** argv);

}  // namespace rf
