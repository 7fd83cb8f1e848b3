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

constexpr uint64_t kPixels = 3072;

// Records first..first+n of a CIFAR file: label byte(s), then the positional sample.
std::vector<uint8_t> CifarRecords(uint64_t first, uint64_t n, bool cifar100 = false) {
  const auto samples = testing::PositionalSamples(first + n, kPixels);
  std::vector<uint8_t> out;
  for (uint64_t i = first; i < first + n; ++i) {
    if (cifar100) out.push_back(static_cast<uint8_t>(i % 20));  // coarse
    out.push_back(static_cast<uint8_t>(cifar100 ? i % 100 : i % 10));
    out.insert(out.end(), samples.begin() + static_cast<long>(i * kPixels),
               samples.begin() + static_cast<long>((i + 1) * kPixels));
  }
  return out;
}

TEST(CifarInput, SeveralFilesMakeOneDatasetThatRoundTripsByteExact) {
  TempDir t;
  const auto a = CifarRecords(0, 100), b = CifarRecords(100, 57);
  WriteAll(t.File("data_batch_1.bin"), a);
  WriteAll(t.File("data_batch_2.bin"), b);
  Status st = Convert({"cifar", t.File("data_batch_1.bin"), t.File("data_batch_2.bin"), "-o",
                       t.File("c.rfd"), "--chunk-size", "64KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("c.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->sample_count(), 157u);
  EXPECT_EQ(d->header().channels, 3u);
  EXPECT_EQ(d->header().num_classes, 10u);
  st = Convert({"export", t.File("c.rfd"), "--format", "cifar", "-o", t.File("x"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<uint8_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(ReadAll(t.File("x.bin")), both);
}

TEST(CifarInput, Cifar100KeepsTheFineLabel) {
  TempDir t;
  WriteAll(t.File("train.bin"), CifarRecords(0, 150, true));
  const Status st =
      Convert({"cifar", "--cifar100", t.File("train.bin"), "-o", t.File("c.rfd"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("c.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header().num_classes, 100u);
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  ASSERT_TRUE(d->ReadChunk(0, buf.data()).ok());
  for (uint32_t i = 0; i < d->chunk(0).entry.sample_count; ++i) {
    EXPECT_EQ(d->Label(0, buf.data(), i), static_cast<int64_t>(i % 100));
  }
}

TEST(CifarInput, PartialRecordNamesWhereItStarts) {
  TempDir t;
  auto records = CifarRecords(0, 3);
  records.resize(records.size() + 100, 0);
  WriteAll(t.File("c.bin"), records);
  EXPECT_TRUE(FailsWith(
      Convert({"cifar", t.File("c.bin"), "-o", t.File("c.rfd"), "--quiet"}),
      t.File("c.bin") + ": at byte 9219: file size 9319 is not a multiple of the 3073-byte CIFAR "
                        "record: a partial record of 100 bytes starts here"));
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"c.bin"});
}

TEST(CifarInput, LabelOfTenOrMoreNamesItsRecord) {
  TempDir t;
  auto records = CifarRecords(0, 5);
  records[2 * 3073] = 10;
  WriteAll(t.File("c.bin"), records);
  EXPECT_TRUE(
      FailsWith(Convert({"cifar", t.File("c.bin"), "-o", t.File("c.rfd"), "--quiet"}),
                t.File("c.bin") + ": at byte 6146: label 10 of sample 2 is outside [0, 10)"));
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"c.bin"});
}

}  // namespace
}  // namespace rf
