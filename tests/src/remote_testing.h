// What the tests of `ringfeed read` and `ringfeed train` on remote datasets share: a two-shard
// dataset written into a directory that a real nginx (tests/testing/nginx_server.h) serves on
// loopback, and the part of a training's output that does not depend on timing.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/src/train_command_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {

class ServedDataset : public ::testing::Test {
 protected:
  // 600 samples in two shards, root_/s-0000{0,1}-of-00002.rfd, served by nginx (skipped where
  // nginx is not installed).
  void SetUp() override {
    if (std::string why = NginxMissing(); !why.empty()) GTEST_SKIP() << why;
    WriterOptions o;
    o.shards = 2;
    local_ = MakeDataset(root_, 600, o);
    std::string error;
    server_ = NginxServer::Start({root_.path(), "", "", ""}, &error);
    ASSERT_NE(server_, nullptr) << error;
  }

  // Each epoch line's losses and accuracies, without the rates, times and memory after them.
  static std::string LossLines(const std::string& out) {
    std::string kept;
    for (size_t at = 0; at < out.size();) {
      size_t end = out.find('\n', at);
      if (end == std::string::npos) end = out.size();
      const std::string line = out.substr(at, end - at);
      if (line.find("loss") != std::string::npos) {
        kept += line.substr(0, line.find(", lr "));
        kept += '\n';
      }
      at = end + 1;
    }
    return kept;
  }

  TempDir root_;
  std::string local_;
  std::unique_ptr<NginxServer> server_;
};

}  // namespace rf::testing
