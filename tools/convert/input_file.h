// OpenInputFile: how every converting subcommand opens the files it reads (the files named on
// its command line, and those a directory given holds). Only a regular file is taken: a FIFO, a
// character or block device, a socket or a directory is refused at once, naming the path and
// what it is, without blocking on it (the path is looked at before it is opened, and opened
// O_NONBLOCK so a FIFO that appears in between cannot make the open wait for a writer). The
// converter reads its inputs at offsets, some of them twice (a first pass that finds the dtype,
// the class count or a tar's members, then the conversion), and knows their sizes from the start;
// a pipe can give none of that, and a FIFO nobody writes would block the run forever. Every
// input is opened this way before the command creates any output, so a refused input leaves
// nothing behind.
//
// The descriptor is handed back blocking, as File::Open's. Thread safety: as File::Open's.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/file.h"

namespace rf::convert {

// A missing file is NotFound naming the path; anything but a regular file (after symbolic
// links) is InvalidArgument "<path>: a FIFO, not a regular file (...)".
Result<File> OpenInputFile(const std::string& path);

// The same check without opening: Ok for a regular file (or for nothing at path: the open that
// follows names that), InvalidArgument as above for anything else.
Status CheckInputIsRegular(const std::string& path);
// CheckInputIsRegular for each of a command's inputs (empty paths passed over), so that one that
// is not a regular file is refused before any other is read.
Status CheckInputsAreRegular(const std::vector<std::string>& paths);

}  // namespace rf::convert
