// File: one owner for one file descriptor, with the blocking helpers the converter and the
// metadata paths use. (Bulk chunk reads go through io/chunk_reader.h instead.)
//
// AtomicOutput: a file written under a temporary name, made durable with fsync and given its
// final name by rename(2) only on Commit(), so a reader never sees a half-written file. A
// destroyed, uncommitted AtomicOutput removes its temporary file. Every step is checked (each
// write, the fsync, the close, the rename and the directory's fsync), and every error names the
// final path the user asked for, never the temporary name: a full disk (ENOSPC), a file size
// limit (EFBIG) or EIO fails the output, removes the temporary file and leaves any earlier file
// of the final name byte for byte as it was. WriteFileAtomically writes a whole file this way;
// io/sequential_output.h streams one.
//
// What is at the path already decides how an output goes there (PlanOutput; the rules every
// output of ringfeed obeys, so no output destroys what it should not):
//   - nothing, or a regular file: written under a temporary name and renamed over the path on
//     Commit. Through symbolic links the rename replaces the link's target, so a link stays a
//     link;
//   - a character device or a FIFO (/dev/null, /dev/stdout, a named pipe): written in place, front
//     to back, never replaced or removed. A FIFO that nobody reads is refused rather than waited
//     for; an output that is not written front to back (a dataset) fails on it, naming it;
//   - anything else (a directory, a block device, a socket, a link to nothing): refused.
// CheckOutputPaths applies the same rules to a command's outputs before it starts, and refuses
// two outputs that are one file, or an output that is an input.
//
// Temporary names are "<path>.tmp.<pid>.<n>", each registered while it exists
// (io/live_temporaries.h), so a program that calls RemoveLiveTemporariesOnSignals() removes them
// when a signal kills it. A process killed otherwise (SIGKILL, a crash) leaves its temporary
// behind; the next AtomicOutput of the same final name removes those whose process is
// gone (RemoveStaleTemporaries), never a live process's. The pid is this machine's: on a file
// system shared between machines, a temporary of a live process on another machine whose pid is
// free here would be taken for stale.
//
// Fault injection, for tests only: RINGFEED_FAULTS's `write:` and `fsync:` rules
// (io/fault_plan.h) make every pwrite or fsync of a File whose path (for an AtomicOutput, the
// final path) contains the rule's text fail with its errno (ENOSPC, EIO or EFBIG). The variable
// is read at each call, so a test may set and unset it; unset, the cost is one getenv a write.
//
// Thread safety: a File may be used by several threads for ReadAt/WriteAt (pread/pwrite carry
// their own offset), except a File on a FIFO or device that cannot seek: WriteAt then writes front
// to back, one thread at a time. Opening, closing and moving are not thread safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "io/live_temporaries.h"

namespace rf {

class File {
 public:
  File() = default;
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~File();
  File(File&& o) noexcept;  // (defined out of line: moves the stream position too)
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // flags as for open(2); mode used with O_CREAT.
  static Result<File> Open(const std::string& path, int flags, mode_t mode = 0644);

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }
  // Gives up ownership: returns the descriptor (the caller closes it); the File is closed.
  int Release() { return std::exchange(fd_, -1); }

  Result<uint64_t> Size() const;
  // Reads exactly n bytes at offset, looping over short reads and EINTR. Reaching end of file
  // early is a Corruption ("truncated"), naming the offset.
  Status ReadAt(void* buf, size_t n, uint64_t offset) const;
  // Reads up to n bytes; returns how many were read (less than n only at end of file).
  Result<size_t> ReadSome(void* buf, size_t n, uint64_t offset) const;
  // Writes exactly n bytes at offset. On a descriptor that cannot seek (a FIFO), bytes go in
  // order: offset must be where the previous write ended, or this fails naming the file.
  Status WriteAt(const void* buf, size_t n, uint64_t offset) const;
  Status Sync() const;
  Status Close();

 private:
  int fd_ = -1;
  std::string path_;
  mutable uint64_t stream_end_ = 0;  // where the next write goes, on a descriptor without seek
};

// How an output reaches `path`: see the rules at the top of this file.
struct OutputPlan {
  enum class Kind { kReplace, kInPlace } kind = Kind::kReplace;
  // kReplace: the path the rename replaces (the target of any symbolic links). kInPlace: the path
  // as given (opened through its links).
  std::string path;
};
// InvalidArgument naming the path and what it is when no output may go there.
Result<OutputPlan> PlanOutput(const std::string& path);
// Opens a character device or FIFO (PlanOutput's kInPlace) for writing, front to back. A FIFO
// that nobody reads is refused (IOError, ENXIO) rather than waited for.
Result<File> OpenOutputInPlace(const std::string& path);

