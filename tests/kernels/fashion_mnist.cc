#include "tests/kernels/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace rf::testing {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly n bytes, or fails naming the file and how far it got.
Status ReadExactly(gzFile f, const std::string& path, void* dst, size_t n, size_t at) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    // gzread takes unsigned counts; read in slices well below that limit.
    const unsigned want = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(f, out + done, want);
    if (got < 0) return Status::IOError(path, "gzread failed").WithOffset(at + done);
    if (got == 0) return Status::Corruption(path, "file ends early").WithOffset(at + done);
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

Result<GzFile> Open(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return Status::NotFound(path, "cannot open", errno);
  return f;
}

}  // namespace

Result<FashionMnist> LoadFashionMnist(const std::string& dir, const std::string& prefix,
                                      uint32_t limit) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  RF_ASSIGN_OR_RETURN(GzFile images, Open(images_path));
  RF_ASSIGN_OR_RETURN(GzFile labels, Open(labels_path));

  uint8_t head[16];
  RF_RETURN_IF_ERROR(ReadExactly(images.get(), images_path, head, 16, 0));
  if (BigEndian32(head) != 0x803) return Status::Corruption(images_path, "not an IDX3 file");
  FashionMnist d;
  d.count = BigEndian32(head + 4);
  d.rows = BigEndian32(head + 8);
  d.cols = BigEndian32(head + 12);
  RF_RETURN_IF_ERROR(ReadExactly(labels.get(), labels_path, head, 8, 0));
  if (BigEndian32(head) != 0x801) return Status::Corruption(labels_path, "not an IDX1 file");
  if (BigEndian32(head + 4) != d.count) {
    return Status::Corruption(labels_path, "label count differs from the image count");
  }
  if (limit != 0 && limit < d.count) d.count = limit;

  d.pixels.resize(size_t{d.count} * d.rows * d.cols);
  d.labels.resize(d.count);
  RF_RETURN_IF_ERROR(ReadExactly(images.get(), images_path, d.pixels.data(), d.pixels.size(), 16));
  RF_RETURN_IF_ERROR(ReadExactly(labels.get(), labels_path, d.labels.data(), d.count, 8));
  return d;
}

}  // namespace rf::testing
