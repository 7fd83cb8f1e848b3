// s3:// datasets (io/dataset_remote.cc) against a real S3-compatible store on loopback
// (tests/testing/s3_test_server.h: s3rver behind a proxy that checks every Signature V4 with
// botocore): a shard set named by its base name, a directory of parts named by its prefix, every
// chunk read by signed range requests as the local files hold it; a wrong secret, an ambiguous
// name and a missing one refused, naming what is wrong and no credential.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/io/remote/remote_dataset_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/s3_test_server.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

constexpr const char* kRegion = "eu-test-1";
constexpr const char* kBucket = "rf-datasets";
constexpr const char* kKeyId = "AKIDRINGFEEDDATA01";
constexpr const char* kSecret = "DatasetSecret/0123456789abcdefghijklmnopq";

testing::S3TestServer* server = nullptr;
testing::TempDir* local = nullptr;
std::string* setup_error = nullptr;

// Every file under `dir` (a local directory) put under `prefix` ("sets/").
bool PutTree(const std::string& dir, const std::string& prefix, std::string* error) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    if (!server->PutObject(kBucket, prefix + e.path().filename().string(),
                           testing::ReadAll(e.path().string()), error))
      return false;
  }
  return true;
}

void SetCredentials(const char* secret) {
  ::setenv("AWS_ENDPOINT_URL_S3", server->endpoint().c_str(), 1);
  ::setenv("AWS_REGION", kRegion, 1);
  ::setenv("AWS_ACCESS_KEY_ID", kKeyId, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
  ::setenv("HOME", "/nonexistent", 1);
  for (const char* v : {"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                        "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"})
    ::unsetenv(v);
}

class S3Dataset : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::S3ServerMissing().empty()) return;
    std::string error;
    server = testing::S3TestServer::Start(kRegion, {{kKeyId, kSecret, ""}}, &error).release();
    if (server == nullptr) {
      setup_error = new std::string(error);
      return;
    }
    local = new testing::TempDir;
    std::filesystem::create_directories(local->File("sets"));
    std::filesystem::create_directories(local->File("parts"));
    testing::PositionalDatasetOptions o;
    o.shards = 3;
    o.chunk_bytes = 8192;
    o.codec = CodecSpec{Codec::kZstd, 3};
    testing::WritePositionalDataset(local->File("sets/d.rfd"), 2000, o);
    testing::PositionalDatasetOptions p;
    p.chunk_bytes = 8192;
    testing::WritePositionalDataset(local->File("parts/a.rfd"), 700, p);
    p.first_sample = 700;
    p.shards = 2;
    testing::WritePositionalDataset(local->File("parts/b.rfd"), 900, p);
    bool ok =
        server->CreateBucket(kBucket, &error) && PutTree(local->File("sets"), "sets/", &error) &&
        PutTree(local->File("parts"), "parts/", &error) &&
        server->PutObject(kBucket, "amb/x.rfd", testing::ReadAll(local->File("parts/a.rfd")),
                          &error) &&
        server->PutObject(kBucket, "amb/x-00000-of-00002.rfd",
                          testing::ReadAll(local->File("parts/b-00000-of-00002.rfd")), &error);
    if (!ok) setup_error = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete server;
    server = nullptr;
    delete local;
    local = nullptr;
  }
  void SetUp() override {
    if (std::string why = testing::S3ServerMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(setup_error, nullptr) << *setup_error;
    SetCredentials(kSecret);
  }

  // "s3://BUCKET/key", built in steps: GCC 12's -Warray-bounds misfires on chains of
  // std::string&& + literal (under the sanitizers' flags).
  static std::string S3Url(const std::string& key) {
    std::string url = "s3://";
    url += kBucket;
    url += "/";
    url += key;
    return url;
  }

  static Result<Dataset> OpenS3(const std::string& key) {
    return Dataset::Open(S3Url(key), testing::QuickOptions());
  }
};

TEST_F(S3Dataset, ABaseNameIsListedToItsShardsAndReadBySignedRanges) {
  auto want = Dataset::Open(local->File("sets/d.rfd"));
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = OpenS3("sets/d.rfd");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->header().dataset_id, want->header().dataset_id);
  ASSERT_EQ(got->shard_count(), 3u);
  EXPECT_EQ(got->shard_path(1), S3Url("sets/d-00001-of-00003.rfd"));
  EXPECT_EQ(got->path(), S3Url("sets/d.rfd"));
  testing::ReadEveryChunk(*got, *want);
  EXPECT_EQ(server->stats().refused, 0u);
  EXPECT_EQ(server->stats().last_verdict, "ok");
}

TEST_F(S3Dataset, APrefixIsADirectoryOfParts) {
  auto want = Dataset::Open(local->File("parts"));
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = OpenS3("parts/");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->is_directory());
  EXPECT_EQ(got->part_count(), 2u);
  EXPECT_EQ(got->sample_count(), 1600u);
  EXPECT_EQ(got->header().dataset_id, want->header().dataset_id);
  ASSERT_EQ(got->shard_count(), 3u);
  testing::ReadEveryChunk(*got, *want);
}

TEST_F(S3Dataset, AWrongSecretIsRefusedOnceNamingTheSignatureAndNoCredential) {
  SetCredentials("NotTheSecret/0123456789abcdefghijklmnopq");
  const uint64_t before = server->stats().refused;
  auto got = OpenS3("sets/d-00000-of-00003.rfd");
  ASSERT_FALSE(got.ok());
  const std::string msg = got.status().ToString();
  EXPECT_NE(msg.find("SignatureDoesNotMatch"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("NotTheSecret"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(kKeyId), std::string::npos) << msg;
  // Not retried: the set's 3 shards are opened at once, and each one's two first requests (its
  // head and its tail, at once) are refused once.
  EXPECT_EQ(server->stats().refused, before + 6);
}

TEST_F(S3Dataset, ANameOfTwoDatasetsAndAMissingOneAreRefused) {
  auto both = OpenS3("amb/x.rfd");
  ASSERT_TRUE(both.status().IsInvalidArgument()) << both.status().ToString();
  EXPECT_NE(both.status().ToString().find("2 datasets have this name"), std::string::npos);
  auto none = OpenS3("sets/nothing.rfd");
  ASSERT_TRUE(none.status().IsNotFound()) << none.status().ToString();
  EXPECT_NE(none.status().ToString().find("s3://rf-datasets/sets/nothing.rfd"), std::string::npos);
  auto empty = OpenS3("nothing-here/");
  ASSERT_TRUE(empty.status().IsNotFound()) << empty.status().ToString();
}

}  // namespace
}  // namespace rf
