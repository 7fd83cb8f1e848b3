// RankWatchdog (dist/rank_watchdog.h): its thread against the training thread's beats, the
// collective error it polls, and its destructor. Run under ThreadSanitizer by
// `tools/test.sh --sanitize=thread`. In ringfeed `fail` ends the process; here it records what it
// was told and returns, which ends the watchdog's thread.
#include "parallel/rank_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace rf {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// What `fail` was called with, from the watchdog's thread.
struct Failures {
  std::mutex mu;
  std::string message;
  std::atomic<int> calls{0};

  std::function<void(const std::string&)> Fail() {
    return [this](const std::string& why) {
      std::lock_guard<std::mutex> lock(mu);
      message = why;
      calls.fetch_add(1);
    };
  }
  // Waits up to `limit` for the first call.
  bool WaitForCall(milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (calls.load() == 0 && Clock::now() < end) std::this_thread::sleep_for(milliseconds(5));
    return calls.load() > 0;
  }
  std::string Message() {
    std::lock_guard<std::mutex> lock(mu);
    return message;
  }
};

TEST(RankWatchdog, FailsOnceWhenNoStepFinishesWithinTheTimeout) {
  Failures f;
  RankWatchdog dog(0.05, nullptr, f.Fail(), milliseconds(10));
  ASSERT_TRUE(f.WaitForCall(milliseconds(10000)));
  EXPECT_NE(f.Message().find("no training step finished for"), std::string::npos) << f.Message();
  EXPECT_NE(f.Message().find("(--rank-timeout)"), std::string::npos) << f.Message();
  std::this_thread::sleep_for(milliseconds(100));  // ten more polls: it stopped after one call
  EXPECT_EQ(f.calls.load(), 1);
}

TEST(RankWatchdog, BeatsFromAnotherThreadKeepItQuietPastTheTimeout) {
  Failures f;
  {
    // The beats run for 2.5 timeouts; each comes 10 ms after the last, far inside the timeout.
    RankWatchdog dog(1.0, nullptr, f.Fail(), milliseconds(10));
    std::thread trainer([&dog] {
      const auto end = Clock::now() + milliseconds(2500);
      while (Clock::now() < end) {
        dog.Beat();
        std::this_thread::sleep_for(milliseconds(10));
      }
    });
    trainer.join();
  }
  EXPECT_EQ(f.calls.load(), 0) << f.Message();
}

TEST(RankWatchdog, FailsWithTheCollectiveErrorItPolls) {
  Failures f;
  std::atomic<int> polls{0};
  auto check = [&polls]() -> Status {
    if (polls.fetch_add(1) < 3) return Status::Ok();
    return Status::IOError("rank 1", "peer connection closed", 104);
  };
  RankWatchdog dog(0, check, f.Fail(), milliseconds(10));
  ASSERT_TRUE(f.WaitForCall(milliseconds(10000)));
  EXPECT_NE(f.Message().find("peer connection closed"), std::string::npos) << f.Message();
  EXPECT_NE(f.Message().find("rank 1"), std::string::npos) << f.Message();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(f.calls.load(), 1);
  EXPECT_EQ(polls.load(), 4);  // no poll after the failure
}

TEST(RankWatchdog, DestructorWakesAndJoinsItsThreadWithoutFailing) {
  Failures f;
  std::atomic<int> polls{0};
  const auto start = Clock::now();
  {
    auto check = [&polls] {
      polls.fetch_add(1);
      return Status::Ok();
    };
    RankWatchdog dog(0.001, check, f.Fail(), std::chrono::hours(1));
    std::this_thread::sleep_for(milliseconds(20));
  }
  // Woken, not timed out: the hour-long poll never ran, so neither the check nor the timeout did.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(polls.load(), 0);
  EXPECT_EQ(f.calls.load(), 0);
}

}  // namespace
}  // namespace rf
