// HttpFetcher against a real nginx on loopback: ranges byte for byte, many in flight,
// connections reused, the object's size, and the answers that are not retried.
#include <gtest/gtest.h>

#include <random>

#include "io/remote/http_fetcher.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ByteRange;
using testing::FetchOne;
using testing::FetchRanges;
using testing::MakeFetcher;
using testing::NginxServer;

constexpr uint64_t kObjectBytes = (4 << 20) + 1001;  // not a multiple of any piece size
// A presigned URL's query and a URL's userinfo: neither may show in any message.
constexpr const char* kSecretQuery = "?X-Amz-Credential=AKIDSECRET&X-Amz-Signature=deadbeefSECRET";

class NginxFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::NginxMissing(); !why.empty()) GTEST_SKIP() << why;
    testing::WriteAll(root_.File("object.bin"), testing::PositionalObject(0, kObjectBytes));
    testing::WriteAll(root_.File("empty.bin"), nullptr, 0);
    std::string error;
    server_ = NginxServer::Start({root_.path(), "", "",
                                  "    location /forbidden/ { deny all; }\n"
                                  "    location = /error500 { return 500; }\n"},
                                 &error);
    ASSERT_NE(server_, nullptr) << error;
  }

  testing::TempDir root_;
  std::unique_ptr<NginxServer> server_;
};

TEST_F(NginxFetch, ManyRangesInFlightAreByteIdentical) {
  HttpFetchOptions o = testing::QuickOptions();
  o.max_in_flight = 8;
  auto f = MakeFetcher(o);
  std::mt19937_64 rng(42);
  std::vector<ByteRange> ranges;
  for (int i = 0; i < 96; ++i) {
    uint64_t len = 1 + rng() % (256 << 10);
    ranges.push_back({rng() % (kObjectBytes - len + 1), len});
  }
  ranges.push_back({0, kObjectBytes});      // the whole object
  ranges.push_back({kObjectBytes - 1, 1});  // its last byte
  for (const Status& st : FetchRanges(*f, server_->Url("/object.bin"), ranges))
    EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(f->stats().retries, 0u);
}

TEST_F(NginxFetch, ConnectionsAreKeptAliveAndReused) {
  HttpFetchOptions o = testing::QuickOptions();
  o.max_in_flight = 4;
  auto f = MakeFetcher(o);
  std::vector<ByteRange> ranges;
  for (uint64_t i = 0; i < 64; ++i) ranges.push_back({i * 4096, 4096});
  for (const Status& st : FetchRanges(*f, server_->Url("/object.bin"), ranges))
    EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(f->stats().attempts, 64u);
  EXPECT_LE(f->stats().connections, 4u);
  EXPECT_GE(f->stats().connections, 1u);
  // nginx's view: some connection carried many requests ($connection_requests).
  ASSERT_EQ(server_->Requests("/object.bin", 64), 64u);
  int most = 0;
  for (const std::string& line : server_->AccessLog())
    most = std::max(most, std::stoi(line.substr(line.rfind(' ') + 1)));
  EXPECT_GE(most, 16);
}

TEST_F(NginxFetch, SizeIsTheObjectsSize) {
  auto f = MakeFetcher();
  auto size = f->Size(server_->Url("/object.bin") + kSecretQuery);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kObjectBytes);
  auto empty = f->Size(server_->Url("/empty.bin"));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(*empty, 0u);
}

TEST_F(NginxFetch, SizeOfAMissingObjectIsNotFound) {
  auto f = MakeFetcher();
  auto size = f->Size(server_->Url("/nothing.bin"));
  ASSERT_TRUE(size.status().IsNotFound()) << size.status().ToString();
  EXPECT_EQ(server_->Requests("/nothing.bin"), 1u);
}

TEST_F(NginxFetch, AZeroLengthRequestCompletesWithoutARequest) {
  auto f = MakeFetcher();
  EXPECT_TRUE(FetchOne(*f, server_->Url("/object.bin"), 10, 0).ok());
  EXPECT_EQ(f->stats().attempts, 0u);
}

