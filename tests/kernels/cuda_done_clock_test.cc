// CudaDoneClock: every mark reported once, in order, with a time inside the interval its work
// ran in; through the backend, WhenDone's callbacks have all run once the stats are taken.
#include "kernels/cuda_done_clock.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/clock.h"
#include "kernels/cuda_backend.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/testing/require_gpu.h"

namespace rf {
namespace {

struct Seen {
  std::vector<int> order;
  std::vector<uint64_t> times;
};
struct MarkArg {
  Seen* seen;
  int index;
};

void Record(void* arg, uint64_t done_ns) {
  const auto* a = static_cast<const MarkArg*>(arg);
  a->seen->order.push_back(a->index);
  a->seen->times.push_back(done_ns);
}

TEST(CudaDoneClock, ReportsEveryMarkOnceInOrderWithinTheTimeItsWorkRan) {
  RF_REQUIRE_GPU();
  RF_SKIP_UNDER_CUDA_TOOL("the clock's base, known to within a synchronize's round trip");
  auto stream = cuda::CreateStream();
  ASSERT_TRUE(stream.ok());
  // Capacity 4 for 12 marks: the clock must also wait for its oldest mark to reuse its event.
  auto clock = cuda::CudaDoneClock::Create(stream->get(), 4);
  ASSERT_TRUE(clock.ok()) << clock.status().ToString();
  auto buffer = cuda::DeviceBuffer::Allocate(256 << 20, "test buffer");
  ASSERT_TRUE(buffer.ok());
  Seen seen;
  std::vector<MarkArg> args(12);
  std::vector<uint64_t> queued(12);
  const uint64_t start = SteadyNowNs();
  for (int i = 0; i < 12; ++i) {
    ASSERT_EQ(cudaMemsetAsync(buffer->data(), i, buffer->bytes(), stream->get()), cudaSuccess);
    args[i] = MarkArg{&seen, i};
    queued[i] = SteadyNowNs();
    ASSERT_TRUE(clock->Mark(&Record, &args[i]).ok());
  }
  ASSERT_TRUE(clock->Poll(/*wait=*/true).ok());
  const uint64_t end = SteadyNowNs();
  ASSERT_EQ(seen.order.size(), 12u);
  // The clock's base is known to within half a synchronize's round trip: allow 100 us.
  constexpr uint64_t kSlack = 100000;
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(seen.order[i], i);
    EXPECT_GE(seen.times[i] + kSlack, queued[i]) << i;  // done after it was queued
    EXPECT_LE(seen.times[i], end + kSlack) << i;        // and before Poll returned
    if (i > 0) {
      EXPECT_GE(seen.times[i], seen.times[i - 1]) << i;
    }
  }
  EXPECT_GE(seen.times.front() + kSlack, start);
  // Ten 256 MiB memsets lie between marks 1 and 11, over a millisecond at HBM speed: the times
  // are the GPU's, not all the moment Poll ran (0.1 ms is a safe floor).
  EXPECT_GT(seen.times.back() - seen.times[1], 100000u);
  ASSERT_TRUE(clock->Poll(/*wait=*/true).ok());
  EXPECT_EQ(seen.order.size(), 12u) << "a mark reported twice";
}

TEST(CudaDoneClock, BackendRunsEveryWhenDoneCallbackByTheTimeStatsAreTaken) {
  RF_REQUIRE_GPU();
  const ModelConfig c = testing::TinyConfig();
  auto be = CudaBackend::Create(c, testing::TinyNormalization(c), 8, InitialParameters(c, 3), {});
  ASSERT_TRUE(be.ok()) << be.status().ToString();
  const testing::DeviceBatch batch = testing::ToDevice(testing::RandomBatch(c, 8, 1));
  Seen seen;
  std::vector<MarkArg> args(40);  // more than the backend's 32 pending marks
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE((*be)->TrainStep(batch.ref(), OptimizerConfig{}).ok());
    args[i] = MarkArg{&seen, i};
    ASSERT_TRUE((*be)->WhenDone(&Record, &args[i]).ok());
  }
  (void)(*be)->TakeTrainStats();
  ASSERT_EQ(seen.order.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(seen.order[i], i);
}

}  // namespace
}  // namespace rf
