// Checkpoint files: exact round trips, and every damage the reader claims to catch, planted.
#include "model/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "io/checksum.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::BitIdentical;
using testing::TempDir;

// Version 3's optimizer, schedule and augmentation block: u32 kind, 4 f32, u32 kind, f32 warmup,
// 2 u64, 2 u32, u64; then version 4's batch norm flag (u32) and version 5's mixture block (a u32
// count, 0 for one dataset: nothing else).
constexpr size_t kVersion3Block = 4 + 4 * 4 + 4 + 4 + 2 * 8 + 2 * 4 + 8;
constexpr size_t kSinceVersion3 = kVersion3Block + 4 + 4;
// Where SmallConfig's ranks block starts: magic, version, model (4 dims, block count, 2 widths,
// hidden), sgd, position (4 u64, 2 u32, 2 u64).
constexpr size_t kRanksAt = 8 + 4 + (4 * 4 + 4 + 2 * 4 + 4) + 3 * 4 + (4 * 8 + 2 * 4 + 2 * 8);

std::vector<uint8_t> Encoded(const Checkpoint& c) {
  Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(c);
  EXPECT_TRUE(encoded.ok()) << encoded.status().ToString();
  return encoded.ok() ? std::move(encoded).value() : std::vector<uint8_t>(16);
}

// Recomputes the checksum of edited bytes, as a writer of that content would have.
void Reseal(std::vector<uint8_t>* b) {
  const uint64_t sum = Checksum(b->data(), b->size() - 8);
  std::memcpy(b->data() + b->size() - 8, &sum, 8);
}

// Where the partition block (version 6) of `c`'s encoding starts, for SmallConfig and no
// mixture: after the ranks block (its stretches 12 bytes each), version 3's block, the batch
// norm flag and the mixture's count; it holds a u32 and one a stretch.
size_t PartitionAt(const Checkpoint& c) {
  return kRanksAt + 8 + 12 * c.order.resumed.stretches.size() + kVersion3Block + 4 + 4;
}

// `c` as version 5 wrote it: without the partition block.
std::vector<uint8_t> EncodedV5(const Checkpoint& c) {
  std::vector<uint8_t> b = Encoded(c);
  const size_t at = PartitionAt(c);
  b.erase(b.begin() + at, b.begin() + at + 4 + 4 * c.order.resumed.stretches.size());
  const uint32_t v5 = 5;
  std::memcpy(b.data() + 8, &v5, 4);
  Reseal(&b);
  return b;
}

ModelConfig SmallConfig() {
  ModelConfig c;
  c.channels = 1;
  c.height = c.width = 12;
  c.classes = 4;
  c.conv = {3, 5};
  c.hidden = 7;
  return c;
}

// Every value encodes its tensor and position (momentum negative), so a misplaced one shows.
Checkpoint Numbered() {
  Checkpoint c;
  c.config = SmallConfig();
  c.optimizer = OptimizerConfig{0.05f, 0.8f, 1e-4f};
  c.params = ZerosLike(c.config);
  c.momentum = ZerosLike(c.config);
  for (size_t i = 0; i < c.params.t.size(); ++i) {
    for (size_t j = 0; j < c.params.t[i].size(); ++j) {
      c.params.t[i][j] = 1000.f * i + j + 0.25f;
      c.momentum.t[i][j] = -(1000.f * i + j + 0.5f);
    }
  }
  c.order.seed = 0x1234567890abcdefull;
  c.epoch = 3;
  c.next_sample = 640;
  c.step = 1234;
  c.order.batch_size = 64;
  c.dataset_id = 0xfeedfacecafebeefull;
  c.dataset_samples = 60000;
  c.order.world_size = 3;
  c.order.resumed = {c.epoch, {{4, 100}, {2, 250}}};
  return c;
}

