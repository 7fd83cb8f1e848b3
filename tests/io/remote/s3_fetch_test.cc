// s3:// objects against a real S3-compatible store on loopback (tests/testing/s3_test_server.h:
// s3rver behind a proxy that checks every Signature V4 with botocore's signer): signed ranges,
// refused credentials, the session token, listings across pages, S3's errors by name, and no
// credential in any message.
#include <gtest/gtest.h>

#include <cstdlib>

#include "io/remote/http_fetcher.h"
#include "io/remote/s3_config.h"
#include "io/remote/s3_listing.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/s3_test_server.h"

namespace rf {
namespace {

using testing::ByteRange;

constexpr const char* kRegion = "eu-test-1";
constexpr const char* kBucket = "ringfeed-test";
constexpr const char* kKeyId = "AKIDRINGFEEDTEST01";
constexpr const char* kSecret = "SecretRingfeed/Test+Key0123456789abcdefXYZ";
constexpr const char* kTokenKeyId = "ASIARINGFEEDTOKEN1";
constexpr const char* kTokenSecret = "TokenSecretRingfeed0123456789abcdefghijk";
constexpr const char* kToken = "SessionTokenRingfeed/abc+def==";
constexpr uint64_t kObjectBytes = (1 << 20) + 1001;
constexpr const char* kOddKey = "data/a key with spaces + ü ✓.bin";
constexpr int kShards = 13;

std::string ShardKey(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "shards/part-%05d.rfd", i);
  return name;
}

class S3Fetch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::S3ServerMissing().empty()) return;
    std::string error;
    server_ = testing::S3TestServer::Start(
                  kRegion, {{kKeyId, kSecret, ""}, {kTokenKeyId, kTokenSecret, kToken}}, &error)
                  .release();
    if (server_ == nullptr) {
      setup_error_ = new std::string(error);
      return;
    }
    std::vector<std::pair<std::string, std::vector<uint8_t>>> objects = {
        {"data/object.bin", testing::PositionalObject(0, kObjectBytes)},
        {kOddKey, testing::PositionalObject(0, 5000)},
        {"shards/nested/deeper.rfd", testing::PositionalObject(0, 10)},
        {"shards/ünicode.rfd", testing::PositionalObject(0, 10)},
        {"shards/a b.rfd", testing::PositionalObject(0, 10)}};
    for (int i = kShards - 1; i >= 0; --i)
      objects.push_back({ShardKey(i), testing::PositionalObject(0, 100)});
    bool ok = server_->CreateBucket(kBucket, &error);
    for (auto& [key, bytes] : objects) ok = ok && server_->PutObject(kBucket, key, bytes, &error);
    if (!ok) setup_error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (std::string why = testing::S3ServerMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
  }

  static S3Config Config(const char* key_id = kKeyId, const char* secret = kSecret,
                         const char* token = "") {
    S3Environment env = {{"AWS_ENDPOINT_URL_S3", server_->endpoint()},
                         {"AWS_REGION", kRegion},
                         {"AWS_ACCESS_KEY_ID", key_id},
                         {"AWS_SECRET_ACCESS_KEY", secret},
                         {"HOME", "/nonexistent"}};
    if (*token != '\0') env["AWS_SESSION_TOKEN"] = token;
    auto c = ResolveS3Config(env);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : S3Config{};
  }
  static RemoteObject Object(const std::string& key, const S3Config& c) {
    auto o = ResolveS3Object("s3://" + std::string(kBucket) + "/" + key, c);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? *o : RemoteObject{};
  }
  // Fetches [offset, offset + len) of `key`: its Status; the bytes checked where Ok.
  static Status FetchRange(const std::string& key, const S3Config& c, uint64_t offset, uint64_t len,
                           HttpFetchStats* stats = nullptr) {
    auto f = testing::MakeFetcher();
    auto index = f->AddObject(Object(key, c));
    if (!index.ok()) return index.status();
    std::vector<Status> st = testing::FetchRanges(*f, *index, {{offset, len}});
    if (stats) *stats = f->stats();
    return st.empty() ? Status::Aborted("no fetch") : st[0];
  }
  static S3ListOptions Quick() {
    S3ListOptions o;
    o.fetch = testing::QuickOptions();
    return o;
  }
  // No credential, signature or string to sign in `st`'s text.
  static void ExpectNoCredential(const Status& st) {
    std::string text = st.ToString();
    for (const char* secret :
         {kKeyId, kSecret, kTokenKeyId, kTokenSecret, kToken, "AWS4-HMAC-SHA256", "Signature="})
      EXPECT_EQ(text.find(secret), std::string::npos) << text;
  }

  static testing::S3TestServer* server_;
  static std::string* setup_error_;
};

