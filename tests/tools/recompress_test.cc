// ringfeed-convert recompress (issue 27, item 4): another codec for the same chunks. The data,
// the chunk boundaries (so the order), the channel statistics and the dataset id come through
// unchanged; the output never replaces its input; an input compressed already is allowed and
// said so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::RunCommand;
using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

constexpr uint64_t kSamples = 1000;

// A raw dataset of positional 1x28x28 uint8 samples (compressible), in `shards` shards.
std::string WriteRawDataset(const TempDir& t, const std::string& name, uint32_t shards = 1) {
  testing::WriteAll(t.File("in.records"), testing::PositionalSamples(kSamples, 28 * 28));
  testing::WriteAll(t.File("in.labels"), testing::PositionalLabels(kSamples));
  const Status st = Convert({"raw", "--records", t.File("in.records"), "--shape", "1,28,28",
                             "--label", "file:" + t.File("in.labels"), "--chunk-size", "48KiB",
                             "--shards", std::to_string(shards), "-q", "-o", t.File(name)});
  EXPECT_TRUE(st.ok()) << st.ToString();
  return t.File(name);
}

Status Recompress(const std::string& in, const std::string& out, const std::string& codec,
                  std::string* report = nullptr) {
  return Convert({"recompress", in, "-o", out, "--compress", codec, "--compress-threads", "2"},
                 report);
}

// raw -> zstd -> lz4 -> none: the same chunk data and the same chunks at every step, and the last
// is the first file byte for byte (the same id, chunks, statistics and version 1: a migration
// back to version 1 proven byte-exact).
TEST(Recompress, RoundTripKeepsTheChunksAndEndsByteIdentical) {
  TempDir t;
  const std::string raw = WriteRawDataset(t, "raw.rfd");
  ASSERT_TRUE(Recompress(raw, t.File("z.rfd"), "zstd").ok());
  ASSERT_TRUE(Recompress(t.File("z.rfd"), t.File("l.rfd"), "lz4").ok());
  ASSERT_TRUE(Recompress(t.File("l.rfd"), t.File("n.rfd"), "none").ok());
  for (const char* step : {"z.rfd", "l.rfd", "n.rfd"}) {
    SCOPED_TRACE(step);
    EXPECT_TRUE(testing::SameChunks(raw, t.File(step)));
    const Result<Dataset> a = Dataset::Open(raw), b = Dataset::Open(t.File(step));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->ChunkSampleCounts(), b->ChunkSampleCounts());
    EXPECT_EQ(a->header().dataset_id, b->header().dataset_id);  // a checkpoint resumes on it
    EXPECT_EQ(
        0, std::memcmp(a->header().mean.data(), b->header().mean.data(), sizeof a->header().mean));
    EXPECT_EQ(0, std::memcmp(a->header().stddev.data(), b->header().stddev.data(),
                             sizeof a->header().stddev));
  }
  EXPECT_EQ(Dataset::Open(t.File("z.rfd"))->compressed_chunks(), Dataset::Open(raw)->chunk_count());
  EXPECT_EQ(Dataset::Open(t.File("n.rfd"))->header().version, 1u);
  EXPECT_TRUE(testing::ReadAll(t.File("n.rfd")) == testing::ReadAll(raw));
}

// float32 samples: the writer's statistics are double sums, recomputed from the same samples in
// the same order, so they come out bit for bit (a sum in another order could differ in its last
// bit). Shards: as many as the input's, chunk g still in shard g mod N.
TEST(Recompress, FloatStatisticsAndShardsComeOutIdentical) {
  TempDir t;
  std::vector<float> v = testing::PositionalFloats(kSamples, 3 * 8 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = v[i] * 0.001f + 0.1f * static_cast<float>(i % 7);
  testing::WriteAll(t.File("x.npy"), testing::NpyBytes("<f4", {kSamples, 3, 8, 8}, v.data(),
                                                       v.size() * sizeof(float)));
  ASSERT_TRUE(Convert({"npy", "--images", t.File("x.npy"), "--chunk-size", "64KiB", "--shards", "3",
                       "-q", "-o", t.File("f.rfd")})
                  .ok());
  ASSERT_TRUE(Recompress(t.File("f.rfd"), t.File("g.rfd"), "zstd:9").ok());
  EXPECT_TRUE(testing::SameChunks(t.File("f.rfd"), t.File("g.rfd")));
  const Result<Dataset> f = Dataset::Open(t.File("f.rfd")), g = Dataset::Open(t.File("g.rfd"));
  ASSERT_TRUE(f.ok() && g.ok());
  EXPECT_EQ(g->shard_count(), 3u);
  EXPECT_GT(g->chunk_count(), 3u);
  for (size_t c = 0; c < g->chunk_count(); ++c) EXPECT_EQ(g->chunk(c).shard, c % 3);
  EXPECT_EQ(g->header().num_classes, 0u);  // no labels in, none out
  EXPECT_EQ(0,
            std::memcmp(f->header().mean.data(), g->header().mean.data(), sizeof f->header().mean));
  EXPECT_EQ(0, std::memcmp(f->header().stddev.data(), g->header().stddev.data(),
                           sizeof f->header().stddev));
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"f-00000-of-00003.rfd", "f-00001-of-00003.rfd",
                                      "f-00002-of-00003.rfd", "g-00000-of-00003.rfd",
                                      "g-00001-of-00003.rfd", "g-00002-of-00003.rfd", "x.npy"}));
}

