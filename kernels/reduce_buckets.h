// Reduce buckets: how a data-parallel step splits its gradient into pieces that are reduced over
// the ranks while the backward pass goes on (kernels/cuda_backend.h, --reduce-buckets).
//
// The model's layers finish their gradients in backward order: fc2, fc1, then the conv blocks
// from the last to the first (a block's unit is its filter, its bias and, with batch norm, its
// scale). PlanReduceBuckets groups these units into buckets of consecutive units; a bucket is
// reduced as soon as the backward pass has written its last unit's gradients, so every bucket
// but the last overlaps the rest of the backward pass, and only the last one's reduction is
// left after it.
//
// The grouping: every unit starts as a bucket of its own. max_buckets N: the smallest bucket is
// merged into its smaller neighbour (in backward order; a tie goes to the later one) while
// there are more than N. Auto (max_buckets 0): a unit under kAutoBucketBytes joins the unit the
// backward pass finishes after it (each reduction costs a collective's latency, about 10 us
// over NVLink, whatever its size), but the last unit stays alone, however small: its reduction
// is the one left after the backward pass, and the smaller the sooner it ends (measured on
// 2 H100s: the default model at batch 128 trained 1.83x one GPU with its last two blocks in one
// bucket, 1.86x with the last alone). Each bucket's gradient lies in at most two runs of the flat
// buffer (the blocks' and fc layers' tensors, and the batch-norm scales after fc2): `ranges`, each
// covering whole padded tensors (offsets within the flat buffer and its zero gaps), so the
// buckets' ranges cover [0, padded_count) exactly once.
//
// A pure function of the model and the count: every rank plans the same buckets, reduced in the
// same order, so each reduction is the same collective on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace rf {

inline constexpr size_t kAutoBucketBytes = size_t{64} << 10;

struct GradientRange {
  size_t offset = 0, count = 0;  // floats of the flat gradient buffer
  bool operator==(const GradientRange&) const = default;
};

struct ReduceBucket {
  // Its units, [first_unit, last_unit] in backward order (0: fc2, 1: fc1, 2 + j: conv block
  // blocks - 1 - j): it is reduced once the backward pass has finished last_unit.
  size_t first_unit = 0, last_unit = 0;
  std::vector<GradientRange> ranges;
  size_t bytes = 0;  // of its ranges, float32
};

// Backward units of `config`: 2 + its conv blocks.
size_t ReduceUnitCount(const ModelConfig& config);

// `offsets`: each ParameterShapes tensor's first float in the flat buffer, padded_count its
// floats in all (tensor t spans [offsets[t], offsets[t + 1]), the last up to padded_count).
// max_buckets 0: auto. Never more buckets than units; at least one.
std::vector<ReduceBucket> PlanReduceBuckets(const ModelConfig& config,
                                            const std::vector<size_t>& offsets, size_t padded_count,
                                            uint32_t max_buckets);

// "one reduction after the backward pass", or "3 buckets during the backward pass (2.0 MiB,
// 297 KiB, 76 KiB)": for the run's first lines.
std::string ReduceBucketsText(const std::vector<ReduceBucket>& buckets);

}  // namespace rf
