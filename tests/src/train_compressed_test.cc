// `ringfeed train` and `ringfeed read` on compressed datasets (format version 2, issue 27): a
// dataset's codec changes what the disk reads, never what is trained. The same samples stored
// raw (version 1 or 2), with lz4 or with zstd train bit-identically in the same order, resume
// bit-identically, and each rank reads the same chunks; the epoch line, the metrics and `read`
// give the stored and the delivered rates.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Stored {
  const char* name;
  WriterOptions options;
};

// The same 300 samples four ways.
std::vector<Stored> EveryWay() {
  WriterOptions v2;
  v2.version = 2;
  WriterOptions lz4;
  lz4.codec = {Codec::kLz4, 0};
  WriterOptions zstd;
  zstd.codec = {Codec::kZstd, 3};
  return {{"v1.rfd", {}}, {"v2.rfd", v2}, {"lz4.rfd", lz4}, {"zstd.rfd", zstd}};
}

TEST(TrainCompressed, EveryCodecTrainsBitIdenticallyInTheSameOrder) {
  TempDir t;
  std::vector<std::string> orders;
  std::vector<Checkpoint> checkpoints;
  for (const Stored& s : EveryWay()) {
    const std::string data = MakeDataset(t, 300, s.options, s.name);
    auto d = Dataset::Open(data);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const bool compressed = s.options.codec.codec != Codec::kNone;
    EXPECT_EQ(d->header().version, s.options.version != 0 || compressed ? 2u : 1u) << s.name;
    // Every chunk of more than one 4096-byte block shrinks here (the samples are regular), so
    // all of those are compressed (a test that read raw chunks would prove nothing); the last,
    // of one block, cannot shrink and is stored raw.
    uint64_t multi_block = 0;
    for (size_t g = 0; g < d->chunk_count(); ++g)
      multi_block += d->chunk(g).entry.data_bytes > format::kAlign ? 1 : 0;
    ASSERT_GE(multi_block, 5u);
    EXPECT_EQ(d->compressed_chunks(), compressed ? multi_block : 0u) << s.name;
    const std::string name = s.name;
    std::string out;
    ASSERT_EQ(
        RunCommand(Train(data, "--epochs 2 --max-steps 15 --dump-order " + t.File(name + ".order") +
                                   " --checkpoint " + t.File(name + ".ckpt")),
                   &out),
        0)
        << out;
    orders.push_back(Slurp(t.File(name + ".order")));
    auto c = ReadCheckpoint(t.File(name + ".ckpt"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    checkpoints.push_back(std::move(c).value());
  }
  ASSERT_FALSE(orders[0].empty());
  for (size_t i = 1; i < orders.size(); ++i) {
    EXPECT_EQ(orders[i], orders[0]) << EveryWay()[i].name;
    EXPECT_EQ(checkpoints[i].step, 15u);
    EXPECT_TRUE(testing::BitIdentical(checkpoints[i].params, checkpoints[0].params))
        << EveryWay()[i].name;
    EXPECT_TRUE(testing::BitIdentical(checkpoints[i].momentum, checkpoints[0].momentum))
        << EveryWay()[i].name;
  }
}

// Stopped mid-epoch on the zstd copy and resumed, without checksums on the second leg (the
// frames are still checked), the run ends where a straight run over the raw copy ends.
TEST(TrainCompressed, AResumedCompressedRunEndsBitIdenticalToAStraightRawRun) {
  TempDir t;
  const std::string raw = MakeDataset(t, 300, {}, "raw.rfd");
  WriterOptions z;
  z.codec = {Codec::kZstd, 5};
  const std::string zstd = MakeDataset(t, 300, z, "zstd.rfd");
  std::string out;
  ASSERT_EQ(RunCommand(Train(raw, "--epochs 5 --max-steps 25 --checkpoint " + t.File("a")), &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Train(zstd, "--epochs 5 --max-steps 13 --checkpoint " + t.File("b")), &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Train(zstd, "--epochs 5 --max-steps 25 --no-verify --resume " + t.File("b") +
                                       " --checkpoint " + t.File("c")),
                       &out),
            0)
      << out;
  auto a = ReadCheckpoint(t.File("a"));
  auto c = ReadCheckpoint(t.File("c"));
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_EQ(c->step, 25u);
  EXPECT_EQ(c->next_sample, a->next_sample);
  EXPECT_TRUE(testing::BitIdentical(a->params, c->params));
  EXPECT_TRUE(testing::BitIdentical(a->momentum, c->momentum));
}

TEST(TrainCompressed, TheEpochLineAndTheMetricsGiveStoredAndDeliveredRates) {
  TempDir t;
  WriterOptions z;
  z.codec = {Codec::kZstd, 3};
  const std::string data = MakeDataset(t, 300, z);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 1 --decode-threads 3 --metrics " + t.File("m")), &out),
            0)
      << out;
  EXPECT_NE(out.find(" delivered, decode "), std::string::npos) << out;
  std::ifstream in(t.File("m"));
  std::string line;
  bool seen = false;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("event", "") != "epoch") continue;
    seen = true;
    // About 2.7x here (the samples are regular); what matters is that the two differ, and how.
    EXPECT_GT(j["delivered_gb_per_s"].get<double>(), 1.5 * j["disk_gb_per_s"].get<double>())
        << line;
    EXPECT_GT(j["decode_busy_share"].get<double>(), 0.0) << line;
    EXPECT_LE(j["decode_busy_share"].get<double>(), 1.0) << line;
  }
  EXPECT_TRUE(seen);
}

// Each rank reads its own chunks, the same ones whatever the codec: rank 1 of 2 delivers the
// same chunks and bytes from the zstd copy as from the raw one, from fewer stored bytes.
TEST(TrainCompressed, ReadGivesEachRankTheSameChunksAndBothRates) {
  TempDir t;
  const std::string raw = MakeDataset(t, 300, {}, "raw.rfd");
  WriterOptions z;
  z.codec = {Codec::kZstd, 3};
  const std::string zstd = MakeDataset(t, 300, z, "zstd.rfd");
  std::vector<nlohmann::json> runs;
  for (const std::string& data : {raw, zstd}) {
    std::string out;
    const std::string json = data + ".json";
    ASSERT_EQ(
        RunCommand(ProgramPath("ringfeed") + " read " + data +
                       " --order train --world-size 2 --rank 1 --decode-threads 2 --json " + json,
                   &out),
        0)
        << out;
    if (data == zstd) {
      EXPECT_NE(out.find(" stored: "), std::string::npos) << out;
      EXPECT_NE(out.find("(ratio "), std::string::npos) << out;
    }
    const nlohmann::json j = nlohmann::json::parse(Slurp(json));
    runs.push_back(j["runs"][0]);
    EXPECT_EQ(j["format_version"].get<int>(), data == zstd ? 2 : 1);
    EXPECT_EQ(j["codec"].get<std::string>(), data == zstd ? "zstd:3" : "none");
  }
  EXPECT_EQ(runs[1]["chunks"], runs[0]["chunks"]);
  EXPECT_EQ(runs[1]["bytes"], runs[0]["bytes"]);
  EXPECT_EQ(runs[0]["stored_bytes"], runs[0]["bytes"]);
  EXPECT_LT(runs[1]["stored_bytes"].get<uint64_t>(), runs[0]["bytes"].get<uint64_t>());
  EXPECT_EQ(runs[1]["decode_threads"].get<int>(), 2);
}

}  // namespace
}  // namespace rf
