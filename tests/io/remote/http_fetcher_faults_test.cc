// HttpFetcher against the fault server (tests/testing/fault_http_server.h): each transient
// fault retried to bytes identical to a fetch without faults; each permanent one named at once.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/remote/http_fetcher.h"
#include "io/remote/remote_object.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/testing/fault_http_server.h"

namespace rf {
namespace {

using testing::FaultHttpServer;
using testing::FetchOne;
using testing::HttpFault;
using testing::MakeFetcher;

constexpr uint64_t kObjectBytes = 2 << 20;
constexpr uint64_t kOffset = 12345, kLen = 300'000;

struct TransientCase {
  const char* name;
  HttpFault fault;
  bool resumes;  // the retry asks only for what the first attempt did not deliver
};

class TransientFault : public ::testing::TestWithParam<TransientCase> {};

TEST_P(TransientFault, IsRetriedToIdenticalBytes) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  server.Script({GetParam().fault});
  auto f = MakeFetcher();
  Status st = FetchOne(*f, server.Url("/object.bin"), kOffset, kLen);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(f->stats().attempts, 2u);
  EXPECT_EQ(f->stats().retries, 1u);
  EXPECT_EQ(server.requests(), 2u);
  // Resumed: the bytes the cut answer delivered are not fetched again.
  if (GetParam().resumes) {
    EXPECT_EQ(f->stats().bytes, kLen);
  }
}

INSTANTIATE_TEST_SUITE_P(
    HttpFetcher, TransientFault,
    ::testing::Values(TransientCase{"Status500", HttpFault::k500, false},
                      TransientCase{"Status503", HttpFault::k503, false},
                      TransientCase{"Status429", HttpFault::k429, false},
                      TransientCase{"ResetBeforeAnswer", HttpFault::kResetBeforeAnswer, false},
                      TransientCase{"ResetMidBody", HttpFault::kResetMidBody, true},
                      TransientCase{"ShortBody", HttpFault::kShortBody, true},
                      TransientCase{"WholeObjectForARange", HttpFault::kWholeObject, false}),
    [](const ::testing::TestParamInfo<TransientCase>& i) { return std::string(i.param.name); });

TEST(HttpFetcher, SeveralFaultsInARowAreRetried) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  server.Script(
      {HttpFault::k503, HttpFault::kShortBody, HttpFault::kResetMidBody, HttpFault::k500});
  auto f = MakeFetcher();
  ASSERT_TRUE(FetchOne(*f, server.Url("/x"), kOffset, kLen).ok());
  EXPECT_EQ(f->stats().attempts, 5u);
}

TEST(HttpFetcher, ManyRangesInFlightSurviveInterleavedFaults) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  std::vector<HttpFault> faults;
  for (int i = 0; i < 8; ++i)
    for (HttpFault k : {HttpFault::k500, HttpFault::kShortBody, HttpFault::kResetBeforeAnswer,
                        HttpFault::kResetMidBody, HttpFault::k429, HttpFault::kWholeObject})
      faults.push_back(k);
  server.Script(faults);
  HttpFetchOptions o = testing::QuickOptions();
  o.max_in_flight = 8;
  auto f = MakeFetcher(o);
  std::vector<testing::ByteRange> ranges;
  for (uint64_t i = 0; i < 64; ++i) ranges.push_back({i * 30011, 30011});
  for (const Status& st : testing::FetchRanges(*f, server.Url("/x"), ranges))
    EXPECT_TRUE(st.ok()) << st.ToString();
  // Every fault is one retry of ours, but a reset before the answer on a reused connection:
  // libcurl resends that request on a new connection itself (an error answer's body is read,
  // so the connection after a 500 or a 429 is kept and reused).
  EXPECT_LE(f->stats().retries, faults.size());
  EXPECT_GE(f->stats().retries, faults.size() - 8);
}

TEST(HttpFetcher, SizeIsRetriedToo) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  server.Script({HttpFault::k503, HttpFault::kResetBeforeAnswer});
  auto f = MakeFetcher();
  auto size = f->Size(server.Url("/x"));
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kObjectBytes);
  EXPECT_EQ(server.requests(), 3u);
}

