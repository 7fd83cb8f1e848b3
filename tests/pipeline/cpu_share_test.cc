// AdaptiveCpuShare (pipeline/images/cpu_share.h) steering a simulated loader: the nvJPEG decoder's
// CPU threads as one queue (C records a second, the oldest batch first) and its two drivers as two
// more (G/2 each: a batch goes to the first free one, so two batches decode side by side), the
// image stage's jobs (`depth` in flight, each split by the share when submitted, handed on in
// order) and a consumer that takes T seconds a batch. The times are simulated, so the test neither
// sleeps nor depends on the machine.
#include "pipeline/images/cpu_share.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <vector>

namespace rf {
namespace {

struct Trace {
  std::vector<double> shares;  // each batch's share when it was submitted
  std::vector<double> waits;   // the consumer's wait for each batch (s)
  double seconds = 0;          // the consumer's clock at the end
};

// `batches` batches of n records through the simulated loader; the share held at `floor` where
// `fixed` (a fixed image_cpu_share), else the governor's.
Trace Simulate(double cpu_rate, double gpu_rate, double step_s, int batches, double floor,
               bool fixed = false, int n = 256, int depth = 2) {
  AdaptiveCpuShare governor(floor);
  Trace run;
  double cpu_free = 0, t = 0, last_done = 0;
  double driver_free[2] = {0, 0};
  // The batches in flight: when each is decoded, when it was submitted, whether its CPU part
  // finished after its nvJPEG part.
  std::deque<double> done, submitted;
  std::deque<bool> cpu_last;
  double last_wait_end = -1;
  auto submit = [&](double at) {
    const double s = governor.share();
    run.shares.push_back(s);
    submitted.push_back(at);
    const double k = std::floor(n * s + 0.5);
    double cpu_done = -1, gpu_done = -1;
    if (k > 0) cpu_done = cpu_free = std::max(cpu_free, at) + k / cpu_rate;
    if (k < n) {
      double& d = driver_free[driver_free[1] < driver_free[0] ? 1 : 0];
      gpu_done = d = std::max(d, at) + (n - k) / (gpu_rate / 2);
    }
    last_done = std::max({last_done, cpu_done, gpu_done});  // handed on in submission order
    done.push_back(last_done);
    cpu_last.push_back(cpu_done > gpu_done);
  };
  for (int j = 0; j < depth; ++j) submit(0);
  for (int j = 0; j < batches; ++j) {
    const double wait = std::max(0.0, done.front() - t);
    // As the decoder does: a batch submitted after the previous one came is left out (the stage
    // submits at the start of the consumer's call, before its wait: at the same simulated time).
    if (!fixed && submitted.front() <= last_wait_end)
      governor.Waited(static_cast<uint64_t>(wait * 1e9), cpu_last.front());
    done.pop_front();
    submitted.pop_front();
    cpu_last.pop_front();
    run.waits.push_back(wait);
    t += wait;
    last_wait_end = t;
    t += step_s;
    submit(t);  // the stage refills the freed slot on the consumer's next call
  }
  run.seconds = t;
  return run;
}

double Mean(const std::vector<double>& v, size_t from) {
  double s = 0;
  for (size_t i = from; i < v.size(); ++i) s += v[i];
  return s / static_cast<double>(v.size() - from);
}

TEST(AdaptiveCpuShare, StartsAtItsFloorAndStaysBetweenItAndOne) {
  constexpr uint64_t kLate = AdaptiveCpuShare::kLateNs + 1;
  AdaptiveCpuShare g(0.2);
  EXPECT_DOUBLE_EQ(g.share(), 0.2);
  for (int i = 0; i < 100; ++i) g.Waited(0, false);
  EXPECT_DOUBLE_EQ(g.share(), 1.0);
  for (int i = 0; i < 100; ++i) g.Waited(kLate, true);  // waits for the CPU threads
  EXPECT_DOUBLE_EQ(g.share(), 0.2);
  g.Waited(AdaptiveCpuShare::kLateNs, true);  // a wait of exactly the limit is not late, but one
  EXPECT_DOUBLE_EQ(g.share(), 0.2);           // batch found ready is not yet a run of them
  g.Waited(0, true);
  EXPECT_NEAR(g.share(), 0.2 + AdaptiveCpuShare::kRise, 1e-12);
  // Late for the CPU threads and ready in turn (a decode-bound consumer of two drivers): it
  // falls and never rises.
  for (int i = 0; i < 50; ++i) {
    g.Waited(kLate, true);
    g.Waited(0, false);
  }
  EXPECT_DOUBLE_EQ(g.share(), 0.2);
  // Late for nvJPEG: it rises at once, up to 1.
  g.Waited(kLate, false);
  EXPECT_NEAR(g.share(), 0.2 + AdaptiveCpuShare::kRise, 1e-12);
  for (int i = 0; i < 100; ++i) g.Waited(kLate, false);
  EXPECT_DOUBLE_EQ(g.share(), 1.0);
  EXPECT_DOUBLE_EQ(AdaptiveCpuShare(-1).floor(), 0.0);
  EXPECT_DOUBLE_EQ(AdaptiveCpuShare(2).floor(), 1.0);
}

TEST(AdaptiveCpuShare, AConsumerSlowerThanTheCpuThreadsGetsEveryRecordFromThem) {
  // The CPU threads take 51 ms a batch, the consumer 60: nvJPEG is left idle.
  const Trace r = Simulate(5000, 25000, 0.060, 400, 5000.0 / 30000);
  const auto first_all = std::find(r.shares.begin(), r.shares.end(), 1.0) - r.shares.begin();
  EXPECT_LE(first_all, 24);
  for (size_t j = 40; j < r.shares.size(); ++j) ASSERT_DOUBLE_EQ(r.shares[j], 1.0) << j;
  for (size_t j = 40; j < r.waits.size(); ++j) ASSERT_EQ(r.waits[j], 0.0) << j;
}

TEST(AdaptiveCpuShare, AConsumerFasterThanBothDecodersKeepsTheFastestSplit) {
  // The consumer never waits for itself: it waits for one batch of every two (two decode side by
  // side), and the share stays near the floor, the split at which both decoders finish together
  // (256 records in 8.5 ms): a wait for nvJPEG lifts it a step, the next for the CPU threads
  // brings it back.
  const double floor = 5000.0 / 30000;
  const Trace r = Simulate(5000, 25000, 0.0, 400, floor);
  for (double s : r.shares) ASSERT_GE(s, floor);
  EXPECT_LT(Mean(r.shares, 0), floor + 0.02);
  EXPECT_NEAR(400 * 256 / r.seconds, 30000, 600);
}

TEST(AdaptiveCpuShare, InBetweenTheCpuThreadsCarryWhatTheyCanAndTheConsumerSeldomWaits) {
  // The CPU threads alone would take 64 ms a batch, the consumer takes 55: nvJPEG must take at
  // least 1 - 55/64 = 0.14 of the records, and not much more.
  const double floor = 4000.0 / 29000;
  const Trace r = Simulate(4000, 25000, 0.055, 1000, floor);
  const double share = Mean(r.shares, 200);
  EXPECT_GT(share, 0.6);
  EXPECT_LT(share, 55.0 / 64);
  // The consumer's rate: within 5% of its own (the waits are that small).
  EXPECT_LT(Mean(r.waits, 200), 0.05 * 0.055);
  // A fixed share at the floor would feed it as fast, with nvJPEG taking most records; all on the
  // CPU would starve it.
  const Trace all_cpu = Simulate(4000, 25000, 0.055, 1000, 1.0, /*fixed=*/true);
  EXPECT_GT(Mean(all_cpu.waits, 200), 0.1 * 0.055);
}

TEST(AdaptiveCpuShare, WhereNvjpegBesideTheModelIsTheSlowerTheCpuThreadsTakeOver) {
  // Beside a model nvJPEG decodes 4000 records a second (about 0.3 ms an image on an H200 where
  // it takes 0.05 alone), the CPU threads 5000, and the model takes 54 ms a batch: at the floor
  // (the split of the decoders' rates alone) nvJPEG's 231 records take 58 ms a batch and the
  // model waits for it. The share rises to where the CPU threads carry it all (51 ms a batch).
  const Trace r = Simulate(5000, 4000, 0.054, 400, 0.1);
  for (size_t j = 100; j < r.shares.size(); ++j) ASSERT_GT(r.shares[j], 0.9) << j;
  EXPECT_LT(Mean(r.waits, 100), 0.01 * 0.054);
  // Held at the floor it would wait for nvJPEG at every batch.
  const Trace at_floor = Simulate(5000, 4000, 0.054, 400, 0.1, /*fixed=*/true);
  EXPECT_GT(Mean(at_floor.waits, 100), 0.05 * 0.054);
}

}  // namespace
}  // namespace rf
