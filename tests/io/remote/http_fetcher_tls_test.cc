// HttpFetcher over HTTPS against nginx with a certificate the test makes: verified with it as
// the CA bundle, refused with another CA, with the system's bundle and with a missing file.
#include <gtest/gtest.h>

#include "io/remote/http_fetcher.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::FetchOne;
using testing::MakeFetcher;
using testing::NginxServer;

constexpr uint64_t kObjectBytes = 1 << 20;

class TlsFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::NginxMissing(true); !why.empty()) GTEST_SKIP() << why;
    std::string error;
    ASSERT_TRUE(testing::MakeTestCertificate(certs_.path(), "server", &error)) << error;
    ASSERT_TRUE(testing::MakeTestCertificate(certs_.path(), "other", &error)) << error;
    testing::WriteAll(root_.File("object.bin"), testing::PositionalObject(0, kObjectBytes));
    server_ = NginxServer::Start(
        {root_.path(), certs_.File("server.pem"), certs_.File("server.key"), ""}, &error);
    ASSERT_NE(server_, nullptr) << error;
  }

  HttpFetchOptions WithCa(const std::string& ca) {
    HttpFetchOptions o = testing::QuickOptions();
    o.ca_bundle = ca;
    return o;
  }

  testing::TempDir certs_, root_;
  std::unique_ptr<NginxServer> server_;
};

TEST_F(TlsFetch, RangesAreByteIdenticalWithTheServersCertificateAsCa) {
  auto f = MakeFetcher(WithCa(certs_.File("server.pem")));
  std::vector<testing::ByteRange> ranges;
  for (uint64_t i = 0; i < 32; ++i) ranges.push_back({i * 32749, 32749});
  for (const Status& st : testing::FetchRanges(*f, server_->Url("/object.bin"), ranges))
    EXPECT_TRUE(st.ok()) << st.ToString();
  auto size = f->Size(server_->Url("/object.bin"));
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kObjectBytes);
}

// A certificate that the CA bundle does not vouch for is refused at once, never retried.
void ExpectRefusedCertificate(HttpFetcher& f, const std::string& url) {
  Status st = FetchOne(f, url, 0, 100);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.ToString().find("certificate"), std::string::npos) << st.ToString();
  EXPECT_EQ(f.stats().attempts, 1u) << st.ToString();
}

TEST_F(TlsFetch, AnotherCaIsRefused) {
  auto f = MakeFetcher(WithCa(certs_.File("other.pem")));
  ExpectRefusedCertificate(*f, server_->Url("/object.bin"));
}

TEST_F(TlsFetch, TheSystemsBundleRefusesASelfSignedCertificate) {
  auto f = MakeFetcher(WithCa(""));
  ExpectRefusedCertificate(*f, server_->Url("/object.bin"));
}

TEST_F(TlsFetch, AMissingCaBundleIsRefused) {
  auto f = MakeFetcher(WithCa(certs_.File("no-such-bundle.pem")));
  Status st = FetchOne(*f, server_->Url("/object.bin"), 0, 100);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_EQ(f->stats().attempts, 1u) << st.ToString();
}

}  // namespace
}  // namespace rf