testing::S3TestServer* S3Fetch::server_ = nullptr;
std::string* S3Fetch::setup_error_ = nullptr;

TEST_F(S3Fetch, SignedRangesAreByteIdentical) {
  S3Config c = Config();
  auto f = testing::MakeFetcher();
  auto index = f->AddObject(Object("data/object.bin", c));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  std::vector<ByteRange> ranges;
  for (uint64_t i = 0; i < 24; ++i) ranges.push_back({i * 40009, 40009});
  ranges.push_back({0, kObjectBytes});
  ranges.push_back({kObjectBytes - 1, 1});
  for (const Status& st : testing::FetchRanges(*f, *index, ranges))
    EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(f->stats().retries, 0u);
  testing::S3TestServer::Stats s = server_->stats();
  EXPECT_EQ(s.last_verdict, "ok");
  EXPECT_EQ(s.last_signed_headers, "host;x-amz-content-sha256;x-amz-date");
  auto size = f->Size(Object("data/object.bin", c));
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kObjectBytes);
}

TEST_F(S3Fetch, AKeyWithSpacesAndUnicodeIsEncodedOnceAndSigned) {
  Status st = FetchRange(kOddKey, Config(), 100, 4000);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(server_->stats().last_path,
            "/ringfeed-test/data/a%20key%20with%20spaces%20%2B%20%C3%BC%20%E2%9C%93.bin");
}

TEST_F(S3Fetch, AWrongSecretIsRefusedOnceNamingTheSignature) {
  uint64_t before = server_->stats().requests;
  HttpFetchStats fs;
  Status st = FetchRange("data/object.bin", Config(kKeyId, "not-the-secret"), 0, 1000, &fs);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  std::string expected = "s3://ringfeed-test/data/object.bin: bytes 0-999: HTTP 403 ";
  expected += "SignatureDoesNotMatch: the store refused the request's signature: the ";
  expected += "credentials' secret access key (or the region) is wrong; not retried";
  EXPECT_EQ(st.ToString(), expected);
  EXPECT_EQ(fs.retries, 0u);
  EXPECT_EQ(server_->stats().requests, before + 1);
  EXPECT_EQ(server_->stats().last_verdict, "SignatureDoesNotMatch");
  ExpectNoCredential(st);
}

TEST_F(S3Fetch, AWrongKeyIdIsRefusedNamingTheCredentials) {
  uint64_t before = server_->stats().requests;
  Status st = FetchRange("data/object.bin", Config("AKIDUNKNOWN", kSecret), 0, 1000);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find("HTTP 403 InvalidAccessKeyId: the store refused the credentials"),
            std::string::npos)
      << st.ToString();
  EXPECT_EQ(server_->stats().requests, before + 1);
  ExpectNoCredential(st);
  EXPECT_EQ(st.ToString().find("AKIDUNKNOWN"), std::string::npos);
}

TEST_F(S3Fetch, TheSessionTokenIsSentAndSigned) {
  Status st = FetchRange("data/object.bin", Config(kTokenKeyId, kTokenSecret, kToken), 7, 70000);
  EXPECT_TRUE(st.ok()) << st.ToString();
  testing::S3TestServer::Stats s = server_->stats();
  EXPECT_TRUE(s.last_token);
  EXPECT_EQ(s.last_signed_headers, "host;x-amz-content-sha256;x-amz-date;x-amz-security-token");
  // Without it, the same key pair is refused.
  st = FetchRange("data/object.bin", Config(kTokenKeyId, kTokenSecret), 0, 10);
  ASSERT_TRUE(st.IsIOError());
  EXPECT_NE(st.message().find("InvalidToken: the store refused the credentials' session token"),
            std::string::npos)
      << st.ToString();
  ExpectNoCredential(st);
}

