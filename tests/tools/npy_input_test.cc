#include <gtest/gtest.h>

#include <cstring>

#include "io/dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tools/convert/npy_header.h"

namespace rf {
namespace {

using testing::Convert;
using testing::FailsWith;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

constexpr uint64_t kN = 123;

TEST(NpyHeader, MatchesWhatNumpyWritesForMnistImages) {
  const std::string h = convert::FormatNpyHeader("|u1", {60000, 28, 28});
  // np.save(np.zeros((60000, 28, 28), np.uint8)): header length 118, data at byte 128.
  const std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (60000, 28, 28), }";
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.substr(10 + dict.size()), std::string(127 - 10 - dict.size(), ' ') + "\n");
}

TEST(NpyHeader, OneDimensionalShapeHasATrailingComma) {
  const std::string h = convert::FormatNpyHeader("<i8", {60000});
  EXPECT_NE(h.find("'shape': (60000,), }"), std::string::npos);
  EXPECT_EQ(h.size() % 64, 0u);
}

TEST(NpyInput, Uint8ImagesAndLabelsRoundTripByteExact) {
  TempDir t;
  const auto samples = testing::PositionalSamples(kN, 4 * 6);
  const auto labels = testing::PositionalLabels(kN);
  const auto x = testing::NpyBytes("|u1", {kN, 4, 6}, samples.data(), samples.size());
  const auto y = testing::NpyBytes("|u1", {kN}, labels.data(), labels.size());
  WriteAll(t.File("x.npy"), x);
  WriteAll(t.File("y.npy"), y);
  Status st = Convert({"npy", "--images", t.File("x.npy"), "--labels", t.File("y.npy"), "-o",
                       t.File("d.rfd"), "--chunk-size", "4KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = Convert({"export", t.File("d.rfd"), "--format", "npy", "-o", t.File("e"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e-images.npy")), x);
  EXPECT_EQ(ReadAll(t.File("e-labels.npy")), y);
}

