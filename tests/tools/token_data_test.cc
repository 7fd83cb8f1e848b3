// ringfeed-convert on data that is not images: samples of 1 to 4 dims, integer id dtypes (a
// language model's token rows) stored exactly, and inputs without labels; exported back byte for
// byte, and inspected.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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

constexpr uint64_t kRows = 150, kLen = 2048;

// Token rows whose bytes encode their position (tests/testing/positional_data.h: row i holds i in
// its first 8 bytes), as an .npy of `descr` and shape (kRows, kLen).
std::vector<uint8_t> TokenNpy(const std::string& descr, size_t elem_size) {
  const auto bytes = testing::PositionalSamples(kRows, kLen * elem_size);
  return testing::NpyBytes(descr, {kRows, kLen}, bytes.data(), bytes.size());
}

TEST(TokenData, NpyUint16RowsWithoutLabelsKeepShapeAndDtypeAndExportByteExact) {
  TempDir t;
  const auto x = TokenNpy("<u2", 2);
  WriteAll(t.File("tok.npy"), x);
  Status st = Convert({"npy", "--images", t.File("tok.npy"), "-o", t.File("tok.rfd"),
                       "--chunk-size", "64KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("tok.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header().Shape(), std::vector<uint64_t>{kLen});
  EXPECT_EQ(d->header().sample_dtype, DType::kUInt16);
  EXPECT_FALSE(d->header().HasLabels());
  EXPECT_GT(d->chunk_count(), 4u);  // rows cross chunk boundaries

  st = Convert({"export", t.File("tok.rfd"), "--format", "npy", "-o", t.File("e"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e-images.npy")), x);
  EXPECT_EQ(ReadAll(t.File("e-labels.npy")),
            testing::NpyBytes("|u1", {kRows}, std::vector<uint8_t>(kRows).data(), kRows));
  st = Convert({"export", t.File("tok.rfd"), "--format", "raw", "-o", t.File("r"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("r.records")), std::vector<uint8_t>(x.begin() + 128, x.end()));
}

TEST(TokenData, InspectShowsShapeIdDtypeAndNoLabels) {
  TempDir t;
  WriteAll(t.File("tok.npy"), TokenNpy("<u2", 2));
  ASSERT_TRUE(
      Convert({"npy", "--images", t.File("tok.npy"), "-o", t.File("tok.rfd"), "--quiet"}).ok());
  std::string out;
  ASSERT_TRUE(Convert({"inspect", t.File("tok.rfd"), "--verify"}, &out).ok());
  EXPECT_NE(out.find("shape:        2048 (4096 bytes per sample)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sample dtype: uint16 (ids, stored exactly)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("labels:       no labels (0 classes; every stored label is 0)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("mean, std:    none for ids"), std::string::npos) << out;
  EXPECT_EQ(out.find("classes:  "), std::string::npos) << out;
  EXPECT_NE(out.find("OK: "), std::string::npos) << out;
}

// (N, d1..dk) for k = 1 to 4, int64 and int32: the shape and the bytes come back.
TEST(TokenData, NpyOfEveryNdimKeepsItsShapeAndExportsByteExact) {
  const std::vector<std::vector<uint64_t>> shapes = {{5}, {2, 5}, {2, 3, 5}, {2, 3, 4, 5}};
  for (const auto& shape : shapes) {
    for (const auto& [descr, dtype] : {std::pair{"<i8", DType::kInt64}, {"<i4", DType::kInt32}}) {
      SCOPED_TRACE(std::string(descr) + " " + std::to_string(shape.size()) + " dims");
      TempDir t;
      uint64_t elems = 1;
      for (uint64_t v : shape) elems *= v;
      const auto bytes = testing::PositionalSamples(kRows, elems * DTypeSize(dtype));
      std::vector<uint64_t> file_shape = {kRows};
      file_shape.insert(file_shape.end(), shape.begin(), shape.end());
      const auto x = testing::NpyBytes(descr, file_shape, bytes.data(), bytes.size());
      WriteAll(t.File("x.npy"), x);
      Status st = Convert({"npy", "--images", t.File("x.npy"), "-o", t.File("d.rfd"),
                           "--chunk-size", "4KiB", "--quiet"});
      ASSERT_TRUE(st.ok()) << st.ToString();
      auto d = Dataset::Open(t.File("d.rfd"));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->header().Shape(), shape);
      EXPECT_EQ(d->header().sample_dtype, dtype);
      st = Convert({"export", t.File("d.rfd"), "--format", "npy", "-o", t.File("e"), "--quiet"});
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(ReadAll(t.File("e-images.npy")), x);
    }
  }
}

// Raw int32 records of shape 4,16 after a 16-byte header, no labels: stored as int32 4x16, and
// the records come back exactly.
TEST(TokenData, RawInt32WithShapeRoundTripsByteExact) {
  TempDir t;
  const auto records = testing::PositionalSamples(kRows, 4 * 16 * 4);
  std::vector<uint8_t> file(16 + records.size(), 0xEE);
  std::memcpy(file.data() + 16, records.data(), records.size());
  WriteAll(t.File("r.bin"), file);
  Status st = Convert({"raw", "--records", t.File("r.bin"), "--header-bytes", "16", "--shape",
                       "4,16", "--dtype", "int32", "--label", "none", "-o", t.File("d.rfd"),
                       "--chunk-size", "8KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header().Shape(), (std::vector<uint64_t>{4, 16}));
  EXPECT_EQ(d->header().sample_dtype, DType::kInt32);
  EXPECT_FALSE(d->header().HasLabels());
  st = Convert({"export", t.File("d.rfd"), "--format", "raw", "-o", t.File("e"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e.records")), records);
  EXPECT_EQ(ReadAll(t.File("e.labels")), std::vector<uint8_t>(kRows, 0));
}

// uint32 ids have no stored dtype of their own: int64 by default (float32 would round ids above
// 2^24), int32 on request while every id fits, and an id that does not fit is named, not clamped.
class Uint32Tokens : public ::testing::Test {
 protected:
  void SetUp() override {
    ids_.resize(kRows * 8);
    for (uint64_t i = 0; i < ids_.size(); ++i) ids_[i] = static_cast<uint32_t>((1u << 24) + 1 + i);
  }
  Status Run(const std::vector<std::string>& extra) {
    WriteAll(t_.File("x.npy"), testing::NpyBytes("<u4", {kRows, 8}, ids_.data(), ids_.size() * 4));
    std::vector<std::string> args = {"npy", "--images",       t_.File("x.npy"),
                                     "-o",  t_.File("d.rfd"), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Convert(args);
  }
  // The stored ids, widened to int64.
  std::vector<int64_t> Stored() {
    auto d = Dataset::Open(t_.File("d.rfd"));
    EXPECT_TRUE(d.ok());
    std::vector<uint8_t> buf(d->max_chunk_bytes());
    EXPECT_TRUE(d->ReadChunk(0, buf.data()).ok());
    std::vector<int64_t> out(ids_.size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = LoadLabel(d->header().sample_dtype, &buf[0], i);
    return out;
  }
  TempDir t_;
  std::vector<uint32_t> ids_;
};

TEST_F(Uint32Tokens, AreStoredExactlyAsInt64ByDefault) {
  ASSERT_TRUE(Run({}).ok());
  EXPECT_EQ(Dataset::Open(t_.File("d.rfd"))->header().sample_dtype, DType::kInt64);
  EXPECT_EQ(Stored(), std::vector<int64_t>(ids_.begin(), ids_.end()));
}

TEST_F(Uint32Tokens, AreStoredExactlyAsInt32OnRequest) {
  ASSERT_TRUE(Run({"--dtype", "int32"}).ok());
  EXPECT_EQ(Stored(), std::vector<int64_t>(ids_.begin(), ids_.end()));
}

TEST_F(Uint32Tokens, AnIdTheStoredDtypeCannotHoldIsNamedAndNothingIsWritten) {
  ids_[3 * 8 + 5] = 0x80000000u;  // row 3, id 5: one above INT32_MAX
  EXPECT_TRUE(FailsWith(Run({"--dtype", "int32"}),
                        t_.File("x.npy") + ": at byte " + std::to_string(128 + 3 * 8 * 4) +
                            ": value 2147483648 (element 5 of sample 3) does not fit int32"));
  EXPECT_EQ(testing::FilesIn(t_.path()), std::vector<std::string>{"x.npy"});
}

TEST(TokenData, WhatIdsCannotBeIsRefusedBeforeAnythingIsWritten) {
  TempDir t;
  const auto floats = testing::PositionalFloats(kRows, 8);
  WriteAll(t.File("f.npy"), testing::NpyBytes("<f4", {kRows, 8}, floats.data(), floats.size() * 4));
  WriteAll(t.File("tok.npy"), TokenNpy("<u2", 2));
  EXPECT_TRUE(FailsWith(Convert({"npy", "--images", t.File("f.npy"), "--dtype", "int32", "-o",
                                 t.File("d.rfd"), "--quiet"}),
                        t.File("f.npy") + ": float32 samples cannot be stored as int32 ids"));
  EXPECT_TRUE(FailsWith(Convert({"npy", "--images", t.File("tok.npy"), "--scale", "2", "-o",
                                 t.File("d.rfd"), "--quiet"}),
                        "--scale does not apply to uint16 ids, which are stored exactly"));
  EXPECT_TRUE(FailsWith(Convert({"npy", "--images", t.File("tok.npy"), "--classes", "4", "-o",
                                 t.File("d.rfd"), "--quiet"}),
                        "--classes 4 given, but " + t.File("tok.npy") + " comes without labels"));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"f.npy", "tok.npy"}));
}

TEST(TokenData, ShapesTheFormatCannotHoldAreRefused) {
  TempDir t;
  const auto bytes = testing::PositionalSamples(4, 65 * 4);
  WriteAll(t.File("c.npy"), testing::NpyBytes("|u1", {4, 65, 2, 2}, bytes.data(), bytes.size()));
  EXPECT_TRUE(FailsWith(
      Convert({"npy", "--images", t.File("c.npy"), "-o", t.File("d.rfd"), "--quiet"}),
      t.File("c.npy") + ": sample shape 65x2x2: 65 channels; a C,H,W sample has at most 64"));
  WriteAll(t.File("r.bin"), bytes);
  EXPECT_TRUE(testing::FailsWithUsage(
      Convert({"raw", "--records", t.File("r.bin"), "--shape", "1,2,3,4,5", "--label", "none", "-o",
               t.File("d.rfd")}),
      "raw: --shape must be 1 to 4 comma-separated whole numbers from 1 to 4294967295, got "
      "'1,2,3,4,5'"));
  EXPECT_TRUE(FailsWith(Convert({"raw", "--records", t.File("r.bin"), "--shape",
                                 "999999999,999999999,999999999,999999999", "--label", "none", "-o",
                                 t.File("d.rfd")}),
                        "samples larger than 4 GiB"));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"c.npy", "r.bin"}));
}

// Exports that would change the ids or the shape are refused.
TEST(TokenData, ExportRefusesLayoutsAndFormatsThatWouldChangeTokenRows) {
  TempDir t;
  WriteAll(t.File("tok.npy"), TokenNpy("<u2", 2));
  ASSERT_TRUE(
      Convert({"npy", "--images", t.File("tok.npy"), "-o", t.File("tok.rfd"), "--quiet"}).ok());
  EXPECT_TRUE(FailsWith(Convert({"export", t.File("tok.rfd"), "--format", "npy", "--layout", "nhwc",
                                 "-o", t.File("e"), "--quiet"}),
                        "--layout nhwc applies to C,H,W samples; this dataset's have shape 2048"));
  EXPECT_TRUE(FailsWith(Convert({"export", t.File("tok.rfd"), "--format", "predecessor", "-o",
                                 t.File("e"), "--quiet"}),
                        "the predecessor's files hold float32 images; this dataset stores uint16 "
                        "ids"));
}

}  // namespace
}  // namespace rf