class AtomicOutput {
 public:
  AtomicOutput() = default;
  ~AtomicOutput();
  AtomicOutput(AtomicOutput&&) noexcept;
  AtomicOutput& operator=(AtomicOutput&&) noexcept;

  enum class Stale { kRemove, kLeave };
  // Creates "<path>.tmp.<pid>.<n>" in the same directory as path, first removing that name's
  // stale temporaries (RemoveStaleTemporaries), unless `stale` is kLeave: a caller creating many
  // outputs of one family (a dataset's shards) scans the directory once itself. Its file() names
  // path in its errors. Where path is a character device or a FIFO the output is that file,
  // opened in place; where no output may go (PlanOutput), InvalidArgument.
  static Result<AtomicOutput> Create(const std::string& path, Stale stale = Stale::kRemove);

  File& file() { return file_; }
  const std::string& final_path() const { return final_path_; }

  // fsync and close: everything that can fail for lack of space or a bad disk, with the file
  // still under its temporary name. Outputs committed together (a dataset's shards) prepare
  // them all before renaming any.
  Status Prepare();
  // Prepare() if not done yet, rename to the final name, fsync the directory. After a failed
  // Prepare the output cannot be committed; it is removed on destruction. (In place: Prepare and
  // Commit only close it; nothing is ever removed.)
  Status Commit();
  bool in_place() const { return in_place_; }

 private:
  void Abandon();  // closes and removes an uncommitted temporary file

  File file_;
  std::string final_path_;
  std::string temp_path_;
  LiveTemporary live_;     // temp_path_ while it may exist (io/live_temporaries.h)
  std::string rename_to_;  // final_path_, or the file its symbolic links lead to
  bool prepared_ = false;
  bool committed_ = false;
  bool in_place_ = false;
};

// Writes n bytes as the whole file at path through an AtomicOutput: written, fsynced, closed and
// renamed, or (on any error, naming path) not at all.
Status WriteFileAtomically(const std::string& path, const void* data, size_t n);
inline Status WriteFileAtomically(const std::string& path, std::string_view text) {
  return WriteFileAtomically(path, text.data(), text.size());
}

// Removes, in directory dir, the temporary files "<NAME>.tmp.<pid>.<n>" of AtomicOutputs whose
// process is gone, for every NAME where is_ours(NAME): no process has that pid, or the process
// that has it started after the file was last written (the pid was reused). A live writer's
// temporaries, and this process's, are kept. Returns the paths removed. Errors are ignored: a
// temporary that cannot be removed is as harmless as before.
std::vector<std::string> RemoveStaleTemporaries(
    const std::string& dir, const std::function<bool(std::string_view name)>& is_ours);
// The directory part of a path ("." for a bare name) and the name part.
std::string DirectoryOf(const std::string& path);
std::string BaseNameOf(const std::string& path);

// Do a and b name the same file, by any names? The same device and inode where both exist (after
// symbolic links); where neither exists yet, the same name in the same directory (after the
// directory's links).
bool IsSameFile(const std::string& a, const std::string& b);

// Does a regular file exist at path?
// The Corruption of a read of n bytes at `offset` of `path` that found only `got` before the file
// ended (File::ReadAt's, and every reader's that reads through another source).
Status TruncatedRead(const std::string& path, size_t n, size_t got, uint64_t offset);
bool FileExists(const std::string& path);
// Is path a directory (after following symbolic links)?
bool IsDirectory(const std::string& path);
// Is path itself a symbolic link (not followed)?
bool IsSymbolicLink(const std::string& path);
// What is at path (after following symbolic links), for messages: "a regular file", "a
// directory", "a character device", "a block device", "a FIFO", "a socket"; null where nothing is.
const char* FileKindName(const std::string& path);

// A file a command names, and how it named it: the flag ("--metrics", "-o") or an empty flag for
// files a command derives itself (a dataset's shards).
struct NamedPath {
  std::string flag;
  std::string path;
};

// A command's outputs against the rules above, before it creates any (so a run is refused at its
// start, not after hours): Usage naming the flags and files where
//   - an output may not go where it points (PlanOutput);
//   - two outputs are one file, by any names: the same device and inode where it exists, the same
//     directory and name where it does not yet (two outputs written in place, such as /dev/null
//     twice, may share it: nothing is replaced);
//   - an output is one of the inputs, whatever the names say (stat(2) follows symbolic links, so a
//     symlink, a hard link or "./x" for "x" is caught). The rename that commits an output would
//     otherwise replace the input. An input that cannot be stat'ed is left to the code that
//     opens it.
Status CheckOutputPaths(const std::vector<NamedPath>& outputs,
                        const std::vector<NamedPath>& inputs);

}  // namespace rf
