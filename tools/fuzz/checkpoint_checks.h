// What every checkpoint DecodeCheckpoint accepts must satisfy (model/checkpoint.h).
#pragma once

#include <cmath>

#include "core/augment_spec.h"
#include "model/checkpoint.h"
#include "tools/fuzz/fuzz_common.h"

namespace rf::fuzz {

inline void CheckAcceptedCheckpoint(const Checkpoint& c) {
  RF_FUZZ_CHECK(c.config.Validate().ok());
  RF_FUZZ_CHECK(ParameterCount(c.config) <= kMaxModelParameters);
  const std::vector<ParamShape> shapes = ParameterShapes(c.config);
  const size_t slots = OptimizerSlots(c.optimizer.kind);
  RF_FUZZ_CHECK(c.params.t.size() == shapes.size() && c.momentum.t.size() == slots * shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    RF_FUZZ_CHECK(c.params.t[i].size() == shapes[i].count());
    for (size_t k = 0; k < slots; ++k) {
      RF_FUZZ_CHECK(c.momentum.t[k * shapes.size() + i].size() == shapes[i].count());
    }
  }
  const std::vector<ParamShape> stats = RunningStatShapes(c.config);
  RF_FUZZ_CHECK(c.running_stats.t.size() == stats.size());
  for (size_t i = 0; i < stats.size(); ++i) {
    RF_FUZZ_CHECK(c.running_stats.t[i].size() == stats[i].count());
    for (float v : c.running_stats.t[i]) {
      RF_FUZZ_CHECK(std::isfinite(v) && (i < c.config.conv.size() || v >= 0));
    }
  }
  RF_FUZZ_CHECK(c.optimizer.kind == OptimizerKind::kSgd ||
                c.optimizer.kind == OptimizerKind::kAdamW);
  RF_FUZZ_CHECK(static_cast<uint32_t>(c.schedule.kind) <=
                static_cast<uint32_t>(LrScheduleKind::kOneCycle));
  for (float v : {c.optimizer.beta1, c.optimizer.beta2, c.optimizer.label_smoothing}) {
    RF_FUZZ_CHECK(std::isfinite(v) && v >= 0 && v < 1);
  }
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.eps) && c.optimizer.eps > 0);
  RF_FUZZ_CHECK(std::isfinite(c.schedule.warmup_epochs) && c.schedule.warmup_epochs >= 0);
  if (c.augment) {
    RF_FUZZ_CHECK(c.augment->crop_pad <= kMaxAugmentCropPad && c.augment->flip <= 1 &&
                  c.augment->erase_threshold <= kAugmentEraseAlways);
  }
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.lr));
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.momentum) && c.optimizer.momentum >= 0);
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.weight_decay) && c.optimizer.weight_decay >= 0);
  RF_FUZZ_CHECK(c.epoch <= kMaxCheckpointEpoch);
  RF_FUZZ_CHECK(c.order.batch_size >= 1 && c.order.world_size >= 1);
  RF_FUZZ_CHECK(c.order.shuffle_window >= 1);
  RF_FUZZ_CHECK(c.dataset_samples == 0 || c.next_sample <= c.dataset_samples);
  RF_FUZZ_CHECK(c.order.resumed.epoch == c.epoch);
  RF_FUZZ_CHECK(c.order.resumed.stretches.size() <= kMaxCheckpointStretches);
  for (const EpochStretch& s : c.order.resumed.stretches) RF_FUZZ_CHECK(s.world_size >= 1);
}

}  // namespace rf::fuzz