TEST_F(S3Fetch, NoSuchKeyAndNoSuchBucketAreNamed) {
  S3Config c = Config();
  Status st = FetchRange("data/missing.bin", c, 0, 10);
  ASSERT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(st.ToString(),
            "s3://ringfeed-test/data/missing.bin: bytes 0-9: HTTP 404 NoSuchKey: no such object");
  auto f = testing::MakeFetcher();
  auto missing = ResolveS3Object("s3://no-such-bucket/x", c);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  auto size = f->Size(*missing);
  ASSERT_TRUE(size.status().IsNotFound()) << size.status().ToString();
  EXPECT_EQ(size.status().ToString(),
            "s3://no-such-bucket/x: size: HTTP 404 NoSuchBucket: no such bucket");
  auto list = ListS3Prefix("s3://no-such-bucket/data/", c, Quick());
  ASSERT_TRUE(list.status().IsNotFound()) << list.status().ToString();
  EXPECT_EQ(list.status().ToString(),
            "s3://no-such-bucket/data/: GET: HTTP 404 NoSuchBucket: no such bucket");
}

TEST_F(S3Fetch, AListingFollowsEveryPageAndListsOneLevelSorted) {
  S3ListOptions o = Quick();
  o.max_keys = 3;  // 15 objects and a common prefix: six pages
  uint64_t before = server_->stats().requests;
  auto list = ListS3Prefix("s3://ringfeed-test/shards/", Config(), o);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::string> expected = {"s3://ringfeed-test/shards/a b.rfd"};
  for (int i = 0; i < kShards; ++i) expected.push_back("s3://ringfeed-test/" + ShardKey(i));
  expected.push_back("s3://ringfeed-test/shards/ünicode.rfd");
  EXPECT_EQ(*list, expected);
  EXPECT_GE(server_->stats().requests - before, 5u);
  // One page, the default.
  before = server_->stats().requests;
  auto again = ListS3Prefix("s3://ringfeed-test/shards/", Config(), Quick());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, expected);
  EXPECT_EQ(server_->stats().requests - before, 1u);
  // A prefix that is no folder: the names that start with it.
  auto part = ListS3Prefix("s3://ringfeed-test/shards/part-0000", Config(), o);
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  EXPECT_EQ(part->size(), 10u);
}

TEST_F(S3Fetch, AListingWithAWrongSecretIsRefusedWithoutACredential) {
  auto list = ListS3Prefix("s3://ringfeed-test/shards/", Config(kKeyId, "wrong"), Quick());
  ASSERT_TRUE(list.status().IsIOError());
  EXPECT_NE(list.status().message().find("HTTP 403 SignatureDoesNotMatch"), std::string::npos)
      << list.status().ToString();
  ExpectNoCredential(list.status());
}

TEST_F(S3Fetch, TheProcessEnvironmentResolvesAndLists) {
  // What a user sets: the variables the AWS tools read.
  ::setenv("AWS_ENDPOINT_URL_S3", server_->endpoint().c_str(), 1);
  ::setenv("AWS_REGION", kRegion, 1);
  ::setenv("AWS_ACCESS_KEY_ID", kKeyId, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecret, 1);
  auto o = ResolveRemoteObject("s3://ringfeed-test/data/object.bin");
  auto list = ListRemotePrefix("s3://ringfeed-test/data/");
  for (const char* v :
       {"AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"})
    ::unsetenv(v);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->shown, "s3://ringfeed-test/data/object.bin");
  auto f = testing::MakeFetcher();
  auto index = f->AddObject(*o);
  ASSERT_TRUE(index.ok());
  for (const Status& st : testing::FetchRanges(*f, *index, {{12345, 54321}}))
    EXPECT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::string> expected = {std::string("s3://ringfeed-test/") + kOddKey,
                                       "s3://ringfeed-test/data/object.bin"};
  EXPECT_EQ(*list, expected);
}

}  // namespace
}  // namespace rf
