// S3 configuration without a server: the environment, the profiles of ~/.aws/credentials and
// ~/.aws/config (temporary files), the addressing, the key encoding, the XML answers.
#include "io/remote/s3_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "io/remote/aws_config_file.h"
#include "io/remote/s3_listing.h"
#include "io/remote/s3_xml.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET";
constexpr const char* kKeyId = "AKIDEXAMPLEKEYID";

void WriteText(const std::string& path, const std::string& text) {
  testing::WriteAll(path, text.data(), text.size());
}

class S3ConfigTest : public ::testing::Test {
 protected:
  // An environment whose HOME is the temporary directory: ~/.aws/* are files the test writes.
  S3Environment Env(S3Environment extra = {}) {
    extra.emplace("HOME", home_.path());
    return extra;
  }
  void WriteAws(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(home_.File(".aws"));
    WriteText(home_.File(".aws/" + name), text);
  }
  // A Status must never carry a credential.
  static void ExpectNoCredential(const Status& st) {
    for (const char* secret : {kSecret, kKeyId, "SESSIONTOKEN"})
      EXPECT_EQ(st.ToString().find(secret), std::string::npos) << st.ToString();
  }

  testing::TempDir home_;
};

TEST_F(S3ConfigTest, EnvironmentKeysWinOverTheProfile) {
  WriteAws("credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = F\n");
  auto c = ResolveS3Config(Env({{"AWS_ACCESS_KEY_ID", kKeyId},
                                {"AWS_SECRET_ACCESS_KEY", kSecret},
                                {"AWS_SESSION_TOKEN", "SESSIONTOKEN"},
                                {"AWS_PROFILE", "default"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, kKeyId);
  EXPECT_EQ(c->secret_access_key, kSecret);
  EXPECT_EQ(c->session_token, "SESSIONTOKEN");
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_FALSE(c->custom_endpoint);
}

TEST_F(S3ConfigTest, AProfileComesFromTheCredentialsFile) {
  WriteAws("credentials",
           "# a comment\n[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = D\n"
           "\n[train]\nAWS_ACCESS_KEY_ID = " +
               std::string(kKeyId) + "\naws_secret_access_key=" + kSecret +
               "\naws_session_token = SESSIONTOKEN\n");
  WriteAws("config", "[profile train]\nregion = eu-west-3\n");
  auto c = ResolveS3Config(Env({{"AWS_PROFILE", "train"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, kKeyId);
  EXPECT_EQ(c->secret_access_key, kSecret);
  EXPECT_EQ(c->session_token, "SESSIONTOKEN");
  EXPECT_EQ(c->region, "eu-west-3");
  EXPECT_EQ(c->endpoint, "https://s3.eu-west-3.amazonaws.com");
  EXPECT_NE(c->credentials_from.find(".aws/credentials [train]"), std::string::npos);
}

TEST_F(S3ConfigTest, KeysInTheConfigFileAndFilesNamedByTheEnvironment) {
  WriteText(home_.File("my-config"), std::string("[profile x]\naws_access_key_id = ") + kKeyId +
                                         "\naws_secret_access_key = " + kSecret +
                                         "\nregion = ap-south-1\n");
  auto c = ResolveS3Config(Env({{"AWS_CONFIG_FILE", home_.File("my-config")},
                                {"AWS_SHARED_CREDENTIALS_FILE", home_.File("none")},
                                {"AWS_DEFAULT_PROFILE", "x"},
                                {"AWS_DEFAULT_REGION", "sa-east-1"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, kKeyId);
  EXPECT_EQ(c->region, "sa-east-1");  // the environment's region wins over the profile's
}

TEST_F(S3ConfigTest, TheEndpointFromTheEnvironmentThenTheProfile) {
  WriteAws("credentials", "[default]\naws_access_key_id = K\naws_secret_access_key = S\n");
  WriteAws("config",
           "[default]\nendpoint_url = http://general:1\ns3 =\n  endpoint_url = http://nested:2/\n"
           "  addressing_style = virtual\n[profile svc]\nservices = local\n"
           "[services local]\ns3 =\n  endpoint_url = https://services:3\n");
  auto c = ResolveS3Config(Env());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->endpoint, "http://nested:2");
  EXPECT_TRUE(c->custom_endpoint);
  EXPECT_EQ(c->addressing, S3Addressing::kVirtualHosted);

  c = ResolveS3Config(Env({{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9000");
  c = ResolveS3Config(
      Env({{"AWS_ENDPOINT_URL", "http://a:1"}, {"AWS_ENDPOINT_URL_S3", "http://b:2"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->endpoint, "http://b:2");

  WriteAws("credentials", "[svc]\naws_access_key_id = K\naws_secret_access_key = S\n");
  c = ResolveS3Config(Env({{"AWS_PROFILE", "svc"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->endpoint, "https://services:3");

  c = ResolveS3Config(
      Env({{"AWS_PROFILE", "svc"}, {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->custom_endpoint);
}

TEST_F(S3ConfigTest, HalfAKeyPairIsAnErrorThatShowsNoSecret) {
  auto c = ResolveS3Config(Env({{"AWS_SECRET_ACCESS_KEY", kSecret}}));
  ASSERT_TRUE(c.status().IsInvalidArgument()) << c.status().ToString();
  EXPECT_NE(c.status().message().find("AWS_SECRET_ACCESS_KEY without AWS_ACCESS_KEY_ID"),
            std::string::npos);
  ExpectNoCredential(c.status());

  WriteAws("credentials", std::string("[default]\naws_secret_access_key = ") + kSecret + "\n");
  c = ResolveS3Config(Env());
  ASSERT_TRUE(c.status().IsInvalidArgument()) << c.status().ToString();
  EXPECT_NE(c.status().message().find("[default] has aws_secret_access_key without"),
            std::string::npos);
  ExpectNoCredential(c.status());
}

TEST_F(S3ConfigTest, NoCredentialsNamesWhereItLooked) {
  auto c = ResolveS3Config(Env());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no AWS credentials found"), std::string::npos);
  EXPECT_NE(c.status().message().find(home_.File(".aws/credentials [default]")), std::string::npos)
      << c.status().ToString();
}

TEST_F(S3ConfigTest, AnUnknownProfileAndAnUnsupportedProviderAreNamed) {
  auto c = ResolveS3Config(Env({{"AWS_PROFILE", "nope"}}));
  ASSERT_TRUE(c.status().IsInvalidArgument());
  EXPECT_NE(c.status().message().find("AWS_PROFILE names the profile nope"), std::string::npos);
  WriteAws("config", "[profile role]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = a\n");
  c = ResolveS3Config(Env({{"AWS_PROFILE", "role"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("through role_arn"), std::string::npos)
      << c.status().ToString();
}

TEST_F(S3ConfigTest, AMalformedLineIsNamedByItsNumberNotItsText) {
  WriteAws("credentials", std::string("[default]\naws_access_key_id = K\n") + kSecret + "\n");
  auto c = ResolveS3Config(Env());
  ASSERT_TRUE(c.status().IsInvalidArgument());
  EXPECT_NE(c.status().message().find(".aws/credentials:3: not a 'key = value' line"),
            std::string::npos)
      << c.status().ToString();
  ExpectNoCredential(c.status());
}

TEST_F(S3ConfigTest, AwsIsVirtualHostedButForBucketsThatAreNoDnsLabel) {
  S3Config aws;
  aws.endpoint = "https://s3.eu-west-1.amazonaws.com";
  aws.region = "eu-west-1";
  EXPECT_EQ(S3BucketUrl(aws, "my-bucket"), "https://my-bucket.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(S3BucketUrl(aws, "my.dotted.bucket"),
            "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket");
  S3Config custom = aws;
  custom.endpoint = "http://127.0.0.1:9000";
  custom.custom_endpoint = true;
  EXPECT_EQ(S3BucketUrl(custom, "my-bucket"), "http://127.0.0.1:9000/my-bucket");
  custom.addressing = S3Addressing::kVirtualHosted;
  EXPECT_EQ(S3BucketUrl(custom, "b"), "http://b.127.0.0.1:9000");
}

TEST_F(S3ConfigTest, AnObjectsKeyIsEncodedOnceAndItsPathShownAsGiven) {
  S3Config c;
  c.endpoint = "http://127.0.0.1:9000";
  c.custom_endpoint = true;
  c.region = "us-east-1";
  c.access_key_id = kKeyId;
  c.secret_access_key = kSecret;
  auto o = ResolveS3Object("s3://bkt/dir/a b+c%20ü~.rfd", c);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->url, "http://127.0.0.1:9000/bkt/dir/a%20b%2Bc%2520%C3%BC~.rfd");
  EXPECT_EQ(o->shown, "s3://bkt/dir/a b+c%20ü~.rfd");
  EXPECT_EQ(o->signing.aws_sigv4, "aws:amz:us-east-1:s3");
  EXPECT_EQ(S3UriEncode("a/b=c&d", false), "a%2Fb%3Dc%26d");
}

TEST_F(S3ConfigTest, MalformedS3PathsAreRefusedWithoutShowingUserinfo) {
  S3Config c;
  EXPECT_NE(ResolveS3Object("s3://bkt", c).status().message().find("no key"), std::string::npos);
  EXPECT_NE(ResolveS3Object("s3:///key", c).status().message().find("no bucket"),
            std::string::npos);
  Status st =
      ResolveS3Object(std::string("s3://") + kKeyId + ":" + kSecret + "@bkt/key", c).status();
  ASSERT_TRUE(st.IsInvalidArgument());
  ExpectNoCredential(st);
}

TEST(S3Listing, TheQueryIsSortedAndEncodedForTheSignature) {
  EXPECT_EQ(ListObjectsV2Query("data/tr ü", 4, "1/ab+c="),
            "continuation-token=1%2Fab%2Bc%3D&delimiter=%2F&list-type=2&max-keys=4&prefix=data%"
            "2Ftr%20%C3%BC");
  EXPECT_EQ(ListObjectsV2Query("", 1000, ""), "delimiter=%2F&list-type=2&max-keys=1000&prefix=");
}

TEST(S3Listing, AnHttpPrefixIsUnsupportedAndALocalOneInvalid) {
  auto r = ListRemotePrefix("https://user:secret@host/data/");
  ASSERT_EQ(r.status().code(), Status::Code::kUnsupported);
  EXPECT_EQ(r.status().ToString().find("secret"), std::string::npos);
  EXPECT_NE(r.status().message().find("https://host/data/: only s3:// prefixes are listed"),
            std::string::npos)
      << r.status().ToString();
  EXPECT_TRUE(ListRemotePrefix("/data/").status().IsInvalidArgument());
}

TEST(S3Xml, AnErrorsCodeAndNothingElse) {
  EXPECT_EQ(S3ErrorCode("<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>m</Message>"
                        "</Error>"),
            "NoSuchKey");
  EXPECT_EQ(S3ErrorCode("<Error><Code>SignatureDoesNotMatch</Code><StringToSign>AWS4"),
            "SignatureDoesNotMatch");  // cut off after the code
  EXPECT_EQ(S3ErrorCode("<html><body>404 Not Found</body></html>"), "");
  EXPECT_EQ(S3ErrorCode(""), "");
}

TEST(S3Xml, AListPageAndItsRefusals) {
  auto p = ParseListObjectsV2(
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><IsTruncated>true"
      "</IsTruncated><Contents><Key>d/a &amp; b</Key></Contents><Contents><Key>d/ü</Key>"
      "</Contents><CommonPrefixes><Prefix>d/sub/</Prefix></CommonPrefixes>"
      "<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>",
      "s3://b/d/");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->keys, (std::vector<std::string>{"d/a & b", "d/ü"}));
  EXPECT_EQ(p->common_prefixes, (std::vector<std::string>{"d/sub/"}));
  EXPECT_TRUE(p->truncated);
  EXPECT_EQ(p->next_token, "tok");
  EXPECT_TRUE(ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated>"
                                 "</ListBucketResult>",
                                 "s3://b/")
                  .status()
                  .IsCorruption());
  auto doctype = ParseListObjectsV2(
      "<!DOCTYPE x [<!ENTITY e \"boom\">]><ListBucketResult></ListBucketResult>", "s3://b/");
  ASSERT_TRUE(doctype.status().IsCorruption());
  EXPECT_NE(doctype.status().message().find("DOCTYPE"), std::string::npos);
  EXPECT_TRUE(ParseListObjectsV2("<Other/>", "s3://b/").status().IsCorruption());
}

}  // namespace
}  // namespace rf