TEST(Checkpoint, RoundTripsEveryFieldExactly) {
  TempDir t;
  const Checkpoint c = Numbered();
  ASSERT_TRUE(WriteCheckpoint(t.File("c.ckpt"), c).ok());
  auto r = LoadCheckpoint(t.File("c.ckpt"), SmallConfig());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.conv, c.config.conv);
  EXPECT_EQ(r->config.hidden, 7u);
  EXPECT_EQ(r->config.height, 12u);
  EXPECT_EQ(r->config.classes, 4u);
  EXPECT_EQ(r->optimizer.lr, 0.05f);
  EXPECT_EQ(r->optimizer.momentum, 0.8f);
  EXPECT_EQ(r->optimizer.weight_decay, 1e-4f);
  EXPECT_TRUE(BitIdentical(r->params, c.params));
  EXPECT_TRUE(BitIdentical(r->momentum, c.momentum));
  EXPECT_EQ(r->order.seed, c.order.seed);
  EXPECT_EQ(r->epoch, 3u);
  EXPECT_EQ(r->next_sample, 640u);
  EXPECT_EQ(r->step, 1234u);
  EXPECT_EQ(r->order.batch_size, 64u);
  EXPECT_EQ(r->dataset_id, c.dataset_id);
  EXPECT_EQ(r->dataset_samples, 60000u);
  EXPECT_EQ(r->order.world_size, 3u);
  EXPECT_EQ(r->order.resumed.epoch, 3u);
  ASSERT_EQ(r->order.resumed.stretches.size(), 2u);
  EXPECT_EQ(r->order.resumed.stretches[0].world_size, 4u);
  EXPECT_EQ(r->order.resumed.stretches[0].position, 100u);
  EXPECT_EQ(r->order.resumed.stretches[1].world_size, 2u);
  EXPECT_EQ(r->order.resumed.stretches[1].position, 250u);
  // No temporary file is left beside it.
  EXPECT_EQ(testing::ReadAll(t.File("c.ckpt")).size(), EncodeCheckpoint(c)->size());
}

