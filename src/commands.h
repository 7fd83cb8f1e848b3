// The ringfeed subcommands. Each parses its own options and returns the process exit code:
// 0 success, 1 a data/file/runtime error (one line on stderr), 2 a usage error.
#pragma once

namespace rf {

int RunReadCommand(int argc, char** argv);
int RunTrainCommand(int argc, char** argv);

}  // namespace rf
