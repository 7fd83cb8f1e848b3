#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <utility>

namespace rf {

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File::File(File&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
  }
  return *this;
}

Result<File> File::Open(const std::string& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return Status::NotFound(path, "cannot open", e);
    return Status::IOError(path, "cannot open", e);
  }
  return File(fd, path);
}

Result<uint64_t> File::Size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::IOError(path_, "fstat failed", errno);
  return static_cast<uint64_t>(st.st_size);
}

Result<size_t> File::ReadSome(void* buf, size_t n, uint64_t offset) const {
  size_t done = 0;
  while (done < n) {
    ssize_t r =
        ::pread(fd_, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::move(Status::IOError(path_, "read failed", errno).WithOffset(offset + done));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status File::ReadAt(void* buf, size_t n, uint64_t offset) const {
  RF_ASSIGN_OR_RETURN(size_t got, ReadSome(buf, n, offset));
  if (got < n) {
    return std::move(Status::Corruption(path_, "file is truncated: expected " + std::to_string(n) +
                                                   " bytes, found " + std::to_string(got))
                         .WithOffset(offset + got));
  }
  return Status::Ok();
}

Status File::WriteAt(const void* buf, size_t n, uint64_t offset) const {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pwrite(fd_, static_cast<const char*>(buf) + done, n - done,
                         static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::move(Status::IOError(path_, "write failed", errno).WithOffset(offset + done));
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status File::Sync() const {
  if (::fsync(fd_) != 0) return Status::IOError(path_, "fsync failed", errno);
  return Status::Ok();
}

Status File::Close() {
  if (fd_ < 0) return Status::Ok();
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return Status::IOError(path_, "close failed", errno);
  return Status::Ok();
}

AtomicOutput::~AtomicOutput() { Abandon(); }

void AtomicOutput::Abandon() {
  if (!committed_ && !temp_path_.empty()) {
    (void)file_.Close();
    ::unlink(temp_path_.c_str());
  }
  temp_path_.clear();
}

AtomicOutput::AtomicOutput(AtomicOutput&& o) noexcept
    : file_(std::move(o.file_)),
      final_path_(std::move(o.final_path_)),
      temp_path_(std::exchange(o.temp_path_, {})),
      committed_(o.committed_) {}

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& o) noexcept {
  if (this != &o) {
    Abandon();
    file_ = std::move(o.file_);
    final_path_ = std::move(o.final_path_);
    temp_path_ = std::exchange(o.temp_path_, {});
    committed_ = o.committed_;
  }
  return *this;
}

Result<AtomicOutput> AtomicOutput::Create(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  AtomicOutput out;
  out.final_path_ = path;
  out.temp_path_ = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  Result<File> f = File::Open(out.temp_path_, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (!f.ok()) {
    // Named by the user's path: the temporary name is ours, not something they asked for.
    std::string dir = ".";
    if (auto slash = path.rfind('/'); slash != std::string::npos)
      dir = slash == 0 ? "/" : path.substr(0, slash);
    const int err = f.status().err();
    return Status::IOError(path,
                           err == ENOENT
                               ? "cannot create the file: its directory " + dir + " does not exist"
                               : "cannot create the file in " + dir,
                           err);
  }
  out.file_ = std::move(f).value();
  return out;
}

Status AtomicOutput::Commit() {
  RF_RETURN_IF_ERROR(file_.Sync());
  RF_RETURN_IF_ERROR(file_.Close());
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
    return Status::IOError(final_path_, "cannot rename " + temp_path_ + " into place", errno);
  committed_ = true;
  // Make the rename itself durable.
  std::string dir = ".";
  if (auto slash = final_path_.rfind('/'); slash != std::string::npos)
    dir = slash == 0 ? "/" : final_path_.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status CheckOutputsAreNotInputs(const std::vector<std::string>& outputs,
                                const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    struct stat is;
    if (::stat(in.c_str(), &is) != 0) continue;
    for (const std::string& out : outputs) {
      struct stat os;
      if (::stat(out.c_str(), &os) != 0) continue;
      if (os.st_dev == is.st_dev && os.st_ino == is.st_ino) {
        std::string why = "output " + out + " is the input " + in;
        if (out != in) why += " (the same file by another name)";
        return Status::InvalidArgument(why + "; refusing to replace an input: choose another -o");
      }
    }
  }
  return Status::Ok();
}

}  // namespace rf
