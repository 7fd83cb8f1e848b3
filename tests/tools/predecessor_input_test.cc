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

constexpr uint64_t kN = 300, kF = 3 * 4 * 5;

// The predecessor's files: feature f of sample s is s * 1000 + f, at float index f * N + s.
void WritePredecessor(const TempDir& t, uint64_t n = kN, uint64_t labels = kN) {
  std::vector<float> images(n * kF);
  for (uint64_t s = 0; s < n; ++s) {
    for (uint64_t f = 0; f < kF; ++f) images[f * n + s] = static_cast<float>(s * 1000 + f);
  }
  std::vector<int32_t> l(labels);
  for (uint64_t s = 0; s < labels; ++s) l[s] = static_cast<int32_t>(s % 10);
  WriteAll(t.File("images_train.bin"), images.data(), images.size() * 4);
  WriteAll(t.File("labels_train.bin"), l.data(), l.size() * 4);
}

TEST(PredecessorInput, FeatureMajorFileBecomesSampleMajorAndRoundTripsByteExact) {
  TempDir t;
  WritePredecessor(t);
  // A 32 KiB budget makes blocks of a few dozen samples, so many strided block reads happen.
  Status st = Convert({"predecessor", "--images", t.File("images_train.bin"), "--labels",
                       t.File("labels_train.bin"), "--shape", "3,4,5", "--memory-budget", "32KiB",
                       "-o", t.File("d.rfd"), "--chunk-size", "16KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->sample_count(), kN);
  EXPECT_EQ(d->header().sample_dtype, DType::kFloat32);
  const auto want = testing::PositionalFloats(kN, kF);
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  for (size_t c = 0; c < d->chunk_count(); ++c) {
    ASSERT_TRUE(d->ReadChunk(c, buf.data()).ok());
    const auto& e = d->chunk(c).entry;
    ASSERT_EQ(std::memcmp(buf.data(), &want[e.first_sample * kF], e.sample_count * kF * 4), 0)
        << "chunk " << c;
    for (uint32_t i = 0; i < e.sample_count; ++i) {
      EXPECT_EQ(d->Label(c, buf.data(), i), static_cast<int64_t>((e.first_sample + i) % 10));
    }
  }
  st = Convert({"export", t.File("d.rfd"), "--format", "predecessor", "-o", t.File("e"),
                "--memory-budget", "8KiB", "--quiet"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(t.File("e_images.bin")), ReadAll(t.File("images_train.bin")));
  EXPECT_EQ(ReadAll(t.File("e_labels.bin")), ReadAll(t.File("labels_train.bin")));
}

TEST(PredecessorInput, ImagesSizeNotAMultipleOfTheFeaturesIsNamed) {
  TempDir t;
  WritePredecessor(t);
  const Status st =
      Convert({"predecessor", "--images", t.File("images_train.bin"), "--labels",
               t.File("labels_train.bin"), "--shape", "7,1,1", "-o", t.File("d.rfd"), "--quiet"});
  EXPECT_TRUE(FailsWith(st, t.File("images_train.bin") +
                                ": at byte 72000: file size 72000 is not a multiple of 4 * 7 "
                                "features = 28 bytes"));
}

TEST(PredecessorInput, LabelCountMismatchIsNamed) {
  TempDir t;
  WritePredecessor(t, kN, kN + 2);
  const Status st =
      Convert({"predecessor", "--images", t.File("images_train.bin"), "--labels",
               t.File("labels_train.bin"), "--shape", "3,4,5", "-o", t.File("d.rfd"), "--quiet"});
  EXPECT_TRUE(FailsWith(
      st, t.File("labels_train.bin") + ": at byte 1200: holds 1208 bytes but the 300 samples"));
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"images_train.bin", "labels_train.bin"}));
}

}  // namespace
}  // namespace rf
