#include <gtest/gtest.h>

#include <cstring>

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

constexpr uint64_t kN = 211, kBytes = 2 * 3 * 4;

TEST(RawInput, LabelFileRoundTripsByteExact) {
  TempDir t;
  const auto records = testing::PositionalSamples(kN, kBytes);
  std::vector<uint16_t> labels(kN);
  for (uint64_t i = 0; i < kN; ++i) labels[i] = static_cast<uint16_t>(i * 3);  // wider than a byte
  WriteAll(t.File("r.bin"), records);
  WriteAll(t.File("l.bin"), labels.data(), labels.size() * 2);
  Status st = Convert({"raw", "--records", t.File("r.bin"), "--shape", "2,3,4", "--label-dtype",
                       "uint16", "--label", "file:" + t.File("l.bin"), "-o", t.File("d.rfd"),
                       "--chunk-size", "4KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = Convert({"export", t.File("d.rfd"), "--format", "raw", "-o", t.File("e"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e.records")), records);
  const auto got = ReadAll(t.File("e.labels"));
  ASSERT_EQ(got.size(), labels.size() * 2);
  EXPECT_EQ(std::memcmp(got.data(), labels.data(), got.size()), 0);
}

// Records with a 16-byte file header and an int32 label before (first) or after (last) each
// sample.
void CheckInRecordLabels(bool first) {
  TempDir t;
  const auto samples = testing::PositionalSamples(kN, kBytes);
  std::vector<uint8_t> file(16, 0xEE);
  for (uint64_t i = 0; i < kN; ++i) {
    const int32_t label = static_cast<int32_t>(i % 10);
    uint8_t l[4];
    std::memcpy(l, &label, 4);
    if (first) file.insert(file.end(), l, l + 4);
    file.insert(file.end(), samples.begin() + static_cast<long>(i * kBytes),
                samples.begin() + static_cast<long>((i + 1) * kBytes));
    if (!first) file.insert(file.end(), l, l + 4);
  }
  WriteAll(t.File("r.bin"), file);
  Status st = Convert({"raw", "--records", t.File("r.bin"), "--shape", "2,3,4", "--label-dtype",
                       "int32", "--label", first ? "first" : "last", "--header-bytes", "16", "-o",
                       t.File("d.rfd"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = Convert({"export", t.File("d.rfd"), "--format", "raw", "-o", t.File("e"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e.records")), samples);
  const auto labels = ReadAll(t.File("e.labels"));
  ASSERT_EQ(labels.size(), kN * 4);
  for (uint64_t i = 0; i < kN; ++i) {
    int32_t v;
    std::memcpy(&v, &labels[i * 4], 4);
    EXPECT_EQ(v, static_cast<int32_t>(i % 10)) << "sample " << i;
  }
}

TEST(RawInput, LabelFirstAfterAHeaderKeepsEverySample) { CheckInRecordLabels(true); }
TEST(RawInput, LabelLastKeepsEverySample) { CheckInRecordLabels(false); }

TEST(RawInput, PartialRecordNamesWhereItStarts) {
  TempDir t;
  auto records = testing::PositionalSamples(kN, kBytes + 1);
  records.erase(records.end() - 5, records.end());  // the last record 5 bytes short
  WriteAll(t.File("r.bin"), records);
  EXPECT_TRUE(FailsWith(Convert({"raw", "--records", t.File("r.bin"), "--shape", "2,3,4", "-o",
                                 t.File("d.rfd"), "--quiet"}),
                        t.File("r.bin") + ": at byte " + std::to_string((kN - 1) * (kBytes + 1)) +
                            ": file size " + std::to_string(records.size()) +
                            " leaves a partial record"));
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"r.bin"});
}

TEST(RawInput, LabelFileOfTheWrongLengthIsNamed) {
  TempDir t;
  WriteAll(t.File("r.bin"), testing::PositionalSamples(kN, kBytes));
  WriteAll(t.File("l.bin"), testing::PositionalLabels(kN - 1));
  EXPECT_TRUE(
      FailsWith(Convert({"raw", "--records", t.File("r.bin"), "--shape", "2,3,4", "--label",
                         "file:" + t.File("l.bin"), "-o", t.File("d.rfd"), "--quiet"}),
                t.File("l.bin") + ": at byte 210: holds 210 bytes but 211 uint8 labels need 211"));
}

}  // namespace
}  // namespace rf