TEST(Recompress, ReportsTheStoredBytesBeforeAndAfterAndTheRatio) {
  TempDir t;
  const std::string raw = WriteRawDataset(t, "raw.rfd");
  std::string out;
  ASSERT_TRUE(Recompress(raw, t.File("z.rfd"), "zstd", &out).ok());
  const Result<Dataset> a = Dataset::Open(raw);
  ASSERT_TRUE(a.ok());
  const testing::StoredSize stored = testing::StoredSizeOf(t.File("z.rfd"));
  const std::string n = std::to_string(a->chunk_count());
  EXPECT_EQ(out.rfind("wrote " + t.File("z.rfd") + ": " + std::to_string(kSamples) + " samples, " +
                          n + " chunks, ",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("\nstored: " + std::to_string(a->data_bytes()) + " bytes before, " +
                     std::to_string(stored.bytes) + " after (ratio " + stored.ratio + "); " + n +
                     " of " + n + " chunks compressed, " + std::to_string(a->data_bytes()) +
                     " bytes of chunk data (format version 2)\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("note:"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  ASSERT_TRUE(
      Convert({"recompress", raw, "-o", t.File("q.rfd"), "--compress", "lz4", "-q"}, &out).ok());
  EXPECT_EQ(out, "");
}

// Issue 27, bad input: "compressing an already compressed input is allowed and reported
// (ratio about 1)".
TEST(Recompress, AnInputCompressedAlreadyIsAllowedAndReported) {
  TempDir t;
  const std::string raw = WriteRawDataset(t, "raw.rfd");
  ASSERT_TRUE(Recompress(raw, t.File("z.rfd"), "zstd").ok());
  std::string out;
  ASSERT_TRUE(Recompress(t.File("z.rfd"), t.File("zz.rfd"), "zstd", &out).ok());
  EXPECT_TRUE(testing::SameChunks(raw, t.File("zz.rfd")));
  const size_t at = out.find("(ratio ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_NEAR(std::stod(out.substr(at + 7)), 1.0, 0.05) << out;
  const Result<Dataset> z = Dataset::Open(t.File("z.rfd"));
  ASSERT_TRUE(z.ok());
  const std::string ratio = testing::StoredSizeOf(t.File("z.rfd")).ratio;
  const std::string n = std::to_string(z->chunk_count());
  EXPECT_NE(
      out.find("note: " + t.File("z.rfd") + " was compressed already (zstd:3: " + n + " of " + n +
               " chunks, ratio " + ratio + "); each chunk was decompressed and compressed again\n"),
      std::string::npos)
      << out;
}

// Statistics that an older writer computed otherwise (planted: the header's mean forged) are
// recomputed from the samples, and the report says they differ.
TEST(Recompress, StatisticsThatDifferFromTheInputsAreSaid) {
  TempDir t;
  const std::string raw = WriteRawDataset(t, "raw.rfd");
  std::string out;
  ASSERT_TRUE(Recompress(raw, t.File("z.rfd"), "zstd", &out).ok());
  EXPECT_EQ(out.find("statistics"), std::string::npos) << out;
  const float mean = Dataset::Open(raw)->header().mean[0];
  testing::ForgeHeader(raw, [](format::Header* h) { h->mean[0] += 1.f; });
  ASSERT_TRUE(Recompress(raw, t.File("z.rfd"), "zstd", &out).ok());
  EXPECT_NE(out.find("\nnote: the channel statistics differ from " + raw +
                     "'s (recomputed from its samples; an older writer computed them otherwise)\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(Dataset::Open(t.File("z.rfd"))->header().mean[0], mean);
}

// The converter's rule: an output that is the input, by any name, is refused before anything is
// written (exit 2), and the input keeps its bytes.
TEST(Recompress, OntoItsInputIsRefusedAndTheInputKept) {
  TempDir t;
  const std::string raw = WriteRawDataset(t, "raw.rfd");
  WriteRawDataset(t, "s.rfd", 2);
  ASSERT_EQ(::symlink(raw.c_str(), t.File("link.rfd").c_str()), 0);
  const std::vector<uint8_t> before = testing::ReadAll(raw);
  const std::vector<uint8_t> shard1 = testing::ReadAll(t.File("s-00001-of-00002.rfd"));
  const std::vector<std::string> files = testing::FilesIn(t.path());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {raw, raw},                                        // the same name
      {raw, t.path() + "/./raw.rfd"},                    // another spelling
      {raw, t.File("link.rfd")},                         // a symlink to it
      {t.File("link.rfd"), raw},                         // read through the link
      {t.File("s.rfd"), t.File("s.rfd")},                // a sharded input by its base name
      {t.File("s-00001-of-00002.rfd"), t.File("s.rfd")}  // ... named by one shard
  };
  for (const auto& [input, output] : cases) {
    SCOPED_TRACE(input + " -> " + output);
    std::string out;
    EXPECT_EQ(
        RunCommand(Program() + " recompress " + input + " -o " + output + " --compress zstd", &out),
        2);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_NE(out.find("is the input"), std::string::npos) << out;
    EXPECT_NE(out.find("refusing to replace an input"), std::string::npos) << out;
  }
  EXPECT_TRUE(testing::ReadAll(raw) == before);
  EXPECT_TRUE(testing::ReadAll(t.File("s-00001-of-00002.rfd")) == shard1);
  EXPECT_EQ(testing::FilesIn(t.path()), files);
}

// A bad chunk in the input fails the whole run naming file, chunk and offset (exit 1), and no
// output is left behind.
TEST(Recompress, ABadInputChunkFailsNamingItAndLeavesNoOutput) {
  TempDir t;
  const std::string raw = WriteRawDataset(t, "raw.rfd");
  const Result<Dataset> d = Dataset::Open(raw);
  ASSERT_TRUE(d.ok());
  const uint64_t offset = d->chunk(2).entry.offset;
  testing::FlipBit(raw, offset + 100);
  const std::vector<std::string> files = testing::FilesIn(t.path());
  std::string out;
  EXPECT_EQ(
      RunCommand(Program() + " recompress " + raw + " -o " + t.File("z.rfd") + " --compress zstd",
                 &out),
      1);
  EXPECT_EQ(out.rfind("ringfeed-convert: " + raw + ": chunk 2 at byte " + std::to_string(offset) +
                          ": checksum mismatch",
                      0),
            0u)
      << out;
  EXPECT_EQ(testing::FilesIn(t.path()), files);
}

}  // namespace
}  // namespace rf

namespace rf {
namespace {

// Records of any size: recompress keeps each chunk's records together (so the order), and back to
// raw the file is the first byte for byte; inspect says what they are; export refuses them.
TEST(RecompressRecords, TokenRecordsKeepTheirChunksAndComeBackByteIdentical) {
  TempDir t;
  auto docs = testing::Documents(400, 900);
  for (auto& d : docs)
    for (auto& id : d) id %= 300;  // a small vocabulary: the chunks shrink
  ASSERT_TRUE(testing::WriteDocuments(t.File("a.rfd"), docs, {}, 12 << 10).ok());
  ASSERT_TRUE(Recompress(t.File("a.rfd"), t.File("b.rfd"), "zstd:5").ok());
  ASSERT_TRUE(Recompress(t.File("b.rfd"), t.File("c.rfd"), "none").ok());
  Result<Dataset> a = Dataset::Open(t.File("a.rfd"));
  Result<Dataset> b = Dataset::Open(t.File("b.rfd"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->ChunkSampleCounts(), b->ChunkSampleCounts());
  EXPECT_GT(b->compressed_chunks(), 0u);
  EXPECT_EQ(testing::ReadAll(t.File("c.rfd")), testing::ReadAll(t.File("a.rfd")));
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " inspect " + t.File("b.rfd"), &out), 0);
  EXPECT_NE(out.find("records:      tokens of any size (uint16, the largest "), std::string::npos)
      << out;
  EXPECT_EQ(
      RunCommand(Program() + " export " + t.File("a.rfd") + " --format raw -o " + t.File("out"),
                 &out),
      2);
  EXPECT_NE(out.find("holds tokens records of any size"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
