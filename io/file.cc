#include "io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
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

File::File(File&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      stream_end_(std::exchange(o.stream_end_, 0)) {}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    stream_end_ = std::exchange(o.stream_end_, 0);
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
  return got < n ? TruncatedRead(path_, n, got, offset) : Status::Ok();
}

Status TruncatedRead(const std::string& path, size_t n, size_t got, uint64_t offset) {
  return std::move(Status::Corruption(path, "file is truncated: expected " + std::to_string(n) +
                                                " bytes, found " + std::to_string(got))
                       .WithOffset(offset + got));
}

Status File::WriteAt(const void* buf, size_t n, uint64_t offset) const {
  if (const int injected = InjectedError(FileFault::Op::kWrite, path_); injected != 0 && n > 0)
    return std::move(Status::IOError(path_, "write failed", injected).WithOffset(offset));
  size_t done = 0;
  while (done < n) {
    const char* from = static_cast<const char*>(buf) + done;
    ssize_t r = ::pwrite(fd_, from, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == ESPIPE) {
      // A FIFO (an output written in place): bytes can only follow the ones before them.
      if (offset + done != stream_end_) {
        return std::move(Status::IOError(path_,
                                         "cannot write this output to a FIFO: it is not written "
                                         "front to back (give a regular file)")
                             .WithOffset(offset + done));
      }
      r = ::write(fd_, from, n - done);
      if (r > 0) stream_end_ += static_cast<uint64_t>(r);
    }
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
  if (in_place_) {
    (void)file_.Close();  // the file is the user's (a device, a FIFO): never removed
  } else if (!committed_ && !temp_path_.empty()) {
    (void)file_.Close();
    ::unlink(temp_path_.c_str());
  }
  live_.Forget();
  temp_path_.clear();
}

AtomicOutput::AtomicOutput(AtomicOutput&& o) noexcept
    : file_(std::move(o.file_)),
      final_path_(std::move(o.final_path_)),
      temp_path_(std::exchange(o.temp_path_, {})),
      live_(std::move(o.live_)),
      rename_to_(std::move(o.rename_to_)),
      prepared_(o.prepared_),
      committed_(o.committed_),
      in_place_(o.in_place_) {}

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& o) noexcept {
  if (this != &o) {
    Abandon();
    file_ = std::move(o.file_);
    final_path_ = std::move(o.final_path_);
    temp_path_ = std::exchange(o.temp_path_, {});
    live_ = std::move(o.live_);
    rename_to_ = std::move(o.rename_to_);
    prepared_ = o.prepared_;
    committed_ = o.committed_;
    in_place_ = o.in_place_;
  }
  return *this;
}

Result<OutputPlan> PlanOutput(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return OutputPlan{OutputPlan::Kind::kReplace, path};
    return Status::IOError(path, "cannot look at the output's path", errno);
  }
  const bool link = S_ISLNK(st.st_mode);
  if (link && ::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(path + " is a symbolic link to nothing (" +
                                   std::strerror(errno) +
                                   "); refusing to replace it: give the file itself");
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
    return OutputPlan{OutputPlan::Kind::kInPlace, path};
  if (S_ISREG(st.st_mode)) {
    if (!link) return OutputPlan{OutputPlan::Kind::kReplace, path};
    char* target = ::realpath(path.c_str(), nullptr);
    if (target == nullptr) return Status::IOError(path, "cannot resolve the symbolic link", errno);
    std::string resolved(target);
    std::free(target);
    return OutputPlan{OutputPlan::Kind::kReplace, std::move(resolved)};
  }
  const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  return Status::InvalidArgument(path + " is " + what +
                                 "; refusing to write an output over it: give a file name");
}

Result<File> OpenOutputInPlace(const std::string& path) {
  // O_NONBLOCK only for the open: a FIFO without a reader fails (ENXIO) instead of blocking.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status::IOError(path,
                           err == ENXIO ? "is a FIFO that nobody reads; refusing to wait for one"
                                        : "cannot open the output in place",
                           err);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError(path, "cannot open the output in place", err);
  }
  return File(fd, path);
}

