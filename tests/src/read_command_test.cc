// `ringfeed read` as a user runs it: exit codes and the one-line messages.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "pipeline/order/window_order.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;

std::string MakeDataset(const TempDir& t, uint32_t shards, const std::string& name = "r.rfd",
                        uint32_t samples = 2000) {
  DatasetSpec spec;
  spec.channels = 3;
  spec.height = 8;
  spec.width = 8;
  spec.num_classes = 10;
  WriterOptions o;
  o.shards = shards;
  o.chunk_bytes = 16384;
  auto w = DatasetWriter::Create(t.File(name), spec, o);
  EXPECT_TRUE(w.ok());
  std::vector<uint8_t> s(192);
  for (uint32_t i = 0; i < samples; ++i) {
    for (size_t k = 0; k < s.size(); ++k) s[k] = static_cast<uint8_t>(i * 7 + k);
    uint8_t l = static_cast<uint8_t>(i % 10);
    EXPECT_TRUE((*w)->Append(s.data(), &l, 1).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return t.File(name);
}

// The stored bytes of the chunks rank `rank` of `world` reads in the first epoch of `ringfeed
// train --seed S` (WindowOrder's: its dealt chunks and the shared ones).
uint64_t RankBytes(const Dataset& d, ShuffleMode shuffle, uint64_t seed, uint32_t rank,
                   uint32_t world, uint32_t node_ranks = 0) {
  OrderSettings o;
  o.shuffle = shuffle;
  o.seed = seed;
  o.rank = rank;
  o.world_size = world;
  o.node_ranks = node_ranks;
  uint64_t bytes = 0;
  for (uint64_t c : WindowOrder(d.ChunkSampleCounts(), o).EpochChunks(0)) {
    bytes += d.chunk(c).entry.stored_bytes;
  }
  return bytes;
}

std::string TextOf(const std::string& path) {
  const std::vector<uint8_t> bytes = testing::ReadAll(path);
  return std::string(bytes.begin(), bytes.end());
}

TEST(ReadCommand, DrainsEveryShardAndReportsTheRate) {
  TempDir t;
  const std::string path = MakeDataset(t, 2);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  std::string out;
  ASSERT_EQ(
      RunCommand(ProgramPath("ringfeed") + " read " + path + " --json " + t.File("r.json"), &out),
      0)
      << out;
  EXPECT_NE(out.find("ringfeed read: " + path + ": "), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(d->chunk_count()) + " chunks"), std::string::npos) << out;
  EXPECT_NE(out.find("GB/s"), std::string::npos);
  EXPECT_NE(out.find("checksums verified"), std::string::npos);
  const auto json = testing::ReadAll(t.File("r.json"));
  const std::string js(json.begin(), json.end());
  uint64_t bytes = 0;
  for (size_t c = 0; c < d->chunk_count(); ++c) bytes += d->chunk(c).entry.stored_bytes;
  EXPECT_NE(js.find("\"bytes\": " + std::to_string(bytes)), std::string::npos) << js;
}

TEST(ReadCommand, TrainOrderReadsEveryChunkOnce) {
  TempDir t;
  const std::string path = MakeDataset(t, 1);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  std::string out;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path +
                           " --order train --seed 7 --json " + t.File("r.json"),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(std::to_string(d->chunk_count()) + " chunks"), std::string::npos) << out;
  const auto json = testing::ReadAll(t.File("r.json"));
  const std::string js(json.begin(), json.end());
  uint64_t bytes = 0;
  for (size_t c = 0; c < d->chunk_count(); ++c) bytes += d->chunk(c).entry.stored_bytes;
  EXPECT_NE(js.find("\"bytes\": " + std::to_string(bytes)), std::string::npos) << js;
  EXPECT_NE(js.find("\"order\": \"train\""), std::string::npos) << js;
}