// Version 1 (before data-parallel runs) had no ranks block: such files read as one rank.
TEST(Checkpoint, ReadsVersion1FilesAsOneRank) {
  Checkpoint c = Numbered();
  c.order.world_size = 1;
  c.order.resumed.stretches.clear();
  std::vector<uint8_t> b = EncodedV5(c);
  // magic, version, model (4 dims, block count, 2 widths, hidden), sgd, position (4 u64, 2 u32,
  // 2 u64): the ranks block (world size, stretch count) follows.
  const size_t ranks_at = kRanksAt;
  b.erase(b.begin() + ranks_at + 8, b.begin() + ranks_at + 8 + kSinceVersion3);
  uint32_t world = 0, count = 9;
  std::memcpy(&world, b.data() + ranks_at, 4);
  std::memcpy(&count, b.data() + ranks_at + 4, 4);
  ASSERT_EQ(world, 1u);
  ASSERT_EQ(count, 0u);
  b.erase(b.begin() + ranks_at, b.begin() + ranks_at + 8);
  const uint32_t v1 = 1;
  std::memcpy(b.data() + 8, &v1, 4);
  Reseal(&b);
  auto r = DecodeCheckpoint(b.data(), b.size(), "old.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->order.world_size, 1u);
  EXPECT_TRUE(r->order.resumed.stretches.empty());
  EXPECT_EQ(r->next_sample, 640u);
  EXPECT_TRUE(BitIdentical(r->params, c.params));
}

// Version 3's optimizer and schedule, and AdamW's two state slots, come back exactly.
TEST(Checkpoint, RoundTripsTheOptimizerScheduleAndAdamWStateExactly) {
  TempDir t;
  Checkpoint c = Numbered();
  c.optimizer.kind = OptimizerKind::kAdamW;
  c.optimizer.beta1 = 0.85f;
  c.optimizer.beta2 = 0.995f;
  c.optimizer.eps = 3e-7f;
  c.optimizer.label_smoothing = 0.1f;
  c.schedule = LrScheduleConfig{LrScheduleKind::kCosine, 0.75f};
  c.schedule_span = LrScheduleSpan{37, 5};
  c.augment = AugmentParams{4, 1, uint64_t{1} << 31};  // crop:4,flip,erase:0.5
  const Tensors first = c.momentum;
  for (const auto& m : first.t) {
    c.momentum.t.push_back(m);
    for (float& v : c.momentum.t.back()) v = -v / 7;  // the second moments, distinct values
  }
  ASSERT_TRUE(WriteCheckpoint(t.File("c.ckpt"), c).ok());
  auto r = LoadCheckpoint(t.File("c.ckpt"), SmallConfig());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_EQ(r->optimizer.lr, 0.05f);
  EXPECT_EQ(r->optimizer.beta1, 0.85f);
  EXPECT_EQ(r->optimizer.beta2, 0.995f);
  EXPECT_EQ(r->optimizer.eps, 3e-7f);
  EXPECT_EQ(r->optimizer.label_smoothing, 0.1f);
  EXPECT_EQ(r->schedule.kind, LrScheduleKind::kCosine);
  EXPECT_EQ(r->schedule.warmup_epochs, 0.75f);
  EXPECT_EQ(r->schedule_span.steps_per_epoch, 37u);
  EXPECT_EQ(r->schedule_span.epochs, 5u);
  ASSERT_TRUE(r->augment.has_value());
  EXPECT_EQ(r->augment->crop_pad, 4u);
  EXPECT_EQ(r->augment->flip, 1u);
  EXPECT_EQ(r->augment->erase_threshold, uint64_t{1} << 31);
  EXPECT_EQ(r->step, 1234u);  // AdamW's update count for the bias corrections
  EXPECT_TRUE(BitIdentical(r->params, c.params));
  ASSERT_EQ(r->momentum.t.size(), 2 * c.params.t.size());
  EXPECT_TRUE(BitIdentical(r->momentum, c.momentum));
  // An AdamW checkpoint with one slot of state is refused on writing.
  c.momentum = first;
  EXPECT_FALSE(EncodeCheckpoint(c).ok());
}

// Version 2 files (before optimizers and schedules) read as SGD, no label smoothing, the constant
// schedule, span not recorded.
TEST(Checkpoint, ReadsVersion2FilesAsSgdWithTheConstantSchedule) {
  Checkpoint c = Numbered();
  std::vector<uint8_t> b = EncodedV5(c);
  // The ranks block with its two stretches, then version 3's block: cut it out.
  const size_t ranks_at = kRanksAt;
  const size_t v3_at = ranks_at + 8 + 2 * 12;
  uint32_t kind = 9;
  std::memcpy(&kind, b.data() + v3_at, 4);
  ASSERT_EQ(kind, 0u);  // SGD: the block is where the layout says
  b.erase(b.begin() + v3_at, b.begin() + v3_at + kSinceVersion3);
  const uint32_t v2 = 2;
  std::memcpy(b.data() + 8, &v2, 4);
  Reseal(&b);
  auto r = DecodeCheckpoint(b.data(), b.size(), "v2.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->optimizer.kind, OptimizerKind::kSgd);
  EXPECT_EQ(r->optimizer.lr, 0.05f);
  EXPECT_EQ(r->optimizer.momentum, 0.8f);
  EXPECT_EQ(r->optimizer.label_smoothing, 0.f);
  EXPECT_EQ(r->schedule.kind, LrScheduleKind::kConstant);
  EXPECT_EQ(r->schedule.warmup_epochs, 0.f);
  EXPECT_EQ(r->schedule_span.steps_per_epoch, 0u);
  EXPECT_FALSE(r->augment.has_value());  // not recorded: a resume keeps --augment's
  EXPECT_EQ(r->order.world_size, 3u);
  ASSERT_EQ(r->order.resumed.stretches.size(), 2u);
  EXPECT_TRUE(BitIdentical(r->params, c.params));
  EXPECT_TRUE(BitIdentical(r->momentum, c.momentum));
}

// Version 3 files (before batch norm) read as models without it.
TEST(Checkpoint, ReadsVersion3FilesAsModelsWithoutBatchNorm) {
  Checkpoint c = Numbered();
  std::vector<uint8_t> b = EncodedV5(c);
  const size_t flag_at = kRanksAt + 8 + 2 * 12 + kVersion3Block;
  uint32_t flag = 9;
  std::memcpy(&flag, b.data() + flag_at, 4);
  ASSERT_EQ(flag, 0u);                                    // the flag is where the layout says
  b.erase(b.begin() + flag_at, b.begin() + flag_at + 8);  // and version 5's empty mixture block
  const uint32_t v3 = 3;
  std::memcpy(b.data() + 8, &v3, 4);
  Reseal(&b);
  auto r = DecodeCheckpoint(b.data(), b.size(), "v3.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->config.batch_norm);
  EXPECT_TRUE(r->running_stats.t.empty());
  EXPECT_TRUE(BitIdentical(r->params, c.params));
}

// Version 4 files (before mixtures) read as one dataset.
TEST(Checkpoint, ReadsVersion4FilesAsOneDataset) {
  Checkpoint c = Numbered();
  std::vector<uint8_t> b = EncodedV5(c);
  const size_t mixture_at = kRanksAt + 8 + 2 * 12 + kVersion3Block + 4;
  uint32_t count = 9;
  std::memcpy(&count, b.data() + mixture_at, 4);
  ASSERT_EQ(count, 0u);  // the block is where the layout says
  b.erase(b.begin() + mixture_at, b.begin() + mixture_at + 4);
  const uint32_t v4 = 4;
  std::memcpy(b.data() + 8, &v4, 4);
  Reseal(&b);
  auto r = DecodeCheckpoint(b.data(), b.size(), "v4.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->datasets.empty());
  EXPECT_TRUE(r->mixture.sources.empty());
  EXPECT_TRUE(BitIdentical(r->params, c.params));
}

// Version 6's partition block: the run's node_ranks and each stretch's come back; a version 5
// file reads as the global partition; node_ranks above its world size is refused at its offset.
TEST(Checkpoint, RoundTripsThePartitionAndReadsVersion5AsTheGlobalOne) {
  Checkpoint c = Numbered();  // world size 3, stretches of 4 and 2 ranks
  c.order.node_ranks = 3;
  c.order.resumed.stretches[0].node_ranks = 2;
  const std::vector<uint8_t> b = Encoded(c);
  auto r = DecodeCheckpoint(b.data(), b.size(), "p.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->order.node_ranks, 3u);
  EXPECT_EQ(r->order.resumed.stretches[0].node_ranks, 2u);
  EXPECT_EQ(r->order.resumed.stretches[1].node_ranks, 0u);
  const std::vector<uint8_t> v5 = EncodedV5(c);
  auto old = DecodeCheckpoint(v5.data(), v5.size(), "v5.ckpt");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->order.node_ranks, 0u);
  EXPECT_EQ(old->order.resumed.stretches[0].node_ranks, 0u);
  EXPECT_TRUE(BitIdentical(old->params, c.params));
  std::vector<uint8_t> bad = b;
  const uint32_t five = 5;  // the second stretch ran on 2 ranks
  std::memcpy(bad.data() + PartitionAt(c) + 8, &five, 4);
  Reseal(&bad);
  auto refused = DecodeCheckpoint(bad.data(), bad.size(), "bad.ckpt");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().ToString().find("at byte " + std::to_string(PartitionAt(c) + 8)),
            std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().ToString().find("node_ranks 5 above its world size 2"),
            std::string::npos)
      << refused.status().ToString();
}

// A mixture's datasets and stream come back exactly; fields no run writes are refused at the
// mixture block's offset once the checksum holds.
TEST(Checkpoint, RoundTripsAMixtureAndRefusesOneNoRunWrites) {
  Checkpoint c = Numbered();
  c.datasets = {{11, 300, 0.6}, {13, 200, 0.4}, {17, 50, 0}};
  c.mixture.steps = 500;
  c.mixture.drawn = {300, 200, 0};
  c.mixture.sources = {{2, 40, {{4, 10}, {2, 3}}}, {1, 0, {}}, {0, 0, {}}};
  const std::vector<uint8_t> bytes = Encoded(c);
  auto r = DecodeCheckpoint(bytes.data(), bytes.size(), "m.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->datasets, c.datasets);
  EXPECT_EQ(r->mixture, c.mixture);
  const size_t mixture_at = kRanksAt + 8 + 2 * 12 + kVersion3Block + 4;
  for (auto [what, edit] : std::vector<std::pair<std::string, void (*)(Checkpoint*)>>{
           {"weight -1", [](Checkpoint* m) { m->datasets[1].weight = -1; }},
           {"weights all 0",
            [](Checkpoint* m) {
              for (auto& d : m->datasets) d.weight = 0;
            }},
           {"draws sum to 499, not its 500 steps",
            [](Checkpoint* m) { m->mixture.drawn[0] = 299; }},
           {"position 201 is past its 200 samples",
            [](Checkpoint* m) { m->mixture.sources[1].position = 201; }}}) {
    Checkpoint bad = c;
    edit(&bad);
    const std::vector<uint8_t> b = Encoded(bad);
    auto refused = DecodeCheckpoint(b.data(), b.size(), "m.ckpt");
    ASSERT_FALSE(refused.ok()) << what;
    EXPECT_NE(refused.status().ToString().find(what), std::string::npos)
        << refused.status().ToString();
    EXPECT_NE(refused.status().ToString().find("at byte " + std::to_string(mixture_at)),
              std::string::npos)
        << refused.status().ToString();
  }
  // A mixture of another count of states than of datasets is not written.
  c.mixture.drawn.pop_back();
  EXPECT_FALSE(EncodeCheckpoint(c).ok());
}

// With batch norm: the scales are parameters (with their optimizer state), the running
// statistics come back bit for bit, and a negative running variance is refused at its offset.
TEST(Checkpoint, BatchNormScalesAndRunningStatisticsRoundTrip) {
  Checkpoint c = Numbered();
  c.config.batch_norm = true;
  c.params = InitialParameters(c.config, 4);
  c.momentum = ZerosLike(c.config);
  c.running_stats = InitialRunningStats(c.config);
  ASSERT_EQ(c.running_stats.t.size(), 2 * c.config.conv.size());
  for (size_t i = 0; i < c.running_stats.t.size(); ++i) {
    for (size_t k = 0; k < c.running_stats.t[i].size(); ++k) {
      c.running_stats.t[i][k] = 0.25f * static_cast<float>(i + 1) + 0.001f * static_cast<float>(k);
    }
  }
  std::vector<uint8_t> b = Encoded(c);
  auto r = DecodeCheckpoint(b.data(), b.size(), "bn.ckpt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->config.batch_norm);
  EXPECT_TRUE(BitIdentical(r->params, c.params));
  EXPECT_EQ(r->params.t.back().size(), c.config.conv.back());  // bn{last}.scale
  EXPECT_EQ(r->params.t.back()[0], 1.f);                       // scales start at one
  EXPECT_TRUE(BitIdentical(r->running_stats, c.running_stats));

  // The last running variance's first value: 8 checksum bytes and the tensor's values from the
  // end, after its u64 count.
  const size_t last = c.running_stats.t.back().size();
  const size_t at = b.size() - 8 - 4 * last;
  const float negative = -1.f;
  std::memcpy(b.data() + at, &negative, 4);
  Reseal(&b);
  auto bad = DecodeCheckpoint(b.data(), b.size(), "bn.ckpt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("at byte " + std::to_string(at)), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("running_var"), std::string::npos)
      << bad.status().ToString();

  // Encoding refuses statistics that do not fit the model.
  c.running_stats.t.pop_back();
  EXPECT_FALSE(EncodeCheckpoint(c).ok());
}

TEST(Checkpoint, RefusesAWorldSizeOfZeroNamingTheOffset) {
  Checkpoint c = Numbered();
  std::vector<uint8_t> b = Encoded(c);
  const size_t ranks_at = kRanksAt;
  std::memset(b.data() + ranks_at, 0, 4);
  Reseal(&b);
  auto r = DecodeCheckpoint(b.data(), b.size(), "z.ckpt");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().ToString().find("world size 0 with 2 stretches"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().ToString().find(std::to_string(ranks_at)), std::string::npos)
      << r.status().ToString();
}

TEST(Checkpoint, ReplacesAnOlderFileWhole) {
  TempDir t;
  Checkpoint c = Numbered();
  ASSERT_TRUE(WriteCheckpoint(t.File("c.ckpt"), c).ok());
  c.step = 99;
  ASSERT_TRUE(WriteCheckpoint(t.File("c.ckpt"), c).ok());
  auto r = ReadCheckpoint(t.File("c.ckpt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->step, 99u);
}

TEST(Checkpoint, TruncatedFileIsCorruptionNamingFileAndOffset) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
  const uint64_t size = testing::ReadAll(path).size();
  for (uint64_t keep : {uint64_t{0}, uint64_t{5}, uint64_t{40}, size / 2, size - 1}) {
    ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
    testing::Truncate(path, keep);
    auto r = ReadCheckpoint(path);
    ASSERT_FALSE(r.ok()) << keep;
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_EQ(
        r.status().ToString().rfind(
            path + ": at byte " + std::to_string(keep) + ": checkpoint: file is truncated", 0),
        0u)
        << r.status().ToString();
  }
}

TEST(Checkpoint, FlippedBitInTheTensorsIsAChecksumMismatchAtTheChecksum) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
  const uint64_t size = testing::ReadAll(path).size();
  testing::FlipBit(path, size - 100, 3);
  auto r = ReadCheckpoint(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_EQ(r.status().ToString(), path + ": at byte " + std::to_string(size - 8) +
                                       ": checkpoint: checksum mismatch (the file is damaged)");
}

TEST(Checkpoint, FlippedBitInTheMagicIsRefusedAtByteZero) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
  testing::FlipBit(path, 2);
  auto r = ReadCheckpoint(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(),
            path + ": at byte 0: checkpoint: not a ringfeed checkpoint (bad magic)");
}

TEST(Checkpoint, FlippedBitInTheModelIsRefusedBeforeReadingTensors) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
  // Byte 12 is the low byte of `channels` (magic 8 + version 4): 1 becomes 0, an invalid model.
  testing::FlipBit(path, 12, 0);
  auto r = ReadCheckpoint(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().ToString().find(path + ": at byte 12: checkpoint: invalid model"),
            std::string::npos)
      << r.status().ToString();
}

TEST(Checkpoint, TrailingBytesAreRefused) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  auto bytes = EncodeCheckpoint(Numbered());
  ASSERT_TRUE(bytes.ok());
  bytes->push_back(0);
  testing::WriteAll(path, *bytes);
  auto r = ReadCheckpoint(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("1 trailing bytes after the checksum"), std::string::npos)
      << r.status().ToString();
}

TEST(Checkpoint, OtherModelIsInvalidArgumentNamingBothModels) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
  ModelConfig other = SmallConfig();
  other.hidden = 8;
  auto r = LoadCheckpoint(path, other);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_EQ(r.status().ToString(),
            path + ": checkpoint is of model 1x12x12, 4 classes, conv 3,5, hidden 7; asked for " +
                "1x12x12, 4 classes, conv 3,5, hidden 8");
}

TEST(Checkpoint, EncodeRefusesTensorsOfAnotherModel) {
  Checkpoint c = Numbered();
  c.momentum.t.pop_back();
  auto r = EncodeCheckpoint(c);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("momentum"), std::string::npos) << r.status().message();
}

// A diverged run's state is not written (the last good checkpoint stays on disk), and a file
// whose checksum holds but whose tensors are not finite (forged) is refused at the value's offset.
TEST(Checkpoint, NonFiniteTensorsAreNeitherWrittenNorRead) {
  TempDir t;
  const std::string path = t.File("c.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, Numbered()).ok());
  const std::vector<uint8_t> before = testing::ReadAll(path);
  Checkpoint c = Numbered();
  c.momentum.t[1][2] = std::numeric_limits<float>::quiet_NaN();
  const Status st = WriteCheckpoint(path, c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("momentum " + ParameterShapes(c.config)[1].name + ": value 2 is nan"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(testing::ReadAll(path), before);

  // Forged: the encoder's bytes with the value replaced and the checksum made to agree.
  auto encoded = EncodeCheckpoint(Numbered());
  ASSERT_TRUE(encoded.ok());
  std::vector<uint8_t> bytes = std::move(*encoded);
  const float good = Numbered().params.t[0][3];
  size_t at = 0;
  for (size_t i = 0; i + 4 <= bytes.size(); ++i) {
    if (std::memcmp(&bytes[i], &good, 4) == 0) {
      at = i;
      break;
    }
  }
  ASSERT_NE(at, 0u);
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(&bytes[at], &inf, 4);
  const size_t payload = bytes.size() - 8;
  const uint64_t sum = Checksum(bytes.data(), payload);
  std::memcpy(&bytes[payload], &sum, 8);
  auto r = DecodeCheckpoint(bytes.data(), bytes.size(), "forged.ckpt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("at byte " + std::to_string(at)), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("value 3 is inf"), std::string::npos)
      << r.status().ToString();
}

TEST(Checkpoint, MissingFileIsAnErrorNamingIt) {
  auto r = ReadCheckpoint("/nonexistent/c.ckpt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("/nonexistent/c.ckpt"), std::string::npos);
}

}  // namespace
}  // namespace rf
