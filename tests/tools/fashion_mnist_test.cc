// The real Fashion-MNIST (Debian's dataset-fashion-mnist) through the converter and back.
#include <gtest/gtest.h>
#include <zlib.h>

#include "io/dataset.h"
#include "io/file.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::TempDir;

std::vector<uint8_t> Gunzip(const std::string& path) {
  std::vector<uint8_t> out;
  gzFile gz = gzopen(path.c_str(), "rb");
  EXPECT_NE(gz, nullptr) << path;
  if (gz == nullptr) return out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(gz);
  return out;
}

TEST(FashionMnist, TrainSetConvertsAndExportsBackByteExact) {
  const std::string dir = testing::FashionMnistDir();
  const std::string images = dir + "/train-images-idx3-ubyte.gz";
  const std::string labels = dir + "/train-labels-idx1-ubyte.gz";
  if (!FileExists(images) || !FileExists(labels)) GTEST_SKIP() << "no " << images;
  TempDir t;
  Status st =
      Convert({"idx", "--images", images, "--labels", labels, "-o", t.File("fm.rfd"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("fm.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->sample_count(), 60000u);
  EXPECT_EQ(d->header().channels, 1u);
  EXPECT_EQ(d->header().height, 28u);
  EXPECT_EQ(d->header().width, 28u);
  EXPECT_EQ(d->header().num_classes, 10u);
  EXPECT_EQ(d->header().sample_dtype, DType::kUInt8);
  std::string out;
  ASSERT_TRUE(Convert({"verify", t.File("fm.rfd"), "--quiet"}, &out).ok());
  EXPECT_EQ(out, "OK: " + std::to_string(d->chunk_count()) + " chunks, 60000 samples verified\n");
  st = Convert({"export", t.File("fm.rfd"), "--format", "idx", "-o", t.File("x"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(testing::ReadAll(t.File("x-images.idx")) == Gunzip(images));
  EXPECT_TRUE(testing::ReadAll(t.File("x-labels.idx")) == Gunzip(labels));
}

// Real data compresses (zstd about 1.7x on these pixels), and the compressed dataset gives the
// original bytes back; recompressed to lz4 it holds the chunks of the uncompressed conversion.
TEST(FashionMnist, CompressedTestSetExportsBackByteExactAndRecompressesChunkForChunk) {
  const std::string dir = testing::FashionMnistDir();
  const std::string images = dir + "/t10k-images-idx3-ubyte.gz";
  const std::string labels = dir + "/t10k-labels-idx1-ubyte.gz";
  if (!FileExists(images) || !FileExists(labels)) GTEST_SKIP() << "no " << images;
  TempDir t;
  for (const char* codec : {"none", "zstd"}) {
    const Status st = Convert({"idx", "--images", images, "--labels", labels, "--compress", codec,
                               "-o", t.File(std::string(codec) + ".rfd"), "--quiet"});
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto d = Dataset::Open(t.File("zstd.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->compressed_chunks(), d->chunk_count());
  EXPECT_GT(static_cast<double>(d->data_bytes()) / static_cast<double>(d->total_bytes()), 1.5);
  Status st = Convert({"export", t.File("zstd.rfd"), "--format", "idx", "-o", t.File("x"), "-q"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(testing::ReadAll(t.File("x-images.idx")) == Gunzip(images));
  EXPECT_TRUE(testing::ReadAll(t.File("x-labels.idx")) == Gunzip(labels));
  st = Convert(
      {"recompress", t.File("zstd.rfd"), "-o", t.File("lz4.rfd"), "--compress", "lz4", "-q"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(testing::SameChunks(t.File("none.rfd"), t.File("lz4.rfd")));
}

}  // namespace
}  // namespace rf
