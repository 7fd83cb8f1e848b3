// Checkpoints forged with a valid checksum (issue 15, defect 14): fields no run writes, and model
// sizes that would overflow, each refused by DecodeCheckpoint at its own byte offset before
// anything trains from it or is sized from it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "io/checksum.h"
#include "model/checkpoint.h"

namespace rf {
namespace {

// 1x12x12, 4 classes, conv 3,5, hidden 7. Its fields lie at: model 12 (channels, height, width,
// classes, block count, the two widths at 32 and 36, hidden at 40), sgd 44 (lr, momentum 48,
// weight decay 52), position 56 (seed, epoch 64, next sample 72, step 80, batch size 88, order
// window 92, dataset id 96, dataset samples 104), ranks 112, optimizer 120 (kind, beta1 124,
// beta2 128, eps 132, label smoothing 136), schedule 140 (kind, warmup epochs 144, steps per
// epoch 148, epochs 156).
Checkpoint Valid() {
  Checkpoint c;
  c.config.channels = 1;
  c.config.height = c.config.width = 12;
  c.config.classes = 4;
  c.config.conv = {3, 5};
  c.config.hidden = 7;
  c.optimizer = OptimizerConfig{0.05f, 0.9f, 5e-4f};
  c.params = ZerosLike(c.config);
  c.momentum = ZerosLike(c.config);
  c.epoch = 2;
  c.next_sample = 100;
  c.order.batch_size = 32;
  c.dataset_samples = 300;
  return c;
}

std::vector<uint8_t> Encode(const Checkpoint& c) {
  Result<std::vector<uint8_t>> b = EncodeCheckpoint(c);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? *b : std::vector<uint8_t>{};
}

// Overwrites a u32 at `at` and recomputes the checksum, as a forger would.
void Patch(std::vector<uint8_t>* b, size_t at, uint32_t v) {
  std::memcpy(b->data() + at, &v, sizeof v);
  const uint64_t sum = Checksum(b->data(), b->size() - 8);
  std::memcpy(b->data() + b->size() - 8, &sum, 8);
}

std::string Refusal(const std::vector<uint8_t>& b) {
  Result<Checkpoint> r = DecodeCheckpoint(b.data(), b.size(), "h.ckpt");
  if (r.ok()) return "accepted";
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  return r.status().ToString();
}

std::string Refusal(const Checkpoint& c) { return Refusal(Encode(c)); }

TEST(HostileCheckpoint, TheValidOneIsAccepted) { EXPECT_EQ(Refusal(Valid()), "accepted"); }

TEST(HostileCheckpoint, AnEpochNoRunReachesIsRefused) {
  Checkpoint c = Valid();
  c.epoch = uint64_t{1} << 63;
  EXPECT_EQ(Refusal(c),
            "h.ckpt: at byte 64: checkpoint: epoch 9223372036854775808 (at most 4294967295)");
  c.epoch = kMaxCheckpointEpoch;
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(HostileCheckpoint, ALearningRateThatIsNotFiniteIsRefused) {
  Checkpoint c = Valid();
  c.optimizer.lr = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 44: checkpoint: learning rate nan");
  c.optimizer.lr = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 44: checkpoint: learning rate inf");
  c.optimizer.lr = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 44: checkpoint: learning rate -inf");
}

TEST(HostileCheckpoint, ANegativeOrNaNMomentumOrWeightDecayIsRefused) {
  Checkpoint c = Valid();
  c.optimizer.momentum = -0.5f;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 48: checkpoint: momentum -0.5");
  c.optimizer.momentum = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 48: checkpoint: momentum nan");
  c = Valid();
  c.optimizer.weight_decay = -1.f;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 52: checkpoint: weight decay -1");
  c.optimizer.weight_decay = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 52: checkpoint: weight decay inf");
  c = Valid();
  c.optimizer.momentum = 0.f;  // plain SGD
  c.optimizer.weight_decay = 0.f;
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(HostileCheckpoint, AnUnknownOptimizerOrScheduleIsRefusedBeforeItSizesTheState) {
  std::vector<uint8_t> b = Encode(Valid());
  Patch(&b, 120, 7);
  EXPECT_EQ(Refusal(b), "h.ckpt: at byte 120: checkpoint: unknown optimizer 7");
  b = Encode(Valid());
  Patch(&b, 140, 9);
  EXPECT_EQ(Refusal(b), "h.ckpt: at byte 140: checkpoint: unknown lr schedule 9");
}

TEST(HostileCheckpoint, AdamWAndScheduleSettingsNoRunWritesAreRefused) {
  Checkpoint c = Valid();
  c.optimizer.label_smoothing = 1.f;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 136: checkpoint: label smoothing 1");
  c = Valid();
  c.optimizer.beta1 = -0.1f;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 124: checkpoint: beta1 -0.1");
  c = Valid();
  c.optimizer.beta2 = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 128: checkpoint: beta2 nan");
  c = Valid();
  c.optimizer.eps = 0.f;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 132: checkpoint: eps 0");
  c = Valid();
  c.schedule.warmup_epochs = -1.f;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 144: checkpoint: warmup epochs -1");
  c = Valid();
  c.optimizer.label_smoothing = 0.5f;
  c.schedule.warmup_epochs = 0.5f;
  EXPECT_EQ(Refusal(c), "accepted");
}

// An augmentation --augment cannot ask for (core/augment_spec.h's bounds), each at its offset.
TEST(HostileCheckpoint, AnAugmentationNoRunAsksForIsRefused) {
  Checkpoint c = Valid();
  c.augment = AugmentParams{1025, 0, 0};
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 164: checkpoint: augmentation crop padding 1025");
  c.augment = AugmentParams{0, 2, 0};
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 168: checkpoint: augmentation flip 2");
  c.augment = AugmentParams{0, 0, (uint64_t{1} << 32) + 1};
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 172: checkpoint: augmentation erase threshold 4294967297");
  c.augment = AugmentParams{1024, 1, uint64_t{1} << 32};  // crop:1024,flip,erase:1
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(HostileCheckpoint, ABatchSizeOfZeroIsRefusedAtItsOwnOffset) {
  Checkpoint c = Valid();
  c.order.batch_size = 0;
  EXPECT_EQ(Refusal(c), "h.ckpt: at byte 88: checkpoint: batch size 0");
}

TEST(HostileCheckpoint, APositionPastTheDatasetIsRefused) {
  Checkpoint c = Valid();
  c.next_sample = 301;
  EXPECT_EQ(Refusal(c),
            "h.ckpt: at byte 72: checkpoint: next sample 301 is past the dataset's "
            "300 samples");
  c.next_sample = 300;  // the epoch's end
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(HostileCheckpoint, AWorldSizeOfZeroIsRefused) {
  std::vector<uint8_t> b = Encode(Valid());
  Patch(&b, 112, 0);
  EXPECT_EQ(Refusal(b), "h.ckpt: at byte 112: checkpoint: world size 0 with 0 stretches");
}

// A model whose parameter count overflows: the tensor sizes computed from it wrapped, and a
// count that matched the wrapped size would have been allocated in full.
TEST(HostileCheckpoint, AModelTooLargeToSizeIsRefusedBeforeItsTensors) {
  std::vector<uint8_t> b = Encode(Valid());
  Patch(&b, 40, 0xffffffffu);  // hidden
  EXPECT_EQ(Refusal(b),
            "h.ckpt: at byte 12: checkpoint: invalid model (the model is too large: "
            "fc1.weight (4294967295 x 45) makes it more than 2147483647 parameters; "
            "use a smaller --hidden or --conv)");
  b = Encode(Valid());
  Patch(&b, 32, 0xffffffffu);  // the first conv block's width
  EXPECT_NE(Refusal(b).find("h.ckpt: at byte 12: checkpoint: invalid model (the model is too "
                            "large: conv0.weight (4294967295 x 1 x 9)"),
            std::string::npos)
      << Refusal(b);
  b = Encode(Valid());
  Patch(&b, 24, 0xffffffffu);  // classes
  EXPECT_NE(Refusal(b).find("fc2.weight (4294967295 x 7)"), std::string::npos) << Refusal(b);
}

// Found by tools/fuzz's checkpoint target (in 12 s, 195,728 executions) with main's
// ModelConfig::Validate, which checked no sizes, put back: every model size at 2^31 and the first
// tensor's count set to the model's own, wrapped count. conv0.weight's 2^31 x 2^31 x 9 floats
// wrap to 2^62, whose byte size wraps to 0, so the bounds check passed and the decoder asked for
// a vector of 2^62 floats: an uncaught length_error (an abort outside ringfeed's main). The
// file's first 144 bytes (magic to that count) are all it takes; no checksum is reached.
TEST(HostileCheckpoint, FuzzedModelWhoseTensorSizeWrapsIsRefusedAtTheModel) {
  const std::vector<uint8_t> input = {
      0x52, 0x46, 0x43, 0x4b, 0x50, 0x54, 0x00, 0x1a, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80, 0x02, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80, 0x0a,
      0xd7, 0x23, 0x3c, 0x66, 0x66, 0x66, 0x3f, 0x6f, 0x12, 0x03, 0x3a, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x28,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x03, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
  };
  ASSERT_EQ(input.size(), 144u);
  EXPECT_EQ(Refusal(input),
            "h.ckpt: at byte 12: checkpoint: invalid model (the last conv block's output "
            "(2147483648 x 536870912 x 536870912, the hidden layer's inputs) makes the model more "
            "than 2147483647 parameters; use a smaller --conv)");
}

}  // namespace
}  // namespace rf