// SizeAndHead of the server's object into a buffer of `len` bytes and a canary: the size, and
// the object's first bytes (as many as it has, at most len) checked byte for byte.
Result<uint64_t> SizeAndHeadChecked(HttpFetcher& f, const std::string& url, uint64_t len,
                                    uint64_t* got) {
  RF_ASSIGN_OR_RETURN(const RemoteObject o, ResolveRemoteObject(url));
  std::vector<uint8_t> buf(len + 64, 0xA5);
  Result<uint64_t> size = f.SizeAndHead(o, buf.data(), len, got);
  if (size.ok()) {
    EXPECT_EQ(*got, std::min(len, *size));
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(*got),
                           testing::PositionalObject(0, *got).begin()));
  }
  EXPECT_TRUE(std::all_of(buf.begin() + static_cast<ptrdiff_t>(len), buf.end(), [](uint8_t v) {
    return v == 0xA5;
  })) << "bytes written past the head";
  return size;
}

TEST(HttpFetcher, SizeAndHeadIsOneRequestForBoth) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  auto f = MakeFetcher();
  uint64_t got = 0;
  auto size = SizeAndHeadChecked(*f, server.Url("/x"), 4096, &got);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kObjectBytes);
  EXPECT_EQ(got, 4096u);
  EXPECT_EQ(server.requests(), 1u);
  FaultHttpServer small(1000);  // an object shorter than the head: all of it
  ASSERT_TRUE(small.ok());
  size = SizeAndHeadChecked(*f, small.Url("/x"), 4096, &got);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, 1000u);
  EXPECT_EQ(got, 1000u);
}

TEST(HttpFetcher, SizeAndHeadIsRetriedToTheSameBytesAndTakesAWholeAnswer) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  // A cut body, a reset and a 503 are retried from the first byte; a server that ignores the
  // range (200, the whole object) is read as far as the head, and that is an answer.
  server.Script(
      {HttpFault::kShortBody, HttpFault::kResetMidBody, HttpFault::k503, HttpFault::kWholeObject});
  auto f = MakeFetcher();
  uint64_t got = 0;
  auto size = SizeAndHeadChecked(*f, server.Url("/x"), 300'000, &got);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kObjectBytes);
  EXPECT_EQ(server.requests(), 4u);
  server.Script({HttpFault::kOtherRange});  // bytes from elsewhere are no head
  size = SizeAndHeadChecked(*f, server.Url("/x"), 300'000, &got);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().ToString(),
            server.Url("/x") +
                ": size: HTTP 206 with another range than the one asked for "
                "(from byte 1)");
}

// SizeAndEnds of the server's object (a 4096-byte head, a `tail`-byte tail), each end checked
// byte for byte against the object.
Result<HttpFetcher::Ends> EndsChecked(HttpFetcher& f, const std::string& url, uint64_t tail) {
  RF_ASSIGN_OR_RETURN(const RemoteObject o, ResolveRemoteObject(url));
  std::vector<uint8_t> head(4096), end(tail);
  Result<HttpFetcher::Ends> e = f.SizeAndEnds(o, head.data(), head.size(), end.data(), tail);
  if (e.ok()) {
    EXPECT_EQ(e->head_bytes, std::min<uint64_t>(4096, e->size));
    EXPECT_TRUE(std::equal(head.begin(), head.begin() + static_cast<ptrdiff_t>(e->head_bytes),
                           testing::PositionalObject(0, e->head_bytes).begin()));
    EXPECT_TRUE(std::equal(end.begin(), end.begin() + static_cast<ptrdiff_t>(e->tail_bytes),
                           testing::PositionalObject(e->tail_at, e->tail_bytes).begin()));
  }
  return e;
}

