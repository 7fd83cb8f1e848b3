// What every checkpoint DecodeCheckpoint accepts must satisfy (kernels/checkpoint.h).
#pragma once

#include <cmath>

#include "kernels/checkpoint.h"
#include "tools/fuzz/fuzz_common.h"

namespace rf::fuzz {

inline void CheckAcceptedCheckpoint(const Checkpoint& c) {
  RF_FUZZ_CHECK(c.config.Validate().ok());
  RF_FUZZ_CHECK(ParameterCount(c.config) <= kMaxModelParameters);
  const std::vector<ParamShape> shapes = ParameterShapes(c.config);
  RF_FUZZ_CHECK(c.params.t.size() == shapes.size() && c.momentum.t.size() == shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    RF_FUZZ_CHECK(c.params.t[i].size() == shapes[i].count());
    RF_FUZZ_CHECK(c.momentum.t[i].size() == shapes[i].count());
  }
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.lr));
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.momentum) && c.optimizer.momentum >= 0);
  RF_FUZZ_CHECK(std::isfinite(c.optimizer.weight_decay) && c.optimizer.weight_decay >= 0);
  RF_FUZZ_CHECK(c.epoch <= kMaxCheckpointEpoch);
  RF_FUZZ_CHECK(c.batch_size >= 1 && c.world_size >= 1);
  RF_FUZZ_CHECK(c.dataset_samples == 0 || c.next_sample <= c.dataset_samples);
  RF_FUZZ_CHECK(c.stretches.size() <= kMaxCheckpointStretches);
  for (const CheckpointStretch& s : c.stretches) RF_FUZZ_CHECK(s.world_size >= 1);
}

}  // namespace rf::fuzz
