#include "io/line_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace rf {

Result<LineOutput> LineOutput::Open(const std::string& path, Start start) {
  RF_ASSIGN_OR_RETURN(const OutputPlan plan, PlanOutput(path));
  LineOutput out;
  if (plan.kind == OutputPlan::Kind::kInPlace) {
    RF_ASSIGN_OR_RETURN(out.file_, OpenOutputInPlace(path));
    out.in_place_ = true;
    return out;
  }
  // Opened by the name given (through any links, as the rename of an AtomicOutput replaces the
  // link's target), so errors name the user's path.
  const int flags = O_RDWR | O_CREAT | (start == Start::kTruncate ? O_TRUNC : 0);
  Result<File> f = File::Open(path, flags, 0644);
  if (!f.ok()) {
    const std::string dir = DirectoryOf(path);
    const int err = f.status().err();
    return Status::IOError(path,
                           err == ENOENT
                               ? "cannot create the file: its directory " + dir + " does not exist"
                               : "cannot open the file for writing",
                           err);
  }
  out.file_ = std::move(f).value();
  RF_ASSIGN_OR_RETURN(out.end_, out.file_.Size());
  if (out.end_ > 0) {
    // A record cut short by a kill: the next starts on a line of its own.
    char last = '\n';
    RF_RETURN_IF_ERROR(out.file_.ReadAt(&last, 1, out.end_ - 1));
    if (last != '\n') RF_RETURN_IF_ERROR(out.Write("\n"));
  }
  return out;
}

Status LineOutput::Keep(Status st) {
  if (!st.ok() && failed_.ok()) failed_ = st;
  return st;
}

Status LineOutput::Write(std::string_view record) {
  RF_RETURN_IF_ERROR(failed_);
  Status st = file_.WriteAt(record.data(), record.size(), end_);
  if (!st.ok()) {
    // Part of the record may be on the file: cut it back to the last whole one. (Shrinking
    // needs no space and passes a file size limit; where it fails too, the error stays the
    // write's.)
    if (!in_place_) (void)::ftruncate(file_.fd(), static_cast<off_t>(end_));
    return Keep(std::move(st));
  }
  end_ += record.size();
  return Status::Ok();
}

Status LineOutput::Sync() {
  RF_RETURN_IF_ERROR(failed_);
  if (in_place_) return Status::Ok();  // a device or FIFO: nothing to make durable
  return Keep(file_.Sync());
}

Status LineOutput::Close() {
  if (!file_.is_open()) return failed_;
  Status st = Sync();
  Status closed = file_.Close();
  if (st.ok()) st = Keep(std::move(closed));
  return failed_.ok() ? st : failed_;
}

}  // namespace rf
