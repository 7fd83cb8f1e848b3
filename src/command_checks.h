// Checks the ringfeed commands make on the files their command lines name, before any work, so a
// run neither overwrites its own input nor dies at its first checkpoint.
//
// Thread safety: none needed (they look at the file system only).
#pragma once

#include <string>
#include <vector>

#include "io/status.h"

namespace rf {

// Usage, naming both flags and files, when `output` (given as `output_flag`) is the same file as
// one of `inputs` (the files of `input_flag`), whatever the names: same device and inode, through
// symbolic links, hard links or another spelling (io/file.h's CheckOutputsAreNotInputs). An
// output that does not exist yet passes.
Status CheckOutputIsNotInput(const std::string& output_flag, const std::string& output,
                             const std::string& input_flag, const std::vector<std::string>& inputs);

// That a file can be created beside `path` (given as `flag`): creates and removes a temporary
// file in its directory. IOError naming the directory and errno where it cannot (no such
// directory, no permission, a read-only file system).
Status CheckDirectoryWritable(const std::string& flag, const std::string& path);

}  // namespace rf
