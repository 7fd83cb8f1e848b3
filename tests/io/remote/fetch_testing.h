// Helpers of the HTTP fetcher's tests: fetch ranges of a positional object (PositionalObject)
// and check every byte, and that nothing was written past any range (a canary after each).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/remote/http_fetcher.h"
#include "tests/testing/positional_data.h"

namespace rf::testing {

struct ByteRange {
  uint64_t offset = 0, len = 0;
};

// Options that keep a test short: small backoffs, a deadline of seconds.
inline HttpFetchOptions QuickOptions() {
  HttpFetchOptions o;
  o.deadline = std::chrono::milliseconds(5'000);
  o.first_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(200);
  o.connect_timeout = std::chrono::milliseconds(2'000);
  o.stall_timeout = std::chrono::seconds(2);
  return o;
}

inline std::unique_ptr<HttpFetcher> MakeFetcher(const HttpFetchOptions& o = QuickOptions()) {
  auto f = HttpFetcher::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}

// Fetches every range of `url`, keeping the fetcher full (a new request as each completes), and
// returns each range's Status in range order. Each Ok range is checked byte for byte against
// the positional object; every range's canary after it must be untouched, Ok or not.
inline std::vector<Status> FetchRanges(HttpFetcher& f, uint32_t index,
                                       const std::vector<ByteRange>& ranges) {
  constexpr size_t kCanary = 64;
  std::vector<std::vector<uint8_t>> bufs(ranges.size());
  std::vector<Status> statuses(ranges.size());
  size_t next = 0, done = 0;
  std::vector<HttpCompletion> out;
  while (done < ranges.size()) {
    while (next < ranges.size() && next - done < f.capacity()) {
      bufs[next].assign(ranges[next].len + kCanary, 0xA5);
      Status st =
          f.Prepare({index, bufs[next].data(), ranges[next].len, ranges[next].offset, next});
      EXPECT_TRUE(st.ok()) << st.ToString();
      ++next;
    }
    EXPECT_TRUE(f.Submit().ok());
    out.clear();
    Status st = f.Wait(out, 1);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    for (HttpCompletion& c : out) statuses[c.user_data] = std::move(c.status);
    done += out.size();
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    const std::vector<uint8_t>& b = bufs[i];
    if (statuses[i].ok()) {
      EXPECT_TRUE(std::equal(b.begin(), b.begin() + ranges[i].len,
                             PositionalObject(ranges[i].offset, ranges[i].len).begin()))
          << "range " << i << " (" << ranges[i].len << " bytes at " << ranges[i].offset
          << ") differs from the object";
    }
    EXPECT_TRUE(std::all_of(b.end() - kCanary, b.end(), [](uint8_t v) { return v == 0xA5; }))
        << "range " << i << ": bytes written past the range";
  }
  return statuses;
}

// The same for a URL, added to the fetcher first.
inline std::vector<Status> FetchRanges(HttpFetcher& f, const std::string& url,
                                       const std::vector<ByteRange>& ranges) {
  auto index = f.AddUrl(url);
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  if (!index.ok()) return {};
  return FetchRanges(f, *index, ranges);
}

inline Status FetchOne(HttpFetcher& f, const std::string& url, uint64_t offset, uint64_t len) {
  std::vector<Status> s = FetchRanges(f, url, {{offset, len}});
  return s.empty() ? Status::Aborted("no fetch") : s[0];
}

}  // namespace rf::testing
