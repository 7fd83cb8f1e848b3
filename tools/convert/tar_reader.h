// ListTar: the regular members of a tar file (POSIX ustar, with GNU long names ('L') and pax
// extended headers' path records ('x')), in order, each with where its header and its data lie,
// from a walk of the headers only (the data is seeked over). Directories, links and global pax
// headers are passed over. A GNU long name of more than 4096 bytes (PATH_MAX) or a pax extended
// header of more than 64 KiB is refused before it is read (a member's path is a few KiB at most;
// a header declaring gigabytes in a sparse file is forged). A malformed or truncated tar is a
// Corruption naming the file and the byte: a header whose checksum does not match, a number that is
// not one, a member running past the file's end, a missing end-of-archive.
//
// Thread safety: none beyond the File's (ReadAt).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/file.h"

namespace rf::convert {

struct TarMember {
  std::string name;
  uint64_t header = 0;  // where its header block starts (after any long-name header of it)
  uint64_t offset = 0;  // where its data starts
  uint64_t size = 0;
};

Result<std::vector<TarMember>> ListTar(const File& tar);

// The writer's half, for tests and fuzz seeds: appends to *tar the ustar header block of a member
// `name` (its first 100 bytes) of `type` ('0' a file, 'L' a GNU long name, 'x' a pax extended
// header) declaring `size` bytes of data (in base-256 from 8 GiB on), its checksum made. The data
// and its padding to 512 bytes are the caller's.
void AppendTarHeader(std::vector<uint8_t>* tar, const std::string& name, uint64_t size,
                     char type = '0');

// A member's name (or any text of a tar) for a one-line message: its bytes below 0x20 and 0x7f
// written as \xNN, so a name holding a newline still makes one line.
std::string PrintableName(std::string_view name);

}  // namespace rf::convert
