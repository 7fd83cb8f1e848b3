#include "io/dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/dataset_writer.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// Positional samples of 2x3x5 uint8 with labels i % 7, in chunks of 4 KiB: any misplaced sample
// shows.
constexpr uint32_t kElems = 2 * 3 * 5, kClasses = 7;

// Writes n samples to `path` in `shards` shards; returns the files written, in shard order.
std::vector<std::string> WriteDataset(const std::string& path, uint64_t n, uint32_t shards) {
  std::vector<std::string> files;
  testing::WritePositionalDataset(path, n,
                                  {.channels = 2,
                                   .height = 3,
                                   .width = 5,
                                   .classes = kClasses,
                                   .shards = shards,
                                   .chunk_bytes = 4096},
                                  &files);
  return files;
}

void ExpectEverySampleInPlace(const Dataset& d) {
  std::vector<uint8_t> buf(d.max_chunk_bytes());
  uint64_t next = 0;
  for (size_t c = 0; c < d.chunk_count(); ++c) {
    ASSERT_TRUE(d.ReadChunk(c, buf.data()).ok());
    const auto& e = d.chunk(c).entry;
    ASSERT_EQ(e.first_sample, next);
    for (uint32_t j = 0; j < e.sample_count; ++j) {
      uint8_t want[kElems];
      testing::PositionalSample(next, want, kElems);
      ASSERT_EQ(std::memcmp(&buf[j * kElems], want, kElems), 0) << "sample " << next;
      ASSERT_EQ(d.Label(c, buf.data(), j), testing::PositionalLabel(next, kClasses));
      ++next;
    }
  }
  EXPECT_EQ(next, d.sample_count());
}

TEST(Dataset, SingleFileRoundTripKeepsEverySampleAndLabel) {
  TempDir t;
  auto paths = WriteDataset(t.File("d.rfd"), 1000, 1);
  ASSERT_EQ(paths.size(), 1u);
  auto d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sample_count(), 1000u);
  EXPECT_EQ(d->header().num_classes, 7u);
  EXPECT_GT(d->chunk_count(), 5u);
  for (size_t c = 0; c < d->chunk_count(); ++c) {
    EXPECT_EQ(d->chunk(c).entry.offset % format::kAlign, 0u);
    EXPECT_EQ(d->chunk(c).entry.stored_bytes % format::kAlign, 0u);
  }
  ExpectEverySampleInPlace(*d);
}

TEST(Dataset, ShardedDatasetOpensFromBaseOrAnyShard) {
  TempDir t;
  auto paths = WriteDataset(t.File("s.rfd"), 777, 3);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[1], t.File("s-00001-of-00003.rfd"));
  for (const std::string& p : {t.File("s.rfd"), paths[2]}) {
    auto d = Dataset::Open(p);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->shard_count(), 3u);
    for (size_t c = 0; c < d->chunk_count(); ++c) EXPECT_EQ(d->chunk(c).shard, c % 3);
    ExpectEverySampleInPlace(*d);
  }
}

TEST(Dataset, MissingShardIsNamed) {
  TempDir t;
  auto paths = WriteDataset(t.File("m.rfd"), 300, 3);
  std::filesystem::remove(paths[1]);
  auto d = Dataset::Open(paths[0]);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsNotFound());
  EXPECT_EQ(d.status().path(), paths[1]);
}

TEST(Dataset, ShardOfAnotherDatasetIsRefused) {
  TempDir t;
  auto a = WriteDataset(t.File("a.rfd"), 300, 2);
  auto b = WriteDataset(t.File("b.rfd"), 300, 2);
  std::filesystem::copy_file(b[1], a[1], std::filesystem::copy_options::overwrite_existing);
  auto d = Dataset::Open(a[0]);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("does not belong"), std::string::npos);
}