// With --world-size, the chunks one rank reads in the epoch: its dealt ones and the shared ones
// (pipeline/order/window_order.h), in either order; the ranks' reads cover the dataset.
TEST(ReadCommand, WorldSizeReadsOnlyTheRanksChunks) {
  TempDir t;
  const std::string path = MakeDataset(t, 2);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  for (const char* order : {"stored", "train"}) {
    uint64_t all = 0;
    for (uint32_t rank = 0; rank < 3; ++rank) {
      const uint64_t bytes =
          RankBytes(*d, std::string(order) == "train" ? ShuffleMode::kWindow : ShuffleMode::kNone,
                    7, rank, 3);
      all += bytes;
      std::string out;
      ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path + " --order " + order +
                               " --seed 7 --world-size 3 --rank " + std::to_string(rank) +
                               " --json " + t.File("r.json"),
                           &out),
                0)
          << out;
      const std::string js = TextOf(t.File("r.json"));
      EXPECT_NE(js.find("\"bytes\": " + std::to_string(bytes) + ","), std::string::npos)
          << order << " rank " << rank << "\n"
          << js;
      EXPECT_NE(js.find("\"world_size\": 3"), std::string::npos) << js;
    }
    uint64_t dataset = 0;  // every chunk once; the shared ones are read by every rank
    for (size_t c = 0; c < d->chunk_count(); ++c) dataset += d->chunk(c).entry.stored_bytes;
    EXPECT_GE(all, dataset);
    EXPECT_LE(all, dataset + 2 * 3 * d->chunk(0).entry.stored_bytes);
  }
}

// --partition node --node-ranks N reads the rank's chunks under the node partition (as many
// bytes as the order says: which chunks, the order's tests check); a count that does not divide
// the world, or one without the partition, exits 2.
TEST(ReadCommand, ThePartitionNodeReadsTheRanksChunksOfItsMachinesPart) {
  TempDir t;
  const std::string path = MakeDataset(t, 2);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  const std::string read = ProgramPath("ringfeed") + " read " + path +
                           " --order train --seed 7 --world-size 4 --rank 3 --json " +
                           t.File("r.json");
  std::string out;
  ASSERT_EQ(RunCommand(read + " --partition node --node-ranks 2", &out), 0) << out;
  const uint64_t node = RankBytes(*d, ShuffleMode::kWindow, 7, 3, 4, 2);
  EXPECT_NE(TextOf(t.File("r.json")).find("\"bytes\": " + std::to_string(node) + ","),
            std::string::npos);
  EXPECT_EQ(RunCommand(read + " --partition node --node-ranks 3", &out), 2) << out;
  EXPECT_NE(out.find("--node-ranks 3 does not divide --world-size 4"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(read + " --node-ranks 2", &out), 2) << out;
  EXPECT_NE(out.find("--node-ranks"), std::string::npos) << out;
}

// A directory of datasets (io/dataset.h) is read as one: every part's chunks, or, with
// --world-size, the chunks of the rank's share of WindowOrder's partition over the directory's
// chunk sample counts (each part's short last chunk is shared).
TEST(ReadCommand, ADirectoryIsReadAsOneDatasetWithEachRanksChunks) {
  TempDir t;
  MakeDataset(t, 1, "a.rfd", 1000);
  MakeDataset(t, 2, "b.rfd", 1300);
  MakeDataset(t, 1, "c.rfd", 77);
  auto d = Dataset::Open(t.path());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->part_count(), 3u);
  ASSERT_EQ(d->shard_count(), 4u);
  std::string out;
  ASSERT_EQ(
      RunCommand(ProgramPath("ringfeed") + " read " + t.path() + " --json " + t.File("r.json"),
                 &out),
      0)
      << out;
  EXPECT_NE(out.find("ringfeed read: " + t.path() + ": "), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(d->chunk_count()) + " chunks"), std::string::npos) << out;
  const std::string js = TextOf(t.File("r.json"));
  EXPECT_NE(js.find("\"parts\": 3,"), std::string::npos) << js;
  EXPECT_NE(js.find("\"shards\": 4,"), std::string::npos) << js;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    const uint64_t bytes = RankBytes(*d, ShuffleMode::kWindow, 5, rank, 2);
    ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + t.path() +
                             " --order train --seed 5 --world-size 2 --rank " +
                             std::to_string(rank) + " --json " + t.File("r.json"),
                         &out),
              0)
        << out;
    const std::string rank_js = TextOf(t.File("r.json"));
    EXPECT_NE(rank_js.find("\"bytes\": " + std::to_string(bytes) + ","), std::string::npos)
        << "rank " << rank << "\n"
        << rank_js;
  }
}

