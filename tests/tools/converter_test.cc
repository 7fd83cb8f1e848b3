#include "tools/convert/converter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "io/dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

constexpr uint32_t kN = 1000, kH = 6, kW = 6;

void WriteIdx(const TempDir& t) {
  WriteAll(t.File("i.idx"),
           testing::IdxBytes(0x08, {kN, kH, kW}, testing::PositionalSamples(kN, kH * kW)));
  WriteAll(t.File("l.idx"), testing::IdxBytes(0x08, {kN}, testing::PositionalLabels(kN)));
}

// Every sample's index (its first four bytes), in dataset order, checking each label.
std::vector<uint32_t> SampleIndices(const Dataset& d) {
  std::vector<uint32_t> out;
  std::vector<uint8_t> buf(d.max_chunk_bytes());
  for (size_t c = 0; c < d.chunk_count(); ++c) {
    EXPECT_TRUE(d.ReadChunk(c, buf.data()).ok());
    for (uint32_t i = 0; i < d.chunk(c).entry.sample_count; ++i) {
      uint32_t idx;
      std::memcpy(&idx, &buf[i * d.header().SampleBytes()], 4);
      EXPECT_EQ(d.Label(c, buf.data(), i), testing::PositionalLabel(idx));
      out.push_back(idx);
    }
  }
  return out;
}

TEST(Converter, ThreeShardsOfSmallChunksKeepEverySampleInOrder) {
  TempDir t;
  WriteIdx(t);
  Status st = Convert({"idx", "--images", t.File("i.idx"), "--labels", t.File("l.idx"), "-o",
                       t.File("d.rfd"), "--shards", "3", "--chunk-size", "4KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->shard_count(), 3u);
  EXPECT_GE(d->chunk_count(), 9u);
  const auto idx = SampleIndices(*d);
  ASSERT_EQ(idx.size(), kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(idx[i], i);
  st = Convert({"export", t.File("d.rfd"), "--format", "idx", "-o", t.File("x"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("x-images.idx")), ReadAll(t.File("i.idx")));
}

TEST(Converter, TestSplitPartitionsSamplesWithoutLossOrDuplicates) {
  TempDir t;
  WriteIdx(t);
  Status st = Convert({"idx", "--images", t.File("i.idx"), "--labels", t.File("l.idx"), "-o",
                       t.File("d.rfd"), "--test-split", "0.25", "--split-seed", "7", "--chunk-size",
                       "4KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto train = Dataset::Open(t.File("d.rfd"));
  auto test = Dataset::Open(t.File("d.test.rfd"));
  ASSERT_TRUE(train.ok() && test.ok());
  EXPECT_EQ(train->header().num_classes, test->header().num_classes);
  const auto a = SampleIndices(*train), b = SampleIndices(*test);
  EXPECT_EQ(a.size() + b.size(), kN);
  EXPECT_GT(b.size(), kN / 5);
  EXPECT_LT(b.size(), kN * 3 / 10);
  std::set<uint32_t> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), kN);
  for (uint32_t i : b) EXPECT_TRUE(convert::InTestSet(7, i, 0.25)) << i;
  for (uint32_t i : a) EXPECT_FALSE(convert::InTestSet(7, i, 0.25)) << i;
  EXPECT_EQ(convert::TestSetPath("x/data"), "x/data.test.rfd");
}

// float32 inputs converted to the requested dtype, from an .npy of the given values.
std::vector<uint8_t> ConvertFloats(const std::vector<float>& values, const std::string& dtype,
                                   const std::string& in_descr = "<f4") {
  TempDir t;
  const auto x = testing::NpyBytes(in_descr, {values.size(), 1}, values.data(), values.size() * 4);
  WriteAll(t.File("x.npy"), x);
  Status st = Convert(
      {"npy", "--images", t.File("x.npy"), "--dtype", dtype, "-o", t.File("d.rfd"), "--quiet"});
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("d.rfd"));
  EXPECT_TRUE(d.ok());
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  EXPECT_TRUE(d->ReadChunk(0, buf.data()).ok());
  buf.resize(values.size() * DTypeSize(d->header().sample_dtype));
  return buf;
}

TEST(Converter, Float32ToUint8ScalesBy255RoundsToEvenAndClamps) {
  const auto got = ConvertFloats({0.f, 0.5f, 1.f, -0.2f, 1.5f, 0.25f, 0.1f}, "uint8");
  // 0.5 * 255 = 127.5 rounds to even 128; 0.25 * 255 = 63.75 -> 64; 0.1 * 255 = 25.5 -> 26.
  EXPECT_EQ(got, (std::vector<uint8_t>{0, 128, 255, 0, 255, 64, 26}));
}

TEST(Converter, Float32ToBFloat16RoundsToNearestEven) {
  const auto got = ConvertFloats({1.f, 1.00390625f, 1.01171875f, 3.14159274f, -2.f}, "bfloat16");
  std::vector<uint16_t> bf(got.size() / 2);
  std::memcpy(bf.data(), got.data(), got.size());
  // 1 + 2^-8 ties down to 1.0; 1 + 3 * 2^-8 ties up to the even 1 + 2^-6.
  EXPECT_EQ(bf, (std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F82, 0x4049, 0xC000}));
}

TEST(Converter, Uint8StoredAsFloat32KeepsItsValues) {
  TempDir t;
  const std::vector<uint8_t> v = {0, 1, 127, 255};
  WriteAll(t.File("x.npy"), testing::NpyBytes("|u1", {4, 1}, v.data(), v.size()));
  ASSERT_TRUE(Convert({"npy", "--images", t.File("x.npy"), "--dtype", "float32", "-o",
                       t.File("d.rfd"), "--quiet"})
                  .ok());
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok());
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  ASSERT_TRUE(d->ReadChunk(0, buf.data()).ok());
  float f[4];
  std::memcpy(f, buf.data(), sizeof f);
  EXPECT_EQ(std::vector<float>(f, f + 4), (std::vector<float>{0.f, 1.f, 127.f, 255.f}));
}

TEST(Converter, BadOptionsAreUsageErrors) {
  TempDir t;
  WriteIdx(t);
  const std::vector<std::string> base = {"idx", "--images", t.File("i.idx"), "-o", t.File("d.rfd")};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return Convert(args);
  };
  EXPECT_TRUE(testing::FailsWithUsage(with({"--test-split", "1.5"}),
                                      "idx: --test-split must be a number in [0, 1), got 1.5"));
  EXPECT_TRUE(testing::FailsWithUsage(with({"--dtype", "int8"}), "idx: --dtype must be uint8"));
  EXPECT_TRUE(testing::FailsWithUsage(with({"--chunk-size", "4XB"}),
                                      "idx: --chunk-size must be a byte size from 4KiB to 1GiB, "
                                      "got '4XB'"));
  EXPECT_TRUE(testing::FailsWithUsage(with({"--bogus"}), "idx: unknown option '--bogus'"));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"i.idx", "l.idx"}));
}

}  // namespace
}  // namespace rf