TEST(Dataset, MeanAndStdAreThoseOfTheStoredValues) {
  TempDir t;
  DatasetSpec spec;
  spec.channels = 2;
  spec.num_classes = 2;
  auto w = DatasetWriter::Create(t.File("ms.rfd"), spec, {});
  ASSERT_TRUE(w.ok());
  // Channel 0 alternates 0 and 10 (mean 5, std 5); channel 1 is always 3 (std 0).
  uint8_t s[4] = {0, 3, 10, 3};
  uint8_t l[2] = {0, 1};
  ASSERT_TRUE((*w)->Append(s, l, 2).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto d = Dataset::Open(t.File("ms.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_FLOAT_EQ(d->header().mean[0], 5.f);
  EXPECT_FLOAT_EQ(d->header().stddev[0], 5.f);
  EXPECT_FLOAT_EQ(d->header().mean[1], 3.f);
  EXPECT_FLOAT_EQ(d->header().stddev[1], 0.f);
}

TEST(Dataset, OutOfRangeLabelIsRefusedNamingTheSample) {
  TempDir t;
  DatasetSpec spec;
  spec.num_classes = 3;
  auto w = DatasetWriter::Create(t.File("l.rfd"), spec, {});
  ASSERT_TRUE(w.ok());
  uint8_t s[2] = {1, 2};
  uint8_t l[2] = {1, 3};
  Status st = (*w)->Append(s, l, 2);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "label 3 of sample 1 is outside [0, 3)");
}

TEST(Dataset, UnfinishedWriterLeavesNoFiles) {
  TempDir t;
  {
    DatasetSpec spec;
    auto w = DatasetWriter::Create(t.File("u.rfd"), spec, {});
    ASSERT_TRUE(w.ok());
    uint8_t s = 1, l = 0;
    ASSERT_TRUE((*w)->Append(&s, &l, 1).ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(t.path()));
}

TEST(Dataset, MissingFileIsNotFound) {
  auto d = Dataset::Open("/nonexistent/x.rfd");
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsNotFound());
  EXPECT_NE(d.status().ToString().find("/nonexistent/x.rfd"), std::string::npos);
}

TEST(Dataset, FileThatIsNotADatasetIsRefused) {
  TempDir t;
  std::vector<uint8_t> junk(10000, 'j');
  testing::WriteAll(t.File("j.rfd"), junk);
  auto d = Dataset::Open(t.File("j.rfd"));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("wrong magic"), std::string::npos);
}

TEST(Dataset, TruncationAtAnyOffsetIsRefused) {
  TempDir t;
  auto paths = WriteDataset(t.File("t.rfd"), 400, 1);
  const auto good = testing::ReadAll(paths[0]);
  for (uint64_t cut = 0; cut < good.size(); cut += 509) {
    testing::WriteAll(paths[0], good.data(), cut);
    auto d = Dataset::Open(paths[0]);
    ASSERT_FALSE(d.ok()) << "truncated at " << cut;
    EXPECT_TRUE(d.status().IsCorruption()) << d.status().ToString();
    EXPECT_NE(d.status().ToString().find("t.rfd"), std::string::npos);
  }
}

TEST(Dataset, FlippedBitInAnyChunkIsCaughtWithFileChunkAndOffset) {
  TempDir t;
  auto paths = WriteDataset(t.File("f.rfd"), 400, 1);
  auto d = Dataset::Open(paths[0]);
  ASSERT_TRUE(d.ok());
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  for (size_t c = 0; c < d->chunk_count(); ++c) {
    const auto& e = d->chunk(c).entry;
    // A bit in the samples, in the labels area, and in the zero padding.
    for (uint64_t at : {uint64_t{0}, d->LabelsOffset(c), e.stored_bytes - 1}) {
      testing::FlipBit(paths[0], e.offset + at, 3);
      Status st = d->ReadChunk(c, buf.data());
      ASSERT_TRUE(st.IsCorruption()) << "chunk " << c << " byte " << at;
      EXPECT_EQ(st.ToString().rfind(paths[0] + ": chunk " + std::to_string(c) + " at byte " +
                                        std::to_string(e.offset) + ": checksum mismatch",
                                    0),
                0u)
          << st.ToString();
      testing::FlipBit(paths[0], e.offset + at, 3);
      ASSERT_TRUE(d->ReadChunk(c, buf.data()).ok());
    }
  }
}

// Version 2: every codec gives back every sample and label, in the same chunks (the order's unit)
// as the dataset written without compression.
TEST(Dataset, CompressedRoundTripKeepsEverySampleAndLabelInTheSameChunks) {
  TempDir t;
  const auto plain = Dataset::Open(testing::WritePositionalDataset(
      t.File("plain.rfd"), 3000,
      {.channels = 2, .height = 3, .width = 5, .classes = kClasses, .chunk_bytes = 16384}));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  for (const CodecSpec codec : {CodecSpec{Codec::kNone, 0}, CodecSpec{Codec::kLz4, 0},
                                CodecSpec{Codec::kZstd, 1}, CodecSpec{Codec::kZstd, 19}}) {
    for (uint32_t shards : {1u, 3u}) {
      SCOPED_TRACE(CodecText(codec) + ", " + std::to_string(shards) + " shards");
      std::vector<std::string> files;
      const std::string name = t.File(CodecText(codec) + "-" + std::to_string(shards) + ".rfd");
      testing::WritePositionalDataset(name, 3000,
                                      {.channels = 2,
                                       .height = 3,
                                       .width = 5,
                                       .classes = kClasses,
                                       .shards = shards,
                                       .chunk_bytes = 16384,
                                       .codec = codec,
                                       .version = 2},
                                      &files);
      auto d = Dataset::Open(name);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->header().version, 2u);
      EXPECT_EQ(d->header().codec, codec);
      EXPECT_EQ(d->ChunkSampleCounts(), plain->ChunkSampleCounts());
      EXPECT_EQ(d->data_bytes(), plain->data_bytes());
      EXPECT_EQ(d->max_chunk_bytes(), plain->max_chunk_bytes());
      // Every full chunk shrinks; the last (a few samples) may be stored raw.
      EXPECT_GE(d->compressed_chunks(), codec.codec == Codec::kNone ? 0 : d->chunk_count() - 1);
      if (codec.codec != Codec::kNone) {
        EXPECT_LT(d->total_bytes(), plain->total_bytes());
      }
      ExpectEverySampleInPlace(*d);
    }
  }
}

