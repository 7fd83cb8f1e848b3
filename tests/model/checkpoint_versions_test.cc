// Checkpoints written by earlier builds read the same after every later change. The files in
// tests/model/data/ were written by the checkpoint writer (EncodeCheckpoint) of the last commit
// that wrote each version, built on its own tree:
//
//   checkpoint_v1.ckpt  5b191f1 (before the ranks block)
//   checkpoint_v2.ckpt  20dcf81 (before the optimizer, schedule and augmentation blocks)
//   checkpoint_v3.ckpt  72b5eef (before batch norm)
//   checkpoint_v4.ckpt  29c45e6 (before DecodeCheckpoint was split into a reader per section)
//   checkpoint_v5.ckpt  the mixture block's commit
//   checkpoint_v6.ckpt  the partition block's commit (RF_WRITE_CHECKPOINT_V6=FILE makes the test
//                       below write it)
//
// from the content Written(version) describes; every value encodes its place, so a field or value
// read from the wrong offset shows.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/testing/bit_identical.h"

namespace rf {
namespace {

using testing::BitIdentical;

std::string DataFile(uint32_t version) {
  return std::string(RF_CHECKPOINT_DATA_DIR) + "/checkpoint_v" + std::to_string(version) + ".ckpt";
}

std::vector<uint8_t> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// What the writer of `version` was given; the fields that version cannot hold are left at what
// today's reader gives for them (SGD, the constant schedule, span and augmentation not recorded,
// one rank, no batch norm).
Checkpoint Written(uint32_t version) {
  Checkpoint c;
  c.config.channels = 1;
  c.config.height = c.config.width = 8;
  c.config.classes = 3;
  c.config.conv = {2, 3};
  c.config.hidden = 4;
  c.config.batch_norm = version >= 4;
  c.optimizer.lr = 0.0625f;
  c.optimizer.momentum = 0.875f;
  c.optimizer.weight_decay = 0.015625f;
  if (version >= 3) {
    c.optimizer.kind = OptimizerKind::kAdamW;
    c.optimizer.beta1 = 0.75f;
    c.optimizer.beta2 = 0.96875f;
    c.optimizer.eps = 0.0009765625f;
    c.optimizer.label_smoothing = 0.125f;
    c.schedule.kind = LrScheduleKind::kCosine;
    c.schedule.warmup_epochs = 1.5f;
    c.schedule_span = {13, 7};
    c.augment = AugmentParams{2, 1, 123456789};
  }
  const std::vector<ParamShape> shapes = ParameterShapes(c.config);
  const size_t slots = OptimizerSlots(c.optimizer.kind);
  c.params.t.resize(shapes.size());
  c.momentum.t.resize(slots * shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    c.params.t[i].resize(shapes[i].count());
    for (size_t j = 0; j < shapes[i].count(); ++j) c.params.t[i][j] = 1000.f * i + j + 0.25f;
    for (size_t s = 0; s < slots; ++s) {
      std::vector<float>& m = c.momentum.t[s * shapes.size() + i];
      m.resize(shapes[i].count());
      for (size_t j = 0; j < m.size(); ++j) m[j] = -(1000.f * i + j + 0.5f) - 100000.f * s;
    }
  }
  c.running_stats = InitialRunningStats(c.config);
  for (size_t i = 0; i < c.running_stats.t.size(); ++i) {
    for (size_t j = 0; j < c.running_stats.t[i].size(); ++j) {
      c.running_stats.t[i][j] = 0.125f * (i + 1) + 0.001f * j;
    }
  }
  c.order.seed = 0x1122334455667788ull;
  c.epoch = 2;
  c.next_sample = 48;
  c.step = 100;
  c.order.batch_size = 16;
  c.order.shuffle_window = 8;  // order_window 8
  c.dataset_id = 0xfeedfacecafebeefull;
  c.dataset_samples = 200;
  c.order.resumed.epoch = c.epoch;  // what the reader gives: the stretches, if any, are its
  if (version >= 2) {
    c.order.world_size = 2;
    c.order.resumed.stretches = {{3, 10}, {5, 4}};
  }
  if (version >= 5) {  // a mixture of two datasets: its datasets and its stream
    c.datasets = {{0x1111222233334445ull, 120, 0.75}, {0x5555666677778889ull, 80, 0.25}};
    c.mixture.steps = 96;
    c.mixture.drawn = {72, 24};
    c.mixture.sources = {{1, 10, {{3, 4}}}, {0, 20, {}}};
  }
  if (version >= 6) {  // the node partition: the run's machines, and a stretch's
    c.order.node_ranks = 1;
    c.order.resumed.stretches[0].node_ranks = 3;
    c.mixture.sources[0].stretches[0].node_ranks = 1;
  }
  return c;
}

void ExpectSame(const Checkpoint& got, const Checkpoint& want) {
  EXPECT_EQ(DescribeModel(got.config), DescribeModel(want.config));
  EXPECT_EQ(got.config.conv, want.config.conv);
  const OptimizerConfig &o = got.optimizer, &w = want.optimizer;
  EXPECT_EQ(o.kind, w.kind);
  EXPECT_EQ(o.lr, w.lr);
  EXPECT_EQ(o.momentum, w.momentum);
  EXPECT_EQ(o.weight_decay, w.weight_decay);
  EXPECT_EQ(o.beta1, w.beta1);
  EXPECT_EQ(o.beta2, w.beta2);
  EXPECT_EQ(o.eps, w.eps);
  EXPECT_EQ(o.label_smoothing, w.label_smoothing);
  EXPECT_EQ(got.schedule.kind, want.schedule.kind);
  EXPECT_EQ(got.schedule.warmup_epochs, want.schedule.warmup_epochs);
  EXPECT_EQ(got.schedule_span.steps_per_epoch, want.schedule_span.steps_per_epoch);
  EXPECT_EQ(got.schedule_span.epochs, want.schedule_span.epochs);
  ASSERT_EQ(got.augment.has_value(), want.augment.has_value());
  if (want.augment) {
    EXPECT_EQ(got.augment->crop_pad, want.augment->crop_pad);
    EXPECT_EQ(got.augment->flip, want.augment->flip);
    EXPECT_EQ(got.augment->erase_threshold, want.augment->erase_threshold);
  }
  EXPECT_TRUE(BitIdentical(got.params, want.params));
  EXPECT_TRUE(BitIdentical(got.momentum, want.momentum));
  EXPECT_TRUE(BitIdentical(got.running_stats, want.running_stats));
  EXPECT_EQ(got.order.seed, want.order.seed);
  EXPECT_EQ(got.epoch, want.epoch);
  EXPECT_EQ(got.next_sample, want.next_sample);
  EXPECT_EQ(got.step, want.step);
  EXPECT_EQ(got.order.batch_size, want.order.batch_size);
  EXPECT_EQ(got.order.drop_last, want.order.drop_last);
  EXPECT_EQ(got.order.shuffle, want.order.shuffle);
  EXPECT_EQ(got.order.shuffle_window, want.order.shuffle_window);
  EXPECT_EQ(got.shuffle_recorded, want.shuffle_recorded);
  EXPECT_EQ(got.order.first_window_chunks, want.order.first_window_chunks);
  EXPECT_EQ(got.order.rank, want.order.rank);
  EXPECT_EQ(got.dataset_id, want.dataset_id);
  EXPECT_EQ(got.dataset_samples, want.dataset_samples);
  EXPECT_EQ(got.order.world_size, want.order.world_size);
  EXPECT_EQ(got.order.node_ranks, want.order.node_ranks);
  EXPECT_EQ(got.order.resumed.epoch, want.order.resumed.epoch);
  EXPECT_EQ(got.datasets, want.datasets);
  EXPECT_EQ(got.mixture, want.mixture);
  const std::vector<EpochStretch>&got_st = got.order.resumed.stretches,
        &want_st = want.order.resumed.stretches;
  ASSERT_EQ(got_st.size(), want_st.size());
  for (size_t k = 0; k < want_st.size(); ++k) {
    EXPECT_EQ(got_st[k].world_size, want_st[k].world_size) << "stretch " << k;
    EXPECT_EQ(got_st[k].position, want_st[k].position) << "stretch " << k;
    EXPECT_EQ(got_st[k].node_ranks, want_st[k].node_ranks) << "stretch " << k;
  }
}

TEST(CheckpointVersions, ReadsEveryVersionEarlierBuildsWrote) {
  for (uint32_t version = 1; version <= kCheckpointVersion; ++version) {
    SCOPED_TRACE("version " + std::to_string(version));
    const std::vector<uint8_t> bytes = Bytes(DataFile(version));
    ASSERT_GE(bytes.size(), 12u);
    ASSERT_EQ(bytes[8], version);  // the file is the version it is named for
    Result<Checkpoint> c = DecodeCheckpoint(bytes.data(), bytes.size(), DataFile(version));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ExpectSame(*c, Written(version));
  }
}

// The writer has not changed the format: the same content gives the version 6 file byte for byte.
TEST(CheckpointVersions, WritesTheLatestVersionByteForByteAsItsFileHolds) {
  ASSERT_EQ(kCheckpointVersion, 6u) << "a new version: check in a file of it, as above";
  Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(Written(6));
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  if (const char* out = std::getenv("RF_WRITE_CHECKPOINT_V6")) {  // how the file was made
    std::ofstream(out, std::ios::binary)
        .write(reinterpret_cast<const char*>(encoded->data()), encoded->size());
  }
  EXPECT_EQ(*encoded, Bytes(DataFile(6)));
}

}  // namespace
}  // namespace rf
