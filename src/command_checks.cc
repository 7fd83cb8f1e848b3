#include "src/command_checks.h"

#include <unistd.h>

#include <cerrno>

#include "io/file.h"

namespace rf {

Status CheckOutputIsNotInput(const std::string& output_flag, const std::string& output,
                             const std::string& input_flag,
                             const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    if (CheckOutputsAreNotInputs({output}, {in}).ok()) continue;
    std::string why = output_flag + " " + output + " is " + input_flag + "'s file " + in;
    if (output != in) why += " (the same file by another name)";
    return Status::Usage(why + "; refusing to overwrite an input");
  }
  return Status::Ok();
}

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