// The rank has one rule and one message, the pipeline configuration's.
TEST(ReadCommand, RankPastTheWorldSizeExitsTwo) {
  TempDir t;
  const std::string path = MakeDataset(t, 1);
  std::string out;
  EXPECT_EQ(
      RunCommand(ProgramPath("ringfeed") + " read " + path + " --world-size 2 --rank 2", &out), 2);
  EXPECT_EQ(out, "ringfeed: --rank must be < --world-size (2), got 2\n");
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path + " --world-size 0", &out), 2);
  EXPECT_EQ(out, "ringfeed read: --world-size must be a whole number from 1 to 65536, got 0\n");
}

TEST(ReadCommand, UnknownOrderExitsTwoNamingIt) {
  TempDir t;
  const std::string path = MakeDataset(t, 1);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path + " --order random", &out), 2);
  EXPECT_EQ(out, "ringfeed read: --order must be stored or train, got \"random\"\n");
}

TEST(ReadCommand, FlippedBitExitsOneWithFileChunkAndOffset) {
  TempDir t;
  const std::string path = MakeDataset(t, 1);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  const auto& e = d->chunk(4).entry;
  testing::FlipBit(path, e.offset + 7);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path, &out), 1);
  EXPECT_EQ(out.rfind("ringfeed: " + path + ": chunk 4 at byte " + std::to_string(e.offset) +
                          ": checksum mismatch",
                      0),
            0u)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST(ReadCommand, TruncatedDatasetExitsOne) {
  TempDir t;
  const std::string path = MakeDataset(t, 1);
  testing::Truncate(path, 50000);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path, &out), 1);
  EXPECT_NE(out.find(path + ": at byte 50000: file is truncated"), std::string::npos) << out;
}

TEST(ReadCommand, MissingDatasetExitsOneNamingIt) {
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read /nonexistent/d.rfd", &out), 1);
  EXPECT_NE(out.find("/nonexistent/d.rfd"), std::string::npos) << out;
}

TEST(ReadCommand, BadFlagExitsTwo) {
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read x.rfd --io sideways", &out), 2);
  EXPECT_NE(out.find("--io must be direct, buffered or pread, got \"sideways\""), std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read --no-such-flag", &out), 2);
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " frobnicate", &out), 2);
}

TEST(ReadCommand, JsonOntoTheDatasetExitsTwoAndLeavesItUnchanged) {
  TempDir t;
  const std::string path = MakeDataset(t, 2);
  auto d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  const std::string shard = d->shard_path(1);
  const std::vector<uint8_t> before = testing::ReadAll(shard);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path + " --json " + shard, &out), 2);
  EXPECT_EQ(out, "ringfeed: --json " + shard + " is DATASET's file " + shard +
                     "; refusing to overwrite an input\n");
  EXPECT_EQ(testing::ReadAll(shard), before);
}

// The read size has one rule and one message, the training command's (its one declaration).
TEST(ReadCommand, ReadSizeOffTheRuleExitsTwo) {
  TempDir t;
  const std::string path = MakeDataset(t, 1);
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + path + " --read-size 5000", &out), 2);
  EXPECT_EQ(out,
            "ringfeed read: --read-size must be a multiple of 4KiB from 4KiB to 1GiB, got "
            "5000\n");
  EXPECT_EQ(
      RunCommand(ProgramPath("ringfeed") + " train --data " + path + " --read-size 5000", &out), 2);
  EXPECT_EQ(out,
            "ringfeed train: --read-size must be a multiple of 4KiB from 4KiB to 1GiB, got "
            "5000\n");
}

TEST(ReadCommand, HelpListsEveryOptionWithItsDefault) {
  std::string out;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read --help", &out), 0);
  for (const char* o :
       {"--io direct|buffered|pread", "default direct", "--queue-depth N", "default 8",
        "--read-size SIZE", "default 4MiB", "--ring-slots N", "default 16", "--no-verify",
        "--pinned auto|on|off", "default auto", "--register-buffers on|off", "default on",
        "--passes N", "--order stored|train", "--seed N", "--rank N", "--world-size N",
        "--json FILE"}) {
    EXPECT_NE(out.find(o), std::string::npos) << o << "\n" << out;
  }
}

}  // namespace
}  // namespace rf
