#include "tools/convert/input_stream.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "io/file.h"
#include "tools/convert/input_file.h"

namespace rf::convert {
namespace {

class PlainStream final : public InputStream {
 public:
  PlainStream(File f, uint64_t size) : InputStream(f.path()), file_(std::move(f)), size_(size) {
    ::posix_fadvise(file_.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  Result<size_t> Read(void* buf, size_t n) override {
    RF_ASSIGN_OR_RETURN(size_t got, file_.ReadSome(buf, n, offset_));
    offset_ += got;
    return got;
  }
  Result<bool> AtEnd() override { return offset_ >= size_; }
  bool compressed() const override { return false; }
  std::optional<uint64_t> size() const override { return size_; }

 private:
  File file_;
  uint64_t size_;
};

// Owns one gzFile.
class GzipStream final : public InputStream {
 public:
  GzipStream(std::string path, gzFile gz) : InputStream(std::move(path)), gz_(gz) {
    ::gzbuffer(gz_, 1 << 20);
  }
  ~GzipStream() override { ::gzclose(gz_); }
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  Result<size_t> Read(void* buf, size_t n) override {
    size_t done = 0;
    while (done < n) {
      const unsigned want = static_cast<unsigned>(std::min<size_t>(n - done, INT_MAX / 2));
      const int r = ::gzread(gz_, static_cast<char*>(buf) + done, want);
      if (r < 0) return Error();
      if (r == 0) {
        // gzread reports a cut-off stream as a short read; gzerror says whether that happened.
        int code = Z_OK;
        ::gzerror(gz_, &code);
        if (code != Z_OK) return Error();
        break;
      }
      done += static_cast<size_t>(r);
      offset_ += static_cast<size_t>(r);
    }
    return done;
  }
  Result<bool> AtEnd() override {
    const int c = gzgetc(gz_);
    if (c < 0) {
      int code = Z_OK;
      ::gzerror(gz_, &code);
      if (code != Z_OK) return Error();
      return true;
    }
    ::gzungetc(c, gz_);
    return false;
  }
  bool compressed() const override { return true; }
  std::optional<uint64_t> size() const override { return std::nullopt; }

 private:
  Status Error() const {
    int code = Z_OK;
    const char* msg = ::gzerror(gz_, &code);
    if (code == Z_ERRNO) {
      return std::move(Status::IOError(path_, "read failed", errno).WithOffset(offset_));
    }
    return std::move(Status::Corruption(path_, std::string("gzip data is corrupt or truncated (") +
                                                   (msg ? msg : "unknown zlib error") +
                                                   "); offsets count uncompressed bytes")
                         .WithOffset(offset_));
  }

  gzFile gz_;
};

}  // namespace

Status InputStream::ReadExact(void* buf, size_t n, const std::string& what) {
  const uint64_t start = offset_;
  RF_ASSIGN_OR_RETURN(size_t got, Read(buf, n));
  if (got < n) {
    return std::move(Status::Corruption(path_, "truncated " + what + ": expected " +
                                                   std::to_string(n) + " bytes from byte " +
                                                   std::to_string(start) + ", found " +
                                                   std::to_string(got))
                         .WithOffset(start + got));
  }
  return Status::Ok();
}

Result<std::unique_ptr<InputStream>> InputStream::Open(const std::string& path) {
  RF_ASSIGN_OR_RETURN(File f, OpenInputFile(path));
  RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  uint8_t magic[2] = {0, 0};
  RF_ASSIGN_OR_RETURN(size_t got, f.ReadSome(magic, 2, 0));
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    // gzdopen takes over a duplicate, so the File keeps sole ownership of its own descriptor.
    const int fd = ::fcntl(f.fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Status::IOError(path, "dup failed", errno);
    gzFile gz = ::gzdopen(fd, "rb");
    if (gz == nullptr) {
      ::close(fd);
      return Status::IOError(path, "cannot open as gzip", errno);
    }
    return std::unique_ptr<InputStream>(new GzipStream(path, gz));
  }
  return std::unique_ptr<InputStream>(new PlainStream(std::move(f), size));
}

}  // namespace rf::convert
