// `ringfeed read` and `ringfeed train` of a remote dataset, as a user runs them, against a real
// nginx the test starts on loopback: the same bytes read and the same training as from the local
// file, and the URL's credentials in no output.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "io/dataset.h"
#include "tests/src/remote_testing.h"

namespace rf {
namespace {

using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;

class RemoteCommands : public testing::ServedDataset {
 protected:
  // Every request nginx has logged for the dataset's files (after 2 s: it logs each a moment
  // after answering it).
  size_t Requests() const { return server_->Requests("/s-", SIZE_MAX); }

  TempDir out_;
};

TEST_F(RemoteCommands, ReadReadsTheRanksChunksOverHttpWithoutShowingCredentials) {
  const std::string url = "http://reader:SECRETpw@127.0.0.1:" + std::to_string(server_->port()) +
                          "/s-00001-of-00002.rfd";
  std::string remote, local;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + url +
                           " --order train --world-size 2 --rank 1 --remote-in-flight 3 --json " +
                           out_.File("r.json"),
                       &remote),
            0)
      << remote;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + local_ +
                           " --io buffered --order train --world-size 2 --rank 1 --json " +
                           out_.File("l.json"),
                       &local),
            0)
      << local;
  EXPECT_EQ(remote.find("SECRET"), std::string::npos) << remote;
  EXPECT_NE(remote.find(server_->Url("/s-00001-of-00002.rfd") + ": "), std::string::npos) << remote;
  EXPECT_NE(remote.find("[http"), std::string::npos) << remote;
  const std::string r = remote.substr(0, remote.find(" chunks")),
                    l = local.substr(0, local.find(" chunks"));
  EXPECT_EQ(r.substr(r.rfind(": ")), l.substr(l.rfind(": ")));  // the same bytes and chunks
  const std::vector<uint8_t> json = testing::ReadAll(out_.File("r.json"));
  EXPECT_EQ(std::string(json.begin(), json.end()).find("SECRET"), std::string::npos);
}

// Trained from the URL, without and with a cache, as from the local file. The test set is the
// same shard set, so with the cache every chunk is fetched once in the whole run (the training's
// first epoch; the test passes and the second epoch read the copies), and a second run with the
// same cache fetches none: only the headers and indices, its every other request.
TEST_F(RemoteCommands, TrainOnAUrlTrainsAsOnTheLocalFileWithAndWithoutACache) {
  const std::string url = server_->Url("/s-00000-of-00002.rfd");
  const std::string args = "--epochs 2 --test " + server_->Url("/s-00001-of-00002.rfd");
  const std::string cache = " --cache-dir " + out_.File("cache") + " --cache-size 1GiB";
  std::string remote, cold, warm, local;
  ASSERT_EQ(RunCommand(testing::Train(url, args), &remote), 0) << remote;
  size_t requests = Requests();
  ASSERT_EQ(RunCommand(testing::Train(url, args + cache), &cold), 0) << cold;
  const size_t cold_requests = Requests() - requests;
  requests += cold_requests;
  ASSERT_EQ(RunCommand(testing::Train(url, args + cache), &warm), 0) << warm;
  const size_t warm_requests = Requests() - requests;
  ASSERT_EQ(RunCommand(testing::Train(local_, "--io buffered --epochs 2 --test " +
                                                  root_.File("s-00001-of-00002.rfd")),
                       &local),
            0)
      << local;
  ASSERT_FALSE(LossLines(local).empty()) << local;
  EXPECT_EQ(LossLines(remote), LossLines(local)) << remote << "\n---\n" << local;
  EXPECT_EQ(LossLines(cold), LossLines(local)) << cold << "\n---\n" << local;
  EXPECT_EQ(LossLines(warm), LossLines(local)) << warm << "\n---\n" << local;
  auto d = Dataset::Open(local_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(cold_requests - warm_requests, d->chunk_count())
      << cold_requests << " requests cold, " << warm_requests << " warm";
}

// `ringfeed read --passes 2` with a cache: the first pass fetches every chunk, the second reads
// them all from the cache; a later run fetches none (only the headers and indices).
TEST_F(RemoteCommands, ReadWithACacheFetchesEachChunkOnce) {
  const std::string cmd = ProgramPath("ringfeed") + " read " +
                          server_->Url("/s-00000-of-00002.rfd") + " --cache-dir " +
                          out_.File("cache") + " --cache-size 64MiB";
  auto d = Dataset::Open(local_);
  ASSERT_TRUE(d.ok());
  const std::string n = std::to_string(d->chunk_count());
  std::string out;
  size_t requests = Requests();
  ASSERT_EQ(RunCommand(cmd + " --passes 2", &out), 0) << out;
  const size_t first = Requests() - requests;
  EXPECT_NE(out.find("0 of " + n + " chunks from the cache, " + n + " fetched"), std::string::npos)
      << out;
  EXPECT_NE(out.find(n + " of " + n + " chunks from the cache, 0 fetched"), std::string::npos)
      << out;
  requests += first;
  ASSERT_EQ(RunCommand(cmd, &out), 0) << out;
  EXPECT_NE(out.find(n + " of " + n + " chunks from the cache, 0 fetched"), std::string::npos)
      << out;
  EXPECT_EQ(first - (Requests() - requests), d->chunk_count()) << "the later run fetched chunks";
}

TEST_F(RemoteCommands, ACacheNeedsBothItsOptions) {
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + server_->Url("/s-00000-of-00002.rfd") +
                           " --cache-dir " + out_.File("cache"),
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("--cache-dir needs --cache-size"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + server_->Url("/s-00000-of-00002.rfd") +
                           " --cache-size 1GiB",
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("--cache-size needs --cache-dir"), std::string::npos) << out;
}

TEST_F(RemoteCommands, AMissingObjectExitsOneNamingIt) {
  std::string out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " read " + server_->Url("/nothing.rfd"), &out), 1)
      << out;
  EXPECT_NE(out.find(server_->Url("/nothing.rfd")), std::string::npos) << out;
  EXPECT_NE(out.find("404"), std::string::npos) << out;
}

}  // namespace
}  // namespace rf
