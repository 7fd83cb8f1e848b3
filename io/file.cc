#include "io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "io/fault_plan.h"

namespace rf {
namespace {

// The errno the fault plan in force (io/fault_plan.h) injects into `op` on `path`, or 0. Read at
// each call, so a test may plant and remove faults; with none, the cost is a lock and a getenv.
int InjectedError(FileFault::Op op, const std::string& path) {
  Result<std::optional<FaultPlan>> plan = FaultPlanFromEnv();
  return plan.ok() && plan->has_value() ? (*plan)->FileError(op, path) : 0;
}

// When the process `pid` started, in seconds since the epoch (from /proc), if it can be told.
std::optional<time_t> ProcessStartTime(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return std::nullopt;
  const size_t paren = line.rfind(')');  // the command name may hold spaces and ')'
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {  // field 22: start time in clock ticks
    if (i < 22) continue;
    std::ifstream proc_stat("/proc/stat");
    std::string key;
    long long boot = -1;
    while (proc_stat >> key) {
      if (key == "btime" && (proc_stat >> boot)) break;
    }
    const long ticks = ::sysconf(_SC_CLK_TCK);
    if (boot < 0 || ticks <= 0) return std::nullopt;
    return static_cast<time_t>(boot + std::stoll(field) / ticks);
  }
  return std::nullopt;
}

// Whether the writer of a temporary file (its pid, the file's last write) is gone: no such
// process, or a process that started after the file was last written (so the pid was reused).
bool WriterIsGone(pid_t pid, time_t written) {
  if (pid <= 0 || pid == ::getpid()) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::optional<time_t> started = ProcessStartTime(pid);
  return started && *started > written + 2;  // slack for the clocks' rounding
}

// "<NAME>.tmp.<pid>.<n>" -> NAME and pid; false for any other name.
bool ParseTemporaryName(std::string_view name, std::string_view* final_name, pid_t* pid) {
  const size_t tmp = name.rfind(".tmp.");
  if (tmp == std::string_view::npos || tmp == 0) return false;
  const std::string_view rest = name.substr(tmp + 5);
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == rest.size()) return false;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (i != dot && (rest[i] < '0' || rest[i] > '9')) return false;
  }
  if (dot > 9) return false;  // not a pid
  *final_name = name.substr(0, tmp);
  *pid = static_cast<pid_t>(std::stol(std::string(rest.substr(0, dot))));
  return true;
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseNameOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> RemoveStaleTemporaries(
    const std::string& dir, const std::function<bool(std::string_view name)>& is_ours) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return removed;
  while (const dirent* e = ::readdir(d)) {
    std::string_view final_name;
    pid_t pid = 0;
    if (!ParseTemporaryName(e->d_name, &final_name, &pid) || !is_ours(final_name)) continue;
    const std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!WriterIsGone(pid, st.st_mtime)) continue;
    if (::unlink(path.c_str()) == 0) removed.push_back(path);
  }
  ::closedir(d);
  return removed;
}

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
  if (const int injected = InjectedError(FileFault::Op::kWrite, path_); injected != 0 && n > 0)
    return std::move(Status::IOError(path_, "write failed", injected).WithOffset(offset));
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pwrite(fd_, static_cast<const char*>(buf) + done, n - done,
                         static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::move(Status::IOError(path_, "write failed", errno).WithOffset(offset + done));
    }
    // pwrite(2) writing nothing for a non-empty buffer makes no progress: a full device that
    // said so without an errno. Looping would spin.
    if (r == 0) {
      return std::move(Status::IOError(path_, "write failed", ENOSPC).WithOffset(offset + done));
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status File::Sync() const {
  if (const int injected = InjectedError(FileFault::Op::kFsync, path_); injected != 0)
    return Status::IOError(path_, "fsync failed", injected);
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
      prepared_(o.prepared_),
      committed_(o.committed_) {}

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& o) noexcept {
  if (this != &o) {
    Abandon();
    file_ = std::move(o.file_);
    final_path_ = std::move(o.final_path_);
    temp_path_ = std::exchange(o.temp_path_, {});
    prepared_ = o.prepared_;
    committed_ = o.committed_;
  }
  return *this;
}

Result<AtomicOutput> AtomicOutput::Create(const std::string& path, Stale stale) {
  static std::atomic<unsigned> counter{0};
  const std::string dir = DirectoryOf(path);
  const std::string name = BaseNameOf(path);
  if (stale == Stale::kRemove)
    RemoveStaleTemporaries(dir, [&name](std::string_view n) { return n == name; });
  AtomicOutput out;
  out.final_path_ = path;
  out.temp_path_ = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  Result<File> f = File::Open(out.temp_path_, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (!f.ok()) {
    // Named by the user's path: the temporary name is ours, not something they asked for.
    const int err = f.status().err();
    return Status::IOError(path,
                           err == ENOENT
                               ? "cannot create the file: its directory " + dir + " does not exist"
                               : "cannot create the file in " + dir,
                           err);
  }
  // The file carries the user's path, so its write, fsync and close errors name that.
  out.file_ = File(f->Release(), path);
  return out;
}

Status AtomicOutput::Prepare() {
  if (prepared_) return Status::Ok();
  // Closed without being prepared: an earlier Prepare failed. Its fsync error is not reported
  // twice by the kernel, so a retry could not be trusted.
  if (temp_path_.empty() || !file_.is_open())
    return Status::IOError(final_path_, "cannot commit: an earlier step of writing it failed");
  Status st = file_.Sync();
  if (st.ok()) {
    st = file_.Close();
  } else {
    (void)file_.Close();
  }
  RF_RETURN_IF_ERROR(st);
  prepared_ = true;
  return Status::Ok();
}

Status AtomicOutput::Commit() {
  if (committed_) return Status::Ok();
  RF_RETURN_IF_ERROR(Prepare());
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
    return Status::IOError(final_path_, "cannot rename " + temp_path_ + " into place", errno);
  committed_ = true;
  // Make the rename itself durable.
  const std::string dir = DirectoryOf(final_path_);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Status::IOError(final_path_, "cannot open its directory to fsync", errno);
  const int synced = ::fsync(dfd);
  const int sync_errno = errno;
  ::close(dfd);
  // EINVAL: a file system that cannot fsync directories (the rename is as durable as it gets).
  if (synced != 0 && sync_errno != EINVAL) {
    return Status::IOError(final_path_, "renamed into place, but fsync of its directory failed",
                           sync_errno);
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const void* data, size_t n) {
  RF_ASSIGN_OR_RETURN(AtomicOutput out, AtomicOutput::Create(path));
  RF_RETURN_IF_ERROR(out.file().WriteAt(data, n, 0));
  return out.Commit();
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
