// LineOutput: a log written in place as a run goes, one record (one or more whole lines) a
// write(2), so that a process killed at any point leaves every record written before it on the
// file, and a run that resumes can append to it. `ringfeed train`'s --metrics (a record: one JSON
// line) and --dump-order (a record: a batch's sample indices, or a "# ..." line) go through it.
//
// What a crash can lose:
//   - the process killed (SIGKILL, an abort, the OOM killer): at most the record being written.
//     Each record is handed to the kernel in one write, never held in a buffer here, so every
//     earlier record is in the page cache and stays. A kill during the write itself may leave a
//     prefix of that record (the file then ends mid-line); Open(..., kAppend) starts the next
//     record on a fresh line.
//   - the machine (a power loss, a kernel panic): what the kernel had not written back. Sync()
//     makes everything so far durable; `ringfeed train` syncs before each checkpoint, so the log
//     holds at least what happened up to the checkpoint a resume starts from.
//
// A failed write (ENOSPC, EFBIG, EIO) truncates the file back to the end of the last whole record
// (where the file can be truncated), so an error never leaves half a line; the error names the
// path and is returned again by every later Write and by Close (as io/sequential_output.h does).
//
// Where the output goes follows io/file.h's rules (PlanOutput): a regular file (or a link to one)
// is written in place, a character device or FIFO too (a FIFO nobody reads is refused), anything
// else refused. Unlike an AtomicOutput nothing is renamed: whether an existing file may be
// replaced (kTruncate) or continued (kAppend) is the caller's decision, made before opening
// (src/train_config.h's CheckRunLogTargets).
//
// Thread safety: none. The object owns its descriptor (closed in the destructor, unsynced).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "io/file.h"

namespace rf {

class LineOutput {
 public:
  // kTruncate: the file starts empty (an existing one is cut to nothing); kAppend: records go
  // after what the file holds, from a fresh line.
  enum class Start { kTruncate, kAppend };
  static Result<LineOutput> Open(const std::string& path, Start start);

  LineOutput() = default;
  LineOutput(LineOutput&&) noexcept = default;
  LineOutput& operator=(LineOutput&&) noexcept = default;

  // Writes `record` (whole lines: it ends with '\n') in one call. The first failure is kept.
  Status Write(std::string_view record);
  // fsync (a no-op on a device or FIFO). Errors are kept as Write's.
  Status Sync();
  // Sync and close; the first error of the output's life, if any.
  Status Close();

  const std::string& path() const { return file_.path(); }
  // The file's size as this output sees it: where the next record goes.
  uint64_t bytes() const { return end_; }

 private:
  Status Keep(Status st);

  File file_;
  uint64_t end_ = 0;       // the end of the last whole record
  bool in_place_ = false;  // a device or FIFO: nothing to truncate or sync
  Status failed_;
};

}  // namespace rf
