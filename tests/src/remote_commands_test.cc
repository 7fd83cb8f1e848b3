// `ringfeed read` and `ringfeed train` of a remote dataset, as a user runs them, against a real
// nginx the test starts on loopback: the same bytes read and the same training as from the local
// file, and the URL's credentials in no output.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/src/train_command_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::NginxServer;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;

class RemoteCommands : public ::testing::Test {
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

  // What of `out` does not depend on timing: each epoch line's losses and accuracies.
  static std::string LossLines(const std::string& out) {
    std::string kept;
    size_t at = 0;
    while (at < out.size()) {
      size_t end = out.find('\n', at);
      if (end == std::string::npos) end = out.size();
      const std::string line = out.substr(at, end - at);
      if (line.find("loss") != std::string::npos) {
        kept += line.substr(0, line.find(", lr "));  // then rates, times, memory
        kept += '\n';
      }
      at = end + 1;
    }
    return kept;
  }

  TempDir root_, out_;
  std::string local_;
  std::unique_ptr<NginxServer> server_;
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

TEST_F(RemoteCommands, TrainOnAUrlTrainsAsOnTheLocalFile) {
  std::string remote, local;
  ASSERT_EQ(RunCommand(testing::Train(server_->Url("/s-00000-of-00002.rfd"),
                                      "--epochs 2 --test " + server_->Url("/s-00001-of-00002.rfd")),
                       &remote),
            0)
      << remote;
  ASSERT_EQ(RunCommand(testing::Train(local_, "--io buffered --epochs 2 --test " +
                                                  root_.File("s-00001-of-00002.rfd")),
                       &local),
            0)
      << local;
  ASSERT_FALSE(LossLines(local).empty()) << local;
  EXPECT_EQ(LossLines(remote), LossLines(local)) << remote << "\n---\n" << local;
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