// Issue 23: export dropped a size-1 channel dimension, (N,1,8,8) coming back as (N,8,8).
TEST(NpyInput, OneChannelImagesKeepTheirChannelDimension) {
  TempDir t;
  const auto samples = testing::PositionalSamples(kN, 8 * 8);
  const auto x = testing::NpyBytes("|u1", {kN, 1, 8, 8}, samples.data(), samples.size());
  WriteAll(t.File("x.npy"), x);
  Status st = Convert({"npy", "--images", t.File("x.npy"), "-o", t.File("d.rfd"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = Convert({"export", t.File("d.rfd"), "--format", "npy", "-o", t.File("e"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e-images.npy")), x);
  // --layout nhw still drops it where asked.
  st = Convert({"export", t.File("d.rfd"), "--format", "npy", "--layout", "nhw", "-o", t.File("f"),
                "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("f-images.npy")),
            testing::NpyBytes("|u1", {kN, 8, 8}, samples.data(), samples.size()));
}

TEST(NpyInput, Float32NchwWithInt64LabelsRoundTripsByteExact) {
  TempDir t;
  const auto samples = testing::PositionalFloats(kN, 2 * 3 * 4);
  std::vector<int64_t> labels(kN);
  for (uint64_t i = 0; i < kN; ++i) labels[i] = testing::PositionalLabel(i);
  const auto x = testing::NpyBytes("<f4", {kN, 2, 3, 4}, samples.data(), samples.size() * 4);
  const auto y = testing::NpyBytes("<i8", {kN}, labels.data(), labels.size() * 8);
  WriteAll(t.File("x.npy"), x);
  WriteAll(t.File("y.npy"), y);
  Status st = Convert({"npy", "--images", t.File("x.npy"), "--labels", t.File("y.npy"), "-o",
                       t.File("d.rfd"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header().channels, 2u);
  EXPECT_EQ(d->header().sample_dtype, DType::kFloat32);
  EXPECT_EQ(d->header().label_dtype, DType::kInt32);
  st = Convert({"export", t.File("d.rfd"), "--format", "npy", "-o", t.File("e"), "--label-dtype",
                "int64", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e-images.npy")), x);
  EXPECT_EQ(ReadAll(t.File("e-labels.npy")), y);
}

TEST(NpyInput, NhwcIsStoredChannelMajorAndExportsBackAsNhwc) {
  TempDir t;
  constexpr uint32_t kC = 3, kH = 2, kW = 5;
  const auto hwc = testing::PositionalSamples(kN, kC * kH * kW);
  const auto x = testing::NpyBytes("|u1", {kN, kH, kW, kC}, hwc.data(), hwc.size());
  WriteAll(t.File("x.npy"), x);
  Status st = Convert(
      {"npy", "--images", t.File("x.npy"), "--layout", "nhwc", "-o", t.File("d.rfd"), "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->header().channels, kC);
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  ASSERT_TRUE(d->ReadChunk(0, buf.data()).ok());
  for (uint32_t c = 0; c < kC; ++c) {
    for (uint32_t p = 0; p < kH * kW; ++p) {
      EXPECT_EQ(buf[c * kH * kW + p], hwc[p * kC + c]) << "channel " << c << " pixel " << p;
    }
  }
  st = Convert({"export", t.File("d.rfd"), "--format", "npy", "--layout", "nhwc", "-o", t.File("e"),
                "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e-images.npy")), x);
}

class NpyErrors : public ::testing::Test {
 protected:
  // Writes x.npy with the header text replaced: `from` -> `to`.
  void WriteEdited(const std::string& from, const std::string& to,
                   const std::string& descr = "|u1") {
    const auto samples = testing::PositionalSamples(kN, 8);
    auto x = testing::NpyBytes(descr, {kN, 2, 4}, samples.data(), samples.size());
    std::string s(x.begin(), x.end());
    const size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(from.size(), to.size());
    s.replace(at, from.size(), to);
    WriteAll(t_.File("x.npy"), s.data(), s.size());
  }
  Status Run() {
    return Convert({"npy", "--images", t_.File("x.npy"), "-o", t_.File("d.rfd"), "--quiet"});
  }
  TempDir t_;
};

TEST_F(NpyErrors, BadMagicNamesByteZero) {
  WriteEdited("NUMPY", "NUMPX");
  EXPECT_TRUE(FailsWith(Run(), t_.File("x.npy") + ": at byte 0: not an .npy file: bad magic"));
  EXPECT_EQ(testing::FilesIn(t_.path()), std::vector<std::string>{"x.npy"});
}

TEST_F(NpyErrors, UnparseableHeaderNamesTheByte) {
  WriteEdited("'shape': (", "'shape'; (");
  // The dict starts at byte 10; "'shape'" ends at dict offset 59.
  EXPECT_TRUE(FailsWith(Run(), t_.File("x.npy") +
                                   ": at byte 58: unparseable .npy header: expected ':' after key "
                                   "'shape'"));
}

TEST_F(NpyErrors, FortranOrderIsRefused) {
  WriteEdited("'fortran_order': False", "'fortran_order': True ");
  EXPECT_TRUE(
      FailsWith(Run(), t_.File("x.npy") + ": at byte 44: fortran_order True is not supported"));
}

TEST_F(NpyErrors, UnsupportedDtypeIsNamed) {
  WriteEdited("'|u1'", "'<c8'");
  EXPECT_TRUE(FailsWith(Run(), t_.File("x.npy") + ": at byte 20: unsupported dtype '<c8'"));
}

TEST_F(NpyErrors, DataSizeDisagreeingWithShapeNamesWhereTheDataEnds) {
  WriteEdited("(123, 2, 4)", "(124, 2, 4)");
  EXPECT_TRUE(FailsWith(Run(), t_.File("x.npy") + ": at byte " + std::to_string(128 + kN * 8) +
                                   ": data is 984 bytes but shape (124, 2, 4) of '|u1' needs 992"));
  EXPECT_EQ(testing::FilesIn(t_.path()), std::vector<std::string>{"x.npy"});
}

}  // namespace
}  // namespace rf
