#include "src/command_checks.h"

#include <unistd.h>

#include <cerrno>

#include "io/file.h"

namespace rf {

Status CheckDirectoryWritable(const std::string& flag, const std::string& path) {
  const std::string dir = DirectoryOf(path);
  std::string probe = dir + "/.ringfeed-write-check.XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return Status::IOError(dir, "cannot create files in the directory of " + flag + " " + path,
                           errno);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

}  // namespace rf
