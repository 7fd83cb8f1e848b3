#include <gtest/gtest.h>

#include "io/dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::FailsWith;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

constexpr uint32_t kN = 257, kH = 5, kW = 7;

std::vector<uint8_t> Images() {
  return testing::IdxBytes(0x08, {kN, kH, kW}, testing::PositionalSamples(kN, kH * kW));
}
std::vector<uint8_t> Labels(uint32_t n = kN) {
  return testing::IdxBytes(0x08, {n}, testing::PositionalLabels(n));
}

// Converts i.idx + l.idx (or their .gz) to d.rfd and exports it as IDX to x-*.idx.
void ConvertAndExport(const TempDir& t, const std::string& images, const std::string& labels) {
  Status st = Convert({"idx", "--images", t.File(images), "--labels", t.File(labels), "-o",
                       t.File("d.rfd"), "--chunk-size", "4KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = Convert({"export", t.File("d.rfd"), "--format", "idx", "-o", t.File("x"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
}

TEST(IdxInput, PlainUint8RoundTripsByteExact) {
  TempDir t;
  WriteAll(t.File("i.idx"), Images());
  WriteAll(t.File("l.idx"), Labels());
  ConvertAndExport(t, "i.idx", "l.idx");
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sample_count(), kN);
  EXPECT_EQ(d->header().channels, 1u);
  EXPECT_EQ(d->header().height, kH);
  EXPECT_EQ(d->header().width, kW);
  EXPECT_EQ(d->header().num_classes, 10u);
  EXPECT_GE(d->chunk_count(), 3u);
  EXPECT_EQ(ReadAll(t.File("x-images.idx")), Images());
  EXPECT_EQ(ReadAll(t.File("x-labels.idx")), Labels());
}

TEST(IdxInput, GzippedRoundTripsToTheDecompressedBytes) {
  TempDir t;
  testing::WriteGzip(t.File("i.idx.gz"), Images());
  testing::WriteGzip(t.File("l.idx.gz"), Labels());
  ConvertAndExport(t, "i.idx.gz", "l.idx.gz");
  EXPECT_EQ(ReadAll(t.File("x-images.idx")), Images());
  EXPECT_EQ(ReadAll(t.File("x-labels.idx")), Labels());
}

TEST(IdxInput, FourDimFloat32KeepsChannelsAndRoundTripsByteExact) {
  TempDir t;
  const auto images = testing::IdxBytes(
      0x0D, {kN, 2, 3, 4}, testing::BigEndianFloats(testing::PositionalFloats(kN, 24)));
  WriteAll(t.File("i.idx"), images);
  WriteAll(t.File("l.idx"), Labels());
  ConvertAndExport(t, "i.idx", "l.idx");
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header().channels, 2u);
  EXPECT_EQ(d->header().sample_dtype, DType::kFloat32);
  EXPECT_EQ(ReadAll(t.File("x-images.idx")), images);
}

// Each bad input fails with the file and byte named, and leaves no output behind.
class IdxErrors : public ::testing::Test {
 protected:
  Status Run(const std::string& images = "i.idx", const std::string& labels = "l.idx") {
    return Convert({"idx", "--images", t_.File(images), "--labels", t_.File(labels), "-o",
                    t_.File("d.rfd"), "--quiet"});
  }
  void ExpectNoOutput(const std::vector<std::string>& inputs) {
    EXPECT_EQ(testing::FilesIn(t_.path()), inputs);
  }
  TempDir t_;
};

TEST_F(IdxErrors, MissingFileIsNotFoundNamingIt) {
  WriteAll(t_.File("l.idx"), Labels());
  const Status st = Run("nope.idx");
  EXPECT_TRUE(st.IsNotFound());
  EXPECT_TRUE(FailsWith(st, t_.File("nope.idx") + ": cannot open: No such file or directory"));
  ExpectNoOutput({"l.idx"});
}

TEST_F(IdxErrors, WrongMagicNamesByteZero) {
  auto images = Images();
  images[0] = 0x50;
  WriteAll(t_.File("i.idx"), images);
  WriteAll(t_.File("l.idx"), Labels());
  EXPECT_TRUE(
      FailsWith(Run(), t_.File("i.idx") + ": at byte 0: not an IDX file: magic starts 0x50"));
  ExpectNoOutput({"i.idx", "l.idx"});
}