TEST(HttpFetcher, SizeAndEndsAsksForBothEndsAtOnce) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  auto f = MakeFetcher();
  auto e = EndsChecked(*f, server.Url("/x"), 100'000);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->tail_status.ok()) << e->tail_status.ToString();
  EXPECT_EQ(e->size, kObjectBytes);
  EXPECT_EQ(e->tail_at, kObjectBytes - 100'000);
  EXPECT_EQ(e->tail_bytes, 100'000u);
  EXPECT_EQ(server.requests(), 2u);
  EXPECT_EQ(server.connections(), 2u);  // on two connections: one round trip for both
  FaultHttpServer small(1000);          // shorter than the tail: all of it, from byte 0
  ASSERT_TRUE(small.ok());
  e = EndsChecked(*f, small.Url("/x"), 100'000);
  ASSERT_TRUE(e.ok() && e->tail_status.ok());
  EXPECT_EQ(e->size, 1000u);
  EXPECT_EQ(e->tail_at, 0u);
  EXPECT_EQ(e->tail_bytes, 1000u);
}

TEST(HttpFetcher, ATailThatCannotBeHadLeavesTheHeadAndSaysWhy) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  // A server that ignores ranges: the head reads as far as it needs, the tail (the whole
  // object, longer than its buffer) is refused, the call still answers with the head.
  server.Always(HttpFault::kWholeObject);
  auto f = MakeFetcher();
  auto e = EndsChecked(*f, server.Url("/x"), 100'000);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->size, kObjectBytes);
  EXPECT_EQ(e->head_bytes, 4096u);
  EXPECT_EQ(e->tail_bytes, 0u);
  EXPECT_EQ(e->tail_status.ToString(),
            server.Url("/x") +
                ": the last 100000 bytes: the answer is longer than 100000 "
                "bytes; refused");
  // A missing object is the call's own failure, named as a size is.
  server.Clear();
  EXPECT_TRUE(EndsChecked(*f, server.Url("/missing"), 100'000).status().IsNotFound());
}

// A permanent fault: one request, the Status names the URL and the range.
void ExpectRefusedAtOnce(HttpFault fault, const std::string& says) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  server.Always(fault);
  auto f = MakeFetcher();
  Status st = FetchOne(*f, server.Url("/x?sig=SECRET"), kOffset, kLen);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_EQ(st.ToString(), server.Url("/x") + ": bytes 12345-312344: " + says);
  EXPECT_EQ(server.requests(), 1u);
}

TEST(HttpFetcher, ABodyLongerThanTheRangeIsRefused) {
  ExpectRefusedAtOnce(HttpFault::kLongBody,
                      "the server sent more than the 300000 bytes asked for; refused");
}

TEST(HttpFetcher, AnAnswerForAnotherRangeIsRefused) {
  ExpectRefusedAtOnce(HttpFault::kOtherRange,
                      "HTTP 206 with another range than the one asked for (from byte 12346)");
}

TEST(HttpFetcher, NotFoundAndForbiddenAreNotRetried) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  auto f = MakeFetcher();
  EXPECT_TRUE(FetchOne(*f, server.Url("/missing"), 0, 10).IsNotFound());
  EXPECT_EQ(server.requests(), 1u);
  Status st = FetchOne(*f, server.Url("/forbidden"), 0, 10);
  EXPECT_NE(st.ToString().find("HTTP 403 Forbidden: access denied"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(server.requests(), 2u);
}

TEST(HttpFetcher, AStalledAnswerTimesOutAndGivesUpAtTheDeadline) {
  FaultHttpServer server(kObjectBytes);
  ASSERT_TRUE(server.ok());
  server.Always(HttpFault::kStall);
  HttpFetchOptions o = testing::QuickOptions();
  o.stall_timeout = std::chrono::seconds(1);
  o.deadline = std::chrono::milliseconds(2'500);
  auto f = MakeFetcher(o);
  Status st = FetchOne(*f, server.Url("/x"), 0, 100);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.ToString().find("(the deadline): curl error 28"), std::string::npos)
      << st.ToString();
  EXPECT_GE(f->stats().attempts, 2u);
}

TEST(HttpFetcher, ARefusedConnectionIsRetriedUntilTheDeadline) {
  std::string url;
  {
    FaultHttpServer server(kObjectBytes);  // a port that was ours, now closed
    url = server.Url("/x");
  }
  HttpFetchOptions o = testing::QuickOptions();
  o.deadline = std::chrono::milliseconds(500);
  auto f = MakeFetcher(o);
  Status st = FetchOne(*f, url, 0, 100);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.ToString().find("(the deadline): curl error 7"), std::string::npos) << st.ToString();
  EXPECT_GE(f->stats().attempts, 2u);
}

}  // namespace
}  // namespace rf
