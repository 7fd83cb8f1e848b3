// File: one owner for one file descriptor, with the blocking helpers the converter and the
// metadata paths use. (Bulk chunk reads go through io/chunk_reader.h instead.)
//
// AtomicOutput: a file written under a temporary name, made durable with fsync and given its
// final name by rename(2) only on Commit(), so a reader never sees a half-written file. A
// destroyed, uncommitted AtomicOutput removes its temporary file.
//
// Thread safety: a File may be used by several threads for ReadAt/WriteAt (pread/pwrite carry
// their own offset); opening, closing and moving are not thread safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/status.h"

namespace rf {

class File {
 public:
  File() = default;
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~File();
  File(File&& o) noexcept;
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // flags as for open(2); mode used with O_CREAT.
  static Result<File> Open(const std::string& path, int flags, mode_t mode = 0644);

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }

  Result<uint64_t> Size() const;
  // Reads exactly n bytes at offset, looping over short reads and EINTR. Reaching end of file
  // early is a Corruption ("truncated"), naming the offset.
  Status ReadAt(void* buf, size_t n, uint64_t offset) const;
  // Reads up to n bytes; returns how many were read (less than n only at end of file).
  Result<size_t> ReadSome(void* buf, size_t n, uint64_t offset) const;
  Status WriteAt(const void* buf, size_t n, uint64_t offset) const;
  Status Sync() const;
  Status Close();

 private:
  int fd_ = -1;
  std::string path_;
};

class AtomicOutput {
 public:
  AtomicOutput() = default;
  ~AtomicOutput();
  AtomicOutput(AtomicOutput&&) noexcept;
  AtomicOutput& operator=(AtomicOutput&&) noexcept;

  // Creates "<path>.tmp.<pid>.<n>" in the same directory as path.
  static Result<AtomicOutput> Create(const std::string& path);

  File& file() { return file_; }
  const std::string& final_path() const { return final_path_; }

  // fsync, close, rename to the final name, fsync the directory.
  Status Commit();

 private:
  void Abandon();  // closes and removes an uncommitted temporary file

  File file_;
  std::string final_path_;
  std::string temp_path_;
  bool committed_ = false;
};

// Does a regular file exist at path?
bool FileExists(const std::string& path);
// Is path a directory (after following symbolic links)?
bool IsDirectory(const std::string& path);

// Refuses an output that is one of the inputs, whatever the names say: two paths are the same
// file when stat(2), which follows symbolic links, gives the same device and inode (so a
// symlink, a hard link or "./x" for "x" is caught). Call it before creating any output: the
// rename that commits an output would otherwise replace the input. Outputs that do not exist
// yet pass; an input that cannot be stat'ed is left to the code that opens it.
// InvalidArgument naming both paths.
Status CheckOutputsAreNotInputs(const std::vector<std::string>& outputs,
                                const std::vector<std::string>& inputs);

}  // namespace rf