TEST_F(NginxFetch, NotFoundIsNamedAtOnceWithoutCredentials) {
  auto f = MakeFetcher();
  std::string url = "http://reader:hunter2SECRET@127.0.0.1:" + std::to_string(server_->port()) +
                    "/nothing.bin" + kSecretQuery;
  Status st = FetchOne(*f, url, 100, 50);
  ASSERT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(st.ToString(),
            server_->Url("/nothing.bin") + ": bytes 100-149: HTTP 404 Not Found: no such object");
  EXPECT_EQ(server_->Requests("/nothing.bin"), 1u);
  EXPECT_EQ(f->stats().attempts, 1u);
}

TEST_F(NginxFetch, ForbiddenIsNamedAtOnceAsACredentialsProblem) {
  auto f = MakeFetcher();
  Status st = FetchOne(*f, server_->Url("/forbidden/object.bin") + kSecretQuery, 0, 10);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.ToString().find("HTTP 403 Forbidden: access denied"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(st.ToString().find("SECRET"), std::string::npos) << st.ToString();
  EXPECT_EQ(server_->Requests("/forbidden/"), 1u);
}

TEST_F(NginxFetch, ARangePastTheEndIsRefusedAtOnce) {
  auto f = MakeFetcher();
  Status st = FetchOne(*f, server_->Url("/object.bin"), kObjectBytes - 10, 100);
  ASSERT_FALSE(st.ok());
  // Built in steps: GCC 12's -Warray-bounds misfires on "literal" + std::string&&.
  std::string expected = "past the end of the object, which is ";
  expected += std::to_string(kObjectBytes);
  expected += " bytes";
  EXPECT_NE(st.ToString().find(expected), std::string::npos) << st.ToString();
  EXPECT_EQ(f->stats().attempts, 1u);
}

TEST_F(NginxFetch, ServerErrorsAreRetriedUntilTheDeadlineThenNamed) {
  HttpFetchOptions o = testing::QuickOptions();
  o.deadline = std::chrono::milliseconds(1'000);
  o.first_backoff = std::chrono::milliseconds(20);
  o.max_backoff = std::chrono::milliseconds(100);
  auto f = MakeFetcher(o);
  Status st = FetchOne(*f, server_->Url("/error500") + kSecretQuery, 0, 100);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  std::string msg = st.ToString();
  EXPECT_EQ(msg.rfind(server_->Url("/error500") + ": bytes 0-99: gave up after ", 0), 0u) << msg;
  EXPECT_NE(msg.find("(the deadline): HTTP 500"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("SECRET"), std::string::npos) << msg;
  EXPECT_GE(f->stats().attempts, 3u);
  EXPECT_EQ(server_->Requests("/error500", f->stats().attempts), f->stats().attempts);
}

TEST(HttpFetcher, RefusesAnUnknownUrlAndTooManyRequests) {
  HttpFetchOptions o = testing::QuickOptions();
  o.max_in_flight = 2;
  auto f = MakeFetcher(o);
  uint8_t buf[8];
  EXPECT_TRUE(f->Prepare({0, buf, 8, 0, 0}).IsInvalidArgument());
  auto url = f->AddUrl("http://127.0.0.1:1/x");
  ASSERT_TRUE(url.ok());
  EXPECT_TRUE(f->Prepare({*url, nullptr, 8, 0, 0}).IsInvalidArgument());
  EXPECT_TRUE(f->Prepare({*url, buf, 8, 0, 0}).ok());
  EXPECT_TRUE(f->Prepare({*url, buf, 8, 0, 1}).ok());
  EXPECT_TRUE(f->Prepare({*url, buf, 8, 0, 2}).IsInvalidArgument());
  std::vector<HttpCompletion> out;
  EXPECT_TRUE(f->Wait(out, 1).IsInvalidArgument());  // nothing submitted yet
  EXPECT_TRUE(f->AddUrl("ftp://127.0.0.1/x").status().IsInvalidArgument());
}

}  // namespace
}  // namespace rf