TEST_F(IdxErrors, UnknownTypeCodeNamesByteTwo) {
  auto images = Images();
  images[2] = 0x07;
  WriteAll(t_.File("i.idx"), images);
  WriteAll(t_.File("l.idx"), Labels());
  EXPECT_TRUE(
      FailsWith(Run(), t_.File("i.idx") + ": at byte 2: unknown IDX element type code 0x07"));
  ExpectNoOutput({"i.idx", "l.idx"});
}

TEST_F(IdxErrors, TruncatedPlainFileNamesWhereTheDataEnds) {
  auto images = Images();
  images.resize(images.size() - 10);
  WriteAll(t_.File("i.idx"), images);
  WriteAll(t_.File("l.idx"), Labels());
  EXPECT_TRUE(FailsWith(Run(), t_.File("i.idx") + ": at byte " + std::to_string(images.size()) +
                                   ": file size " + std::to_string(images.size()) +
                                   " disagrees with the header: dims 257x5x7 of uint8 need " +
                                   std::to_string(images.size() + 10) + " bytes"));
  ExpectNoOutput({"i.idx", "l.idx"});
}

TEST_F(IdxErrors, TrailingDataNamesWhereItStarts) {
  auto images = Images();
  const size_t want = images.size();
  images.push_back(1);
  WriteAll(t_.File("i.idx"), images);
  WriteAll(t_.File("l.idx"), Labels());
  EXPECT_TRUE(FailsWith(Run(), t_.File("i.idx") + ": at byte " + std::to_string(want) + ": "));
}

TEST_F(IdxErrors, GzipWithTooFewBytesForItsDimsNamesTheUncompressedOffset) {
  auto images = Images();
  images.resize(images.size() - 35);  // one sample short
  testing::WriteGzip(t_.File("i.idx.gz"), images);
  WriteAll(t_.File("l.idx"), Labels());
  EXPECT_TRUE(FailsWith(Run("i.idx.gz"), t_.File("i.idx.gz") + ": at byte " +
                                             std::to_string(images.size()) +
                                             ": truncated IDX image data"));
  ExpectNoOutput({"i.idx.gz", "l.idx"});
}

TEST_F(IdxErrors, CutOffGzipStreamIsCorruptionNamingFileAndOffset) {
  testing::WriteGzip(t_.File("i.idx.gz"), Images());
  auto gz = ReadAll(t_.File("i.idx.gz"));
  gz.resize(gz.size() / 2);
  WriteAll(t_.File("i.idx.gz"), gz);
  WriteAll(t_.File("l.idx"), Labels());
  const Status st = Run("i.idx.gz");
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_TRUE(FailsWith(st, t_.File("i.idx.gz") + ": at byte "));
  EXPECT_TRUE(st.ToString().find("truncated") != std::string::npos ||
              st.ToString().find("corrupt") != std::string::npos)
      << st.ToString();
  ExpectNoOutput({"i.idx.gz", "l.idx"});
}

TEST_F(IdxErrors, LabelCountDifferentFromImageCountNamesTheLabelsCount) {
  WriteAll(t_.File("i.idx"), Images());
  WriteAll(t_.File("l.idx"), Labels(kN - 1));
  EXPECT_TRUE(FailsWith(Run(), t_.File("l.idx") + ": at byte 4: holds 256 labels but " +
                                   t_.File("i.idx") + " holds 257 images"));
  ExpectNoOutput({"i.idx", "l.idx"});
}

TEST_F(IdxErrors, LabelAboveClassesNamesItsByte) {
  WriteAll(t_.File("i.idx"), Images());
  WriteAll(t_.File("l.idx"), Labels());
  const Status st = Convert({"idx", "--images", t_.File("i.idx"), "--labels", t_.File("l.idx"),
                             "-o", t_.File("d.rfd"), "--classes", "5", "--quiet"});
  // Sample 5 is the first with label 5; labels start at byte 8.
  EXPECT_TRUE(FailsWith(
      st, t_.File("l.idx") + ": at byte 13: label 5 of sample 5 is outside [0, 5) (--classes 5)"));
  ExpectNoOutput({"i.idx", "l.idx"});
}

}  // namespace
}  // namespace rf