TEST(Dataset, TruncationOfACompressedDatasetAtAnyOffsetIsRefused) {
  TempDir t;
  const std::string p = testing::WritePositionalDataset(t.File("t.rfd"), 3000,
                                                        {.channels = 2,
                                                         .height = 3,
                                                         .width = 5,
                                                         .classes = kClasses,
                                                         .chunk_bytes = 16384,
                                                         .codec = {Codec::kZstd, 3}});
  const auto good = testing::ReadAll(p);
  for (uint64_t cut = 0; cut < good.size(); cut += 509) {
    testing::WriteAll(p, good.data(), cut);
    auto d = Dataset::Open(p);
    ASSERT_FALSE(d.ok()) << "truncated at " << cut;
    EXPECT_TRUE(d.status().IsCorruption()) << d.status().ToString();
    EXPECT_NE(d.status().ToString().find("t.rfd"), std::string::npos);
  }
}

TEST(Dataset, CorruptedIndexIsRefused) {
  TempDir t;
  auto paths = WriteDataset(t.File("i.rfd"), 400, 1);
  auto d = Dataset::Open(paths[0]);
  ASSERT_TRUE(d.ok());
  testing::FlipBit(paths[0], d->header().index_offset + 17);
  auto d2 = Dataset::Open(paths[0]);
  ASSERT_FALSE(d2.ok());
  EXPECT_NE(d2.status().ToString().find("index checksum mismatch"), std::string::npos);
}

}  // namespace
}  // namespace rf
