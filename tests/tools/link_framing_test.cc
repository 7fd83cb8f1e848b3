// The link proxy's HTTP framing (tools/bench/link_proxy/http_framing.h): each fault lands in the
// answer it is meant for, at the byte it is meant for, however the server's bytes are split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/bench/link_proxy/http_framing.h"

namespace rf::link {
namespace {

class Script : public FaultSource {
 public:
  explicit Script(std::vector<Fault> f) : faults_(std::move(f)) {}
  Fault Next(uint64_t body) override {
    bodies.push_back(body);
    if (next_ >= faults_.size()) return {};
    return faults_[next_++];
  }
  std::vector<uint64_t> bodies;  // the body sizes asked about, in order

 private:
  std::vector<Fault> faults_;
  size_t next_ = 0;
};

std::string Answer(const std::string& body) {
  return "HTTP/1.1 206 Partial Content\r\nServer: nginx\r\ncontent-length: " +
         std::to_string(body.size()) + "\r\nContent-Range: bytes 0-" +
         std::to_string(body.size() - 1) + "/99999\r\n\r\n" + body;
}

struct Fed {
  std::string bytes;
  int64_t stall_ms = 0;
  ResponseFramer::End end = ResponseFramer::End::kNone;
};

// Feeds `server` to a framer `step` bytes at a time, as the proxy's reads would split it.
Fed Feed(ResponseFramer* f, const std::string& server, size_t step) {
  Fed fed;
  for (size_t at = 0; at < server.size() && fed.end == ResponseFramer::End::kNone; at += step) {
    ResponseFramer::Output o = f->Feed(server.data() + at, std::min(step, server.size() - at));
    fed.bytes.append(o.bytes.begin(), o.bytes.end());
    fed.stall_ms += o.stall_ms;
    fed.end = o.end;
  }
  return fed;
}

class Split : public ::testing::TestWithParam<size_t> {};

TEST_P(Split, AnswersWithoutFaultsPassUnchanged) {
  RequestTracker requests;
  requests.Feed("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n\r\n", 48);
  Script faults({});
  ResponseFramer f(&requests, &faults);
  const std::string server = Answer(std::string(1000, 'a')) + Answer(std::string(77, 'b'));
  Fed fed = Feed(&f, server, GetParam());
  EXPECT_EQ(fed.bytes, server);
  EXPECT_EQ(faults.bodies, (std::vector<uint64_t>{1000, 77}));
}

TEST_P(Split, FlipChangesTheMiddleByteOfTheFaultedAnswerOnly) {
  RequestTracker requests;
  requests.Feed("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", 36);
  Script faults({{FaultKind::kPass}, {FaultKind::kFlip}});
  ResponseFramer f(&requests, &faults);
  const std::string first = Answer(std::string(100, 'a')), second = Answer(std::string(101, 'b'));
  Fed fed = Feed(&f, first + second, GetParam());
  ASSERT_EQ(fed.bytes.size(), first.size() + second.size());
  std::string want = first + second;
  want[first.size() + second.size() - 101 + 50] ^= 0x5a;  // byte 50 of 101
  EXPECT_EQ(fed.bytes, want);
}

TEST_P(Split, ResetAndCutEndAfterHalfTheBody) {
  for (FaultKind k : {FaultKind::kReset, FaultKind::kCut}) {
    RequestTracker requests;
    requests.Feed("GET / HTTP/1.1\r\n\r\n", 18);
    Script faults({{k}});
    ResponseFramer f(&requests, &faults);
    const std::string a = Answer(std::string(1001, 'a'));
    Fed fed = Feed(&f, a + Answer("next"), GetParam());
    EXPECT_EQ(fed.bytes, a.substr(0, a.size() - 501));  // 500 of 1001 bytes sent
    EXPECT_EQ(fed.end,
              k == FaultKind::kReset ? ResponseFramer::End::kReset : ResponseFramer::End::kCut);
  }
}

TEST_P(Split, A503ReplacesTheAnswerAndKeepsTheConnectionInStep) {
  RequestTracker requests;
  requests.Feed("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", 36);
  Script faults({{FaultKind::k503}});
  ResponseFramer f(&requests, &faults);
  const std::string next = Answer("the next answer");
  Fed fed = Feed(&f, Answer(std::string(5000, 'Q')) + next, GetParam());
  ASSERT_TRUE(fed.bytes.starts_with("HTTP/1.1 503 ")) << fed.bytes;
  EXPECT_TRUE(fed.bytes.ends_with("\r\n\r\n" + next)) << fed.bytes;
  EXPECT_EQ(fed.bytes.find('Q'), std::string::npos);
}

TEST_P(Split, StallHoldsTheAnswer) {
  RequestTracker requests;
  requests.Feed("GET / HTTP/1.1\r\n\r\n", 18);
  Script faults({{FaultKind::kStall, 1500}});
  ResponseFramer f(&requests, &faults);
  const std::string a = Answer("abc");
  Fed fed = Feed(&f, a, GetParam());
  EXPECT_EQ(fed.bytes, a);
  EXPECT_EQ(fed.stall_ms, 1500);
}

INSTANTIATE_TEST_SUITE_P(LinkFraming, Split, ::testing::Values(1, 3, 17, 4096));

TEST(LinkFraming, AHeadAnswerHasNoBodyAndGetsNoFault) {
  RequestTracker requests;
  requests.Feed("HEAD /x HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\n\r\n", 38);
  Script faults({{FaultKind::kFlip}});
  ResponseFramer f(&requests, &faults);
  // The HEAD's answer claims a length it does not send; the GET's answer follows at once.
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n";
  const std::string get = Answer("0123456789");
  Fed fed = Feed(&f, head + get, 5);
  std::string want = head + get;
  want[want.size() - 5] ^= 0x5a;  // the GET's byte 5 of 10: the fault went to the GET
  EXPECT_EQ(fed.bytes, want);
  EXPECT_EQ(faults.bodies, std::vector<uint64_t>{10});
}

TEST(LinkFraming, AnAnswerItCannotFrameTurnsTheRestPlain) {
  RequestTracker requests;
  requests.Feed("GET / HTTP/1.1\r\n\r\n", 18);
  Script faults({{FaultKind::kReset}});
  ResponseFramer f(&requests, &faults);
  const std::string chunked =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
  Fed fed = Feed(&f, chunked + Answer("later"), 7);
  EXPECT_EQ(fed.bytes, chunked + Answer("later"));
  EXPECT_EQ(fed.end, ResponseFramer::End::kNone);
  EXPECT_TRUE(faults.bodies.empty());
}

}  // namespace
}  // namespace rf::link