Result<AtomicOutput> AtomicOutput::Create(const std::string& given, Stale stale) {
  static std::atomic<unsigned> counter{0};
  RF_ASSIGN_OR_RETURN(const OutputPlan plan, PlanOutput(given));
  AtomicOutput out;
  out.final_path_ = given;
  if (plan.kind == OutputPlan::Kind::kInPlace) {
    RF_ASSIGN_OR_RETURN(out.file_, OpenOutputInPlace(given));
    out.in_place_ = true;
    return out;
  }
  // The rename replaces the file itself, not a symbolic link to it; errors still name `given`.
  const std::string& path = plan.path;
  const std::string dir = DirectoryOf(path);
  const std::string name = BaseNameOf(path);
  if (stale == Stale::kRemove)
    RemoveStaleTemporaries(dir, [&name](std::string_view n) { return n == name; });
  out.temp_path_ = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  out.live_ = LiveTemporary(out.temp_path_);  // before it exists: a signal from here removes it
  Result<File> f = File::Open(out.temp_path_, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (!f.ok()) {
    // Named by the user's path: the temporary name is ours, not something they asked for.
    const int err = f.status().err();
    return Status::IOError(given,
                           err == ENOENT
                               ? "cannot create the file: its directory " + dir + " does not exist"
                               : "cannot create the file in " + dir,
                           err);
  }
  // The file carries the user's path, so its write, fsync and close errors name that.
  out.file_ = File(f->Release(), given);
  out.rename_to_ = path;
  return out;
}

Status AtomicOutput::Prepare() {
  if (prepared_) return Status::Ok();
  // Closed without being prepared: an earlier Prepare failed. Its fsync error is not reported
  // twice by the kernel, so a retry could not be trusted.
  if ((temp_path_.empty() && !in_place_) || !file_.is_open())
    return Status::IOError(final_path_, "cannot commit: an earlier step of writing it failed");
  Status st = file_.Sync();
  // A device or FIFO written in place: nothing to make durable (fsync says EINVAL there).
  if (in_place_ && !st.ok() && st.err() == EINVAL) st = Status::Ok();
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
  if (in_place_) {
    committed_ = true;
    return Status::Ok();
  }
  if (::rename(temp_path_.c_str(), rename_to_.c_str()) != 0)
    return Status::IOError(final_path_, "cannot rename " + temp_path_ + " into place", errno);
  committed_ = true;
  live_.Forget();
  // Make the rename itself durable.
  const std::string dir = DirectoryOf(rename_to_);
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

const char* FileKindName(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return nullptr;
  return S_ISREG(st.st_mode)    ? "a regular file"
         : S_ISDIR(st.st_mode)  ? "a directory"
         : S_ISCHR(st.st_mode)  ? "a character device"
         : S_ISBLK(st.st_mode)  ? "a block device"
         : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISSOCK(st.st_mode) ? "a socket"
                                : "not a regular file";
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsSymbolicLink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool IsSameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea || eb) return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (BaseNameOf(a) != BaseNameOf(b)) return false;
  char* da = ::realpath(DirectoryOf(a).c_str(), nullptr);
  char* db = ::realpath(DirectoryOf(b).c_str(), nullptr);
  const bool same =
      da != nullptr && db != nullptr ? std::strcmp(da, db) == 0 : DirectoryOf(a) == DirectoryOf(b);
  std::free(da);
  std::free(db);
  return same;
}

namespace {

std::string Named(const NamedPath& p) {
  return p.flag.empty() ? "output " + p.path : p.flag + " " + p.path;
}

}  // namespace

Status CheckOutputPaths(const std::vector<NamedPath>& outputs,
                        const std::vector<NamedPath>& inputs) {
  std::vector<OutputPlan> plans;
  for (const NamedPath& out : outputs) {
    Result<OutputPlan> plan = PlanOutput(out.path);
    if (!plan.ok()) {
      return Status::Usage((out.flag.empty() ? "" : out.flag + ": ") + plan.status().message());
    }
    plans.push_back(*plan);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (plans[i].kind == OutputPlan::Kind::kInPlace &&
          plans[j].kind == OutputPlan::Kind::kInPlace) {
        continue;
      }
      if (!IsSameFile(outputs[i].path, outputs[j].path)) continue;
      std::string why = Named(outputs[i]) + " and " + Named(outputs[j]) + " are the same file";
      if (outputs[i].path != outputs[j].path) why += " (by another name)";
      return Status::Usage(why + "; one would replace the other: give each its own file");
    }
  }
  for (const NamedPath& in : inputs) {
    struct stat is;
    if (::stat(in.path.c_str(), &is) != 0) continue;
    for (const NamedPath& out : outputs) {
      struct stat os;
      if (::stat(out.path.c_str(), &os) != 0) continue;
      if (os.st_dev != is.st_dev || os.st_ino != is.st_ino) continue;
      const std::string other = out.path != in.path ? " (the same file by another name)" : "";
      if (out.flag.empty()) {
        return Status::Usage("output " + out.path + " is the input " + in.path + other +
                             "; refusing to replace an input: choose another -o");
      }
      return Status::Usage(out.flag + " " + out.path + " is " +
                           (in.flag.empty() ? "the input " : in.flag + "'s file ") + in.path +
                           other + "; refusing to overwrite an input");
    }
  }
  return Status::Ok();
}

}  // namespace rf
