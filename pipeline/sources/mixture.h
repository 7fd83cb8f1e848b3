// Mixtures: batches drawn from several datasets by weight. The one rule both kinds of mixture
// follow, and what they share:
//
//   packed sequences  ringfeed.Loader([a, b], B, sequence_length=L, weights=[...]): row k of
//                     every rank (pipeline/sequences/sequence_loader.h)
//   samples           ringfeed.Loader([a, b], B, weights=[...]) and `ringfeed train --data a,b
//                     --weights 0.7,0.3`: step k of every rank (pipeline/sources/mixed_source.h)
//
// The rule. With weights w_i normalized to sum 1, draw k (k = 0, 1, ...: a rank's rows or steps
// since the start) comes from the dataset i that maximizes the deficit w_i (k + 1) - drawn_i
// (drawn_i: the draws dataset i gave before k; a weight of 0 never draws; ties go to the first
// dataset from seed mod n on). So which dataset gives draw k is a pure function of (weights, seed,
// k), computed as draws go with no index built at start, and every rank draws the same dataset at
// the same k. The deficits stay within (-1, n - 1): after every k, |drawn_i - w_i k| < max(1,
// n - 1) (the tests measure the bound at every prefix).
//
// A sample mixture's epoch (what `ringfeed train --epochs` counts and a Python iteration hands
// out): each dataset keeps its own epochs, so the mixture's are a count only: M steps in all, M
// the samples of its datasets of positive weight together, so ceil(M / world_size) steps a rank.
// An epoch begun at other world sizes (its stretches, as a dataset's: core/order_settings.h)
// holds what they left of M: with R_0 = M, stretch j of world W_j whose ranks took p_j steps
// each leaves R_{j+1} = R_j - p_j W_j, and the run continuing it takes ceil(R / world_size) steps
// a rank (MixtureEpochCount).
//
// Thread safety: functions of their arguments.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/order_settings.h"
#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/order/window_order.h"

namespace rf {

// The dataset of draw k given the draws so far (the rule above). `weights` sum to 1.
size_t MixtureSource(const std::vector<double>& weights, uint64_t seed, uint64_t k,
                     const std::vector<uint64_t>& drawn);
// Weights as given -> normalized; Usage error for none, one negative, NaN or infinite, or all 0,
// or a count other than `sources`.
Result<std::vector<double>> NormalizeWeights(const std::vector<float>& weights, size_t sources);

// Usage where `drawn` (each dataset's draws) cannot be where the rule leaves a mixture of
// `weights` (normalized) after `draws` draws (`unit`: what a draw is, "steps" or "rows", for the
// message): their sum is not `draws`, a dataset of weight 0 drew, or a dataset's draws are
// max(1, n - 1) or more from w_i draws (the bound above, widened by the rounding of w_i draws in
// a double, which the rule shares). Every place the rule reaches passes: a state's check.
Status CheckMixtureDraws(const std::vector<double>& weights, uint64_t draws,
                         const std::vector<uint64_t>& drawn, const std::string& unit);

// Usage naming the first dataset whose samples are not those of datasets[0], with both values: a
// batch holds samples of one shape and type. In this order: image records (decoded into
// images) against anything else, both datasets' samples named; the class lists (the class names
// blocks: ImageFolder's classes), which must be equal, in order, naming the first class that
// differs (or the counts); then record kind, dtype, shape, media type, labels and label dtype
// (io/dataset.h's CheckSameRecords).
Status CheckMixable(const std::vector<const Dataset*>& datasets);

// The per-channel mean and std of the mixture's samples, each dataset's statistics weighted by
// its weight (the mixture's distribution): mean = sum w_i m_i, var = sum w_i (s_i^2 + (m_i -
// mean)^2). Channels `channels` and up keep headers[0]'s. False where a value is not finite as a
// float.
bool MixtureStatistics(const std::vector<const format::Header*>& headers,
                       const std::vector<double>& weights, uint32_t channels,
                       std::array<float, format::kMaxChannels>* mean,
                       std::array<float, format::kMaxChannels>* stddev);

// M: the samples of the datasets of positive weight together (the mixture epoch's, over ranks).
uint64_t MixtureSamples(const std::vector<uint64_t>& dataset_samples,
                        const std::vector<double>& weights);

// Steps each rank of `order` (its world size, and order.resumed for an epoch begun at other
// world sizes) takes in mixture epoch `epoch` of M samples, before drop_last (the epoch rule
// above). Usage for a stretch of world size 0, or whose position is past its stretch's steps a
// rank (named as CheckStretches names a dataset's).
Result<uint64_t> MixtureEpochCount(uint64_t mixture_samples, const OrderSettings& order,
                                   uint64_t epoch);

// Where each dataset of a mixture continues a state saved by a run of `saved_layout`'s ranks in a
// run of `now`'s: each dataset's epoch by pipeline/order/window_order.h's ResumeAt (the same
// place in the same layout; in another, its epoch's rest shared by the new ranks, each sample
// once). The steps and draws stay.
MixtureState ContinueMixture(const MixtureState& saved, RankLayout saved_layout, RankLayout now);

}  // namespace rf
