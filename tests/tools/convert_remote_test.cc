// `ringfeed-convert inspect|verify|export` of a dataset served by a real nginx on loopback: the
// same description, verification and exported bytes as of the local files, and a damaged chunk
// on the server named by its URL, chunk and offset.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "io/dataset.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::NginxServer;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;

class ConvertRemote : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::NginxMissing(); !why.empty()) GTEST_SKIP() << why;
    WriterOptions o;
    o.shards = 2;
    local_ = testing::MakeDataset(root_, 600, o);
    std::string error;
    server_ = NginxServer::Start({root_.path(), "", "", ""}, &error);
    ASSERT_NE(server_, nullptr) << error;
  }

  static std::string Convert(const std::string& args, int want_rc = 0) {
    std::string out;
    EXPECT_EQ(RunCommand(ProgramPath("ringfeed-convert") + " " + args, &out), want_rc) << out;
    return out;
  }

  // What inspect prints after its list of files (whose names differ: paths against URLs).
  static std::string AfterFiles(const std::string& out) {
    const size_t at = out.find("\nformat:");
    return at == std::string::npos ? out : out.substr(at);
  }

  TempDir root_, out_;
  std::string local_;
  std::unique_ptr<NginxServer> server_;
};

TEST_F(ConvertRemote, InspectAndVerifyAUrlAsTheLocalFiles) {
  const std::string url = server_->Url("/s-00000-of-00002.rfd");
  const std::string remote = Convert("inspect " + url + " --verify");
  const std::string local = Convert("inspect " + root_.File("s-00000-of-00002.rfd") + " --verify");
  EXPECT_NE(remote.find(server_->Url("/s-00001-of-00002.rfd")), std::string::npos) << remote;
  EXPECT_EQ(AfterFiles(remote), AfterFiles(local));
  EXPECT_NE(remote.find("OK: "), std::string::npos) << remote;
  EXPECT_EQ(Convert("verify " + url), Convert("verify " + local_));
}

TEST_F(ConvertRemote, ExportOfAUrlWritesTheLocalExportsBytes) {
  Convert("export " + server_->Url("/s-00000-of-00002.rfd") + " --format npy -q -o " +
          out_.File("remote"));
  Convert("export " + local_ + " --format npy -q -o " + out_.File("local"));
  for (const char* part : {"-images.npy", "-labels.npy"}) {
    const std::vector<uint8_t> r = testing::ReadAll(out_.File(std::string("remote") + part));
    ASSERT_FALSE(r.empty()) << part;
    EXPECT_EQ(r, testing::ReadAll(out_.File(std::string("local") + part))) << part;
  }
}

// A byte changed in a chunk of the served copy (the local file untouched): verify exits 1 naming
// the URL, the chunk and its offset.
TEST_F(ConvertRemote, ADamagedChunkOnTheServerIsNamedByUrlChunkAndOffset) {
  auto d = Dataset::Open(local_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  TempDir served;
  for (const char* name : {"s-00000-of-00002.rfd", "s-00001-of-00002.rfd"})
    std::filesystem::copy_file(root_.File(name), served.File(name));
  std::vector<uint8_t> bytes = testing::ReadAll(served.File("s-00001-of-00002.rfd"));
  uint64_t shard1_first = 0;  // a chunk of shard 1
  while (shard1_first < d->chunk_count() && d->chunk(shard1_first).shard != 1) ++shard1_first;
  ASSERT_LT(shard1_first, d->chunk_count());
  const uint64_t at = d->chunk(shard1_first).entry.offset + 10;
  ASSERT_LT(at, bytes.size());
  bytes[at] ^= 0xff;
  testing::WriteAll(served.File("s-00001-of-00002.rfd"), bytes);
  std::string error;
  auto damaged = NginxServer::Start({served.path(), "", "", ""}, &error);
  ASSERT_NE(damaged, nullptr) << error;
  const std::string out = Convert("verify " + damaged->Url("/s-00000-of-00002.rfd"), 1);
  EXPECT_NE(out.find(damaged->Url("/s-00001-of-00002.rfd")), std::string::npos) << out;
  EXPECT_NE(out.find("chunk " + std::to_string(shard1_first)), std::string::npos) << out;
  EXPECT_NE(out.find("checksum mismatch"), std::string::npos) << out;
  EXPECT_NE(out.find(" at byte " + std::to_string(d->chunk(shard1_first).entry.offset)),
            std::string::npos)
      << out;
}

// Through the node-local cache (--cache-dir): the first verify fetches every chunk and keeps it,
// a second verify and an export read the copies (only the opens reach the server), and the
// export's bytes are the local export's.
TEST_F(ConvertRemote, VerifyAndExportReadThroughTheNodeLocalCache) {
  const std::string url = server_->Url("/s-00000-of-00002.rfd");
  const std::string cache = " --cache-dir " + out_.File("cache") + " --cache-size 64MiB";
  const auto requests = [&] { return server_->Requests("/s-", SIZE_MAX); };
  const size_t at_start = requests();
  const std::string want = Convert("verify " + local_);
  EXPECT_EQ(Convert("verify " + url + cache), want);
  const size_t first = requests() - at_start;
  size_t cached = 0;
  for (const auto& dir : std::filesystem::directory_iterator(out_.File("cache"))) {
    for (const auto& f : std::filesystem::directory_iterator(dir.path()))
      cached +=
          f.path().filename().string().rfind("chunk-", 0) == 0 && f.path().extension() != ".claim";
  }
  auto d = Dataset::Open(local_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(cached, d->chunk_count());
  const size_t before = requests();
  EXPECT_EQ(Convert("verify " + url + cache), want);
  const size_t opens = requests() - before;
  EXPECT_LT(opens + d->chunk_count(), first + 1) << "the second verify fetched chunks again";
  const size_t before_export = requests();
  Convert("export " + url + cache + " --format npy -q -o " + out_.File("remote"));
  EXPECT_EQ(requests() - before_export, opens);  // its opening only
  Convert("export " + local_ + " --format npy -q -o " + out_.File("local"));
  for (const char* part : {"-images.npy", "-labels.npy"}) {
    const std::vector<uint8_t> r = testing::ReadAll(out_.File(std::string("remote") + part));
    ASSERT_FALSE(r.empty()) << part;
    EXPECT_EQ(r, testing::ReadAll(out_.File(std::string("local") + part))) << part;
  }
  EXPECT_NE(Convert("verify " + url + " --cache-dir " + out_.File("cache"), 2)
                .find("--cache-dir needs --cache-size"),
            std::string::npos);
}

TEST_F(ConvertRemote, AZeroDeadlineIsAUsageError) {
  const std::string out =
      Convert("verify " + server_->Url("/s-00000-of-00002.rfd") + " --remote-deadline 0", 2);
  EXPECT_NE(out.find("--remote-deadline"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
