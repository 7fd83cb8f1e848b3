// RedactUrl and CheckFetchableUrl: credentials never shown, only http(s) fetched.
#include "io/remote/url.h"

#include <gtest/gtest.h>

namespace rf {
namespace {

TEST(RedactUrl, DropsUserinfoAndTheQueryOfAPresignedUrl) {
  EXPECT_EQ(RedactUrl("https://AKIDEXAMPLE:wJalrXUtnFEMI@bucket.s3.example.com:8443/data/"
                      "train.rfd?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE"
                      "&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630"),
            "https://bucket.s3.example.com:8443/data/train.rfd");
}

TEST(RedactUrl, KeepsAUrlWithoutCredentials) {
  EXPECT_EQ(RedactUrl("http://127.0.0.1:8080/a/b.rfd"), "http://127.0.0.1:8080/a/b.rfd");
  EXPECT_EQ(RedactUrl("https://host"), "https://host");
}

TEST(RedactUrl, DropsAPasswordThatHoldsAnAt) {
  EXPECT_EQ(RedactUrl("http://user:p@ss@host/x"), "http://host/x");
  EXPECT_EQ(RedactUrl("https://user:secret@host"), "https://host");
}

TEST(RedactUrl, AnAtInTheQueryIsNotUserinfo) {
  EXPECT_EQ(RedactUrl("http://host/x?email=a@b.c&token=secret"), "http://host/x");
}

TEST(RedactUrl, DropsTheFragment) {
  EXPECT_EQ(RedactUrl("http://host/x#token=secret"), "http://host/x");
}

TEST(RedactUrl, DropsTheSameFromWhatIsNoUrl) {
  EXPECT_EQ(RedactUrl("not a url?secret=1"), "not a url");
  EXPECT_EQ(RedactUrl("user:secret@host/path"), "host/path");
  EXPECT_EQ(RedactUrl(""), "");
}

TEST(CheckFetchableUrl, AcceptsHttpAndHttpsInAnyCase) {
  EXPECT_TRUE(CheckFetchableUrl("http://127.0.0.1:80/x").ok());
  EXPECT_TRUE(CheckFetchableUrl("HTTPS://example.com/x?a=b").ok());
}

TEST(CheckFetchableUrl, RefusesOtherSchemesNamingTheRedactedUrl) {
  Status st = CheckFetchableUrl("ftp://user:secret@host/x?sig=abc");
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.ToString(), "ftp://host/x: only http:// and https:// URLs are fetched");
  EXPECT_TRUE(CheckFetchableUrl("file:///etc/passwd").IsInvalidArgument());
  EXPECT_TRUE(CheckFetchableUrl("s3://bucket/key").IsInvalidArgument());
}

TEST(CheckFetchableUrl, RefusesWhatIsNoUrl) {
  Status st = CheckFetchableUrl("/local/path.rfd");
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("not a URL"), std::string::npos) << st.ToString();
  EXPECT_TRUE(CheckFetchableUrl("").IsInvalidArgument());
}

TEST(CheckFetchableUrl, ChecksTheAuthorityWithoutLibcurl) {
  EXPECT_TRUE(CheckFetchableUrl("http://[::1]:8080/x").ok());
  EXPECT_TRUE(CheckFetchableUrl("https://user:p@ss@host:443/x").ok());
  EXPECT_NE(CheckFetchableUrl("http:///x").message().find("no host"), std::string::npos);
  EXPECT_NE(CheckFetchableUrl("http://host:99999/x").message().find("a port over 65535"),
            std::string::npos);
  EXPECT_NE(CheckFetchableUrl("http://host:8a/x").message().find("a malformed port"),
            std::string::npos);
  EXPECT_NE(CheckFetchableUrl("http://[::1/x").message().find("unclosed IPv6"), std::string::npos);
  Status st = CheckFetchableUrl("http://host/a key");
  ASSERT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("percent-encode"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace rf
