// Checks the ringfeed commands make on the files their command lines name, before any work, so a
// run does not die at its first checkpoint. (Outputs against inputs and each other: io/file.h's
// CheckOutputPaths.)
//
// Thread safety: none needed (they look at the file system only).
#pragma once

#include <string>

#include "core/status.h"

namespace rf {

// That a file can be created beside `path` (given as `flag`): creates and removes a temporary
// file in its directory. IOError naming the directory and errno where it cannot (no such
// directory, no permission, a read-only file system).
Status CheckDirectoryWritable(const std::string& flag, const std::string& path);

}  // namespace rf
