// Test helpers shared by every suite.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace rf::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<uint8_t> ReadAll(const std::string& path);
void WriteAll(const std::string& path, const void* data, size_t n);
inline void WriteAll(const std::string& path, const std::vector<uint8_t>& d) {
  WriteAll(path, d.data(), d.size());
}
// The names in a directory, sorted.
std::vector<std::string> FilesIn(const std::string& dir);
// Flips one bit of the byte at `offset` in a file.
void FlipBit(const std::string& path, uint64_t offset, int bit = 0);
void Truncate(const std::string& path, uint64_t size);

// Runs a shell command; returns its exit status and fills `output` with stdout+stderr.
int RunCommand(const std::string& cmd, std::string* output);
// `cmd` (a command line for RunCommand) run with the size of every regular file it writes
// limited to `bytes` (RLIMIT_FSIZE through prlimit(1), SIGXFSZ ignored): a write past the limit
// fails with EFBIG, as writes fail on a full disk, without root or a small file system.
std::string WithFileSizeLimit(uint64_t bytes, const std::string& cmd);
// Path of a built program ("ringfeed", "ringfeed-convert"), from $RINGFEED_BIN.
std::string ProgramPath(const std::string& name);

// Where the real Fashion-MNIST (gzipped IDX) is: $RINGFEED_FASHION_MNIST where set (machines
// without the Debian package get the files carried), else where Debian's dataset-fashion-mnist
// puts it.
inline std::string FashionMnistDir() {
  const char* env = std::getenv("RINGFEED_FASHION_MNIST");
  return env != nullptr && *env != '\0' ? env : "/usr/share/datasets/fashion-mnist";
}

}  // namespace rf::testing
