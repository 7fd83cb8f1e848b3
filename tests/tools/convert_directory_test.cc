// ringfeed-convert on a directory of datasets (io/dataset.h: its parts read as one, in name
// order): inspect lists the parts with their samples, verify reads them all and names a bad
// chunk by its part's file, export gives the parts' samples back to back, recompress refuses it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::RunCommand;
using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

constexpr uint64_t kSamples = 100 + 250 + 37;

// Three parts of positional 1x8x8 samples (63 a chunk) holding samples 0-99, 100-349 (2
// shards, zstd) and 350-386 of the whole; a file beside them that is no part.
void WriteParts(const TempDir& t) {
  testing::WritePositionalDataset(t.File("a.rfd"), 100, {.chunk_bytes = 4096});
  testing::WritePositionalDataset(
      t.File("b.rfd"), 250,
      {.shards = 2, .chunk_bytes = 4096, .codec = {Codec::kZstd, 3}, .first_sample = 100});
  testing::WritePositionalDataset(t.File("c.rfd"), 37, {.chunk_bytes = 4096, .first_sample = 350});
  testing::WriteAll(t.File("README.txt"), std::vector<uint8_t>(10, 'r'));
}

TEST(ConvertDirectory, InspectListsThePartsWithTheirSamplesAndVerifyReadsThemAll) {
  TempDir t;
  WriteParts(t);
  std::string out;
  ASSERT_EQ(RunCommand(Program() + " inspect " + t.path(), &out), 0) << out;
  for (const std::string& line : {
           "directory:    " + t.path() + ", 3 datasets read as one, in this order\n",
           "  part 0: " + t.File("a.rfd") +
               "  100 samples (from 0), 2 chunks, 1 file, version 1, codec none\n",
           "  part 1: " + t.File("b.rfd") +
               "  250 samples (from 100), 4 chunks, 2 shards, version 2, codec zstd:3\n",
           "  part 2: " + t.File("c.rfd") +
               "  37 samples (from 350), 1 chunks, 1 file, version 1, codec none\n",
           std::string("files:        4 ("),
           "  " + t.File("b-00001-of-00002.rfd") + "  ",
           std::string("samples:      387\n"),
           std::string("chunks:       7 (at most 63 samples each, each part's last fewer"),
           std::string("format:       version 2 (the newest part's), dataset id "),
           std::string("mean, std:    pooled from the parts'"),
       }) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
  EXPECT_EQ(out.find("README"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Program() + " verify " + t.path(), &out), 0) << out;
  EXPECT_EQ(out, "OK: 7 chunks, 387 samples verified\n");
}

TEST(ConvertDirectory, VerifyNamesACorruptChunkByItsPartsFileChunkAndOffset) {
  TempDir t;
  WriteParts(t);
  auto d = Dataset::Open(t.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const ChunkLocation& c = d->chunk(d->part(1).first_chunk + 3);  // b's chunk 3
  ASSERT_EQ(d->shard_path(c.shard), t.File("b-00001-of-00002.rfd"));
  testing::FlipBit(d->shard_path(c.shard), c.entry.offset + 20);
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " verify " + t.path(), &out), 1);
  EXPECT_EQ(out.rfind("ringfeed-convert: " + t.File("b-00001-of-00002.rfd") + ": chunk 3 at byte " +
                          std::to_string(c.entry.offset) + ": ",
                      0),
            0u)
      << out;
}

TEST(ConvertDirectory, ExportGivesThePartsSamplesBackToBackByteExact) {
  TempDir t, o;
  WriteParts(t);
  std::string out;
  ASSERT_EQ(
      RunCommand(Program() + " export " + t.path() + " --format raw -q -o " + o.File("x"), &out), 0)
      << out;
  EXPECT_EQ(testing::ReadAll(o.File("x.records")), testing::PositionalSamples(kSamples, 64));
  EXPECT_EQ(testing::ReadAll(o.File("x.labels")), testing::PositionalLabels(kSamples));
}

// Its chunks are rewritten by one writer, chunk for chunk: a directory is several datasets.
TEST(ConvertDirectory, RecompressRefusesADirectoryNamingIt) {
  TempDir t, o;
  WriteParts(t);
  std::string out;
  EXPECT_EQ(
      RunCommand(Program() + " recompress " + t.path() + " --compress lz4 -o " + o.File("x.rfd"),
                 &out),
      2);
  EXPECT_EQ(out, "ringfeed-convert: " + t.path() +
                     ": a directory of 3 dataset(s): recompress takes one dataset; recompress "
                     "each of its .rfd datasets into a directory of their own\n");
  EXPECT_TRUE(testing::FilesIn(o.path()).empty());
}

}  // namespace
}  // namespace rf
