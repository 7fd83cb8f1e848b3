// The retry policy alone: which failures are retried, the backoff and its jitter, the messages.
#include "io/remote/retry_policy.h"

#include <gtest/gtest.h>

#include <set>

namespace rf {
namespace {

using std::chrono::milliseconds;

TEST(RetryDelay, DoublesFromTheFirstBackoffWithJitterInTheUpperHalf) {
  HttpFetchOptions o;
  o.first_backoff = milliseconds(100);
  o.max_backoff = milliseconds(10'000);
  for (uint32_t failed = 1; failed <= 5; ++failed) {
    int64_t b = 100 << (failed - 1);
    std::set<int64_t> seen;
    for (uint64_t r = 0; r < 2000; ++r) {
      int64_t d = RetryDelay(o, failed, r * 0x9E3779B97F4A7C15ULL).count();
      EXPECT_GE(d, b / 2) << "after " << failed << " failures";
      EXPECT_LE(d, b) << "after " << failed << " failures";
      seen.insert(d);
    }
    EXPECT_GT(seen.size(), 10u) << "no jitter after " << failed << " failures";
  }
}

TEST(RetryDelay, StopsDoublingAtMaxBackoff) {
  HttpFetchOptions o;
  o.first_backoff = milliseconds(100);
  o.max_backoff = milliseconds(1'000);
  for (uint32_t failed : {5u, 40u, 1'000'000u}) {
    for (uint64_t r : {0ull, 1ull, ~0ull}) {
      int64_t d = RetryDelay(o, failed, r).count();
      EXPECT_GE(d, 500);
      EXPECT_LE(d, 1000);
    }
  }
}

TEST(NextAttemptAt, NothingWhereTheAttemptWouldStartPastTheDeadline) {
  HttpFetchOptions o;
  o.first_backoff = o.max_backoff = milliseconds(100);
  FetchClock::time_point now = FetchClock::now();
  auto at = NextAttemptAt(o, 1, now, now + milliseconds(1'000), 7);
  ASSERT_TRUE(at.has_value());
  EXPECT_GE(*at, now + milliseconds(50));
  EXPECT_FALSE(NextAttemptAt(o, 1, now, now + milliseconds(40), 7).has_value());
}

TEST(IsTransientHttpStatus, ServerErrorsThrottlingAndTimeoutsOnly) {
  for (long s : {500L, 502L, 503L, 504L, 429L, 408L}) EXPECT_TRUE(IsTransientHttpStatus(s)) << s;
  for (long s : {400L, 401L, 403L, 404L, 416L, 301L, 200L})
    EXPECT_FALSE(IsTransientHttpStatus(s)) << s;
}

TEST(HttpStatusError, NamesEachPermanentStatus) {
  Status nf = HttpStatusError("http://h/x", "bytes 0-9", 404);
  EXPECT_TRUE(nf.IsNotFound());
  EXPECT_EQ(nf.ToString(), "http://h/x: bytes 0-9: HTTP 404 Not Found: no such object");
  Status forbidden = HttpStatusError("http://h/x", "bytes 0-9", 403);
  EXPECT_TRUE(forbidden.IsIOError());
  EXPECT_NE(forbidden.message().find("access denied"), std::string::npos);
  EXPECT_NE(forbidden.message().find("credentials"), std::string::npos);
  EXPECT_NE(HttpStatusError("u", "r", 401).message().find("credentials"), std::string::npos);
  EXPECT_NE(HttpStatusError("u", "r", 302).message().find("not followed"), std::string::npos);
}

TEST(DeadlineError, OneLineWithTheUrlRangeAttemptsAndLastError) {
  Status st =
      DeadlineError("https://h/x", ByteRangeText(100, 50), 4, milliseconds(2'345), "HTTP 503");
  EXPECT_EQ(st.ToString(),
            "https://h/x: bytes 100-149: gave up after 4 attempts in 2.3 s (the deadline): "
            "HTTP 503");
}

TEST(CheckHttpFetchOptions, RefusesWhatCannotRun) {
  EXPECT_TRUE(CheckHttpFetchOptions({}).ok());
  HttpFetchOptions o;
  o.max_in_flight = 0;
  EXPECT_TRUE(CheckHttpFetchOptions(o).IsInvalidArgument());
  o = {};
  o.deadline = milliseconds(0);
  EXPECT_TRUE(CheckHttpFetchOptions(o).IsInvalidArgument());
  o = {};
  o.first_backoff = milliseconds(10'000);
  o.max_backoff = milliseconds(100);
  EXPECT_TRUE(CheckHttpFetchOptions(o).IsInvalidArgument());
}

}  // namespace
}  // namespace rf
