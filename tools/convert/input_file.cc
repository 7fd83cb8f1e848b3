#include "tools/convert/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace rf::convert {
namespace {

const char* KindOf(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

Status NotRegular(const std::string& path, mode_t mode) {
  return std::move(Status::InvalidArgument(
                       std::string(KindOf(mode)) +
                       ", not a regular file (ringfeed-convert reads its inputs at offsets, some "
                       "twice: write the data to a file first)")
                       .WithPath(path));
}

}  // namespace

Status CheckInputIsRegular(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return Status::Ok();
  return NotRegular(path, st.st_mode);
}

Status CheckInputsAreRegular(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (!p.empty()) RF_RETURN_IF_ERROR(CheckInputIsRegular(p));
  }
  return Status::Ok();
}

Result<File> OpenInputFile(const std::string& path) {
  RF_RETURN_IF_ERROR(CheckInputIsRegular(path));
  // O_NONBLOCK for the open only: a FIFO put at the path since the stat does not wait for a
  // writer here; the fstat below refuses it.
  RF_ASSIGN_OR_RETURN(File f, File::Open(path, O_RDONLY | O_NONBLOCK));
  struct stat st;
  if (::fstat(f.fd(), &st) != 0) return Status::IOError(path, "fstat failed", errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  const int flags = ::fcntl(f.fd(), F_GETFL);
  if (flags < 0 || ::fcntl(f.fd(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    return Status::IOError(path, "cannot open", errno);
  return f;
}

}  // namespace rf::convert
