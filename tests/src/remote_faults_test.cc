// `ringfeed train` and `ringfeed read` of datasets served by nginx through the link proxy
// (tests/testing/link_proxy.h), which puts faults into nginx's answers and cuts the link: each
// transient fault retried, the training the same as from the local file, bit for bit; each
// fault that cannot heal refused with its one line, exit 1. The proxy says which faults it
// applied, so no test passes because a fault missed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/src/remote_testing.h"
#include "tests/testing/link_proxy.h"

namespace rf {
namespace {

using testing::LinkOptions;
using testing::LinkProxy;
using testing::ProgramPath;
using testing::RunCommand;

// A chunk's answer (8 KiB chunks) is 6,000 to 8,192 bytes; an open's are 4,096 (a header) and
// the object's last 64 KiB (or all of these ~57 KB objects).
constexpr uint64_t kChunkAnswer = 6000, kChunkAnswerMax = 8192;

class RemoteFaults : public testing::ServedDataset {
 protected:
  std::unique_ptr<LinkProxy> Proxy(const LinkOptions& o) {
    std::string error;
    auto p = LinkProxy::Start(server_->port(), o, &error);
    EXPECT_NE(p, nullptr) << error;
    return p;
  }

  // `ringfeed read` through a proxy with `o`, whose faults outlast --remote-deadline 2: exit 1,
  // one line naming the URL (of either shard: both are read), the chunk, the range, the deadline
  // and `also`; the proxy printed at least `least` lines starting with `applied`.
  void ExpectDeadline(const LinkOptions& o, const std::string& also, const std::string& applied,
                      size_t least) {
    auto p = Proxy(o);
    ASSERT_NE(p, nullptr);
    int rc = 0;
    const std::string out = Read(*p, "--remote-deadline 2", &rc);
    EXPECT_EQ(rc, 1) << out;
    for (const std::string& want : {p->Url("/s-0000"), std::string(": chunk "),
                                    std::string(": bytes "), std::string("(the deadline)"), also})
      EXPECT_NE(out.find(want), std::string::npos) << want << " in " << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_GE(LinkProxy::Count(p->Stop(), applied), least);
  }

  std::string TrainLocal() {
    std::string out;
    EXPECT_EQ(RunCommand(testing::Train(local_, "--io buffered --epochs 2 --test " +
                                                    root_.File("s-00001-of-00002.rfd")),
                         &out),
              0)
        << out;
    EXPECT_FALSE(LossLines(out).empty()) << out;
    return LossLines(out);
  }

  std::string TrainThrough(const LinkProxy& p, std::string* out) {
    const int rc = RunCommand(
        testing::Train(p.Url("/s-00000-of-00002.rfd"),
                       "--epochs 2 --remote-in-flight 4 --test " + p.Url("/s-00001-of-00002.rfd")),
        out);
    EXPECT_EQ(rc, 0) << *out;
    return LossLines(*out);
  }

  // What `opens` opens of the two-shard set carry to the client before any chunk: each shard's
  // header and its last 64 KiB (at most the whole object), and some for the answers' headers.
  uint64_t OpenBytes(int opens) const {
    uint64_t n = 0;
    for (const char* f : {"s-00000-of-00002.rfd", "s-00001-of-00002.rfd"}) {
      const uint64_t size = std::filesystem::file_size(root_.File(f));
      n += std::min<uint64_t>(4096, size) + std::min<uint64_t>(64 << 10, size) + 1024;
    }
    return n * static_cast<uint64_t>(opens);
  }

  std::string Read(const LinkProxy& p, const std::string& extra, int* rc) {
    std::string out;
    *rc = RunCommand(
        ProgramPath("ringfeed") + " read " + p.Url("/s-00000-of-00002.rfd") + " " + extra, &out);
    return out;
  }
};

// Resets, bodies cut short, 503s and a stalled answer, in the opens (headers, indices) and in the
// chunks of both splits, over two epochs: the same losses as the local file's.
TEST_F(RemoteFaults, TransientFaultsAreRetriedAndTrainingIsBitIdentical) {
  LinkOptions o;
  o.faults = "reset,cut,503,pass,stall:1500,reset,pass,cut,503,pass,reset,cut";
  auto p = Proxy(o);
  ASSERT_NE(p, nullptr);
  std::string out;
  const std::string remote = TrainThrough(*p, &out);
  const std::vector<std::string> applied = p->Stop();
  EXPECT_EQ(remote, TrainLocal()) << out;
  EXPECT_EQ(LinkProxy::Count(applied, "fault reset"), 3u);
  EXPECT_EQ(LinkProxy::Count(applied, "fault cut"), 3u);
  EXPECT_EQ(LinkProxy::Count(applied, "fault 503"), 2u);
  EXPECT_EQ(LinkProxy::Count(applied, "fault stall"), 1u);
}

// The same faults aimed at the chunks' answers only, on a link of 10 ms round trip capped at
// 200 Mbit/s: still the same training.
TEST_F(RemoteFaults, FaultsOnASlowLinkAreRetriedToTheSameTraining) {
  LinkOptions o;
  o.rtt_ms = 10;
  o.rate_mbps = 200;
  o.faults = "reset,cut,503,reset,cut,503";
  o.fault_min_body = kChunkAnswer;
  o.fault_max_body = kChunkAnswerMax;
  auto p = Proxy(o);
  ASSERT_NE(p, nullptr);
  std::string out;
  const std::string remote = TrainThrough(*p, &out);
  EXPECT_EQ(LinkProxy::Count(p->Stop(), "fault "), 6u);
  EXPECT_EQ(remote, TrainLocal()) << out;
}

// The link cut for 2.5 s in the middle of the first epoch, then restored: the requests in flight
// wait it out (or are retried) and the training is the same.
TEST_F(RemoteFaults, ALinkCutForAWhileIsRiddenOut) {
  LinkOptions o;
  o.cut_after = OpenBytes(2) + 40'000;  // the train and test splits' opens, then 40 KB of chunks
  o.cut_ms = 2500;
  auto p = Proxy(o);
  ASSERT_NE(p, nullptr);
  std::string out;
  const std::string remote = TrainThrough(*p, &out);
  const std::vector<std::string> lines = p->Stop();
  EXPECT_EQ(LinkProxy::Count(lines, "cut 2500 ms"), 1u);
  EXPECT_EQ(LinkProxy::Count(lines, "restored"), 1u);
  EXPECT_EQ(remote, TrainLocal()) << out;
}

// A link that stays down past --remote-deadline: named with the deadline.
TEST_F(RemoteFaults, ALinkDownPastTheDeadlineIsNamed) {
  LinkOptions o;
  o.cut_after = OpenBytes(1) + 20'000;
  o.cut_ms = 6000;
  ExpectDeadline(o, "timed out", "cut 6000 ms", 1);
}

// A server that answers 503 to every request for a chunk: retried to the deadline, then named
// with its status.
TEST_F(RemoteFaults, A503ForeverEndsAtTheDeadlineWithItsStatus) {
  LinkOptions o;
  o.faults = "503";
  o.fault_repeat = true;
  o.fault_min_body = kChunkAnswer;
  o.fault_max_body = kChunkAnswerMax;
  ExpectDeadline(o, "503", "fault 503", 2);
}

// Other bytes than the chunk's: no retry reaches the model; a DataError naming the URL, the chunk
// and its offset, exit 1, and no batch of it trained on.
TEST_F(RemoteFaults, WrongBytesAreRefusedNamingTheChunk) {
  LinkOptions o;
  o.faults = "pass,flip";
  o.fault_min_body = kChunkAnswer;
  o.fault_max_body = kChunkAnswerMax;
  auto p = Proxy(o);
  ASSERT_NE(p, nullptr);
  std::string out;
  const int rc = RunCommand(testing::Train(p->Url("/s-00000-of-00002.rfd"), "--epochs 1"), &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find(p->Url("/s-00000-of-00002.rfd")), std::string::npos) << out;
  EXPECT_NE(out.find("checksum mismatch"), std::string::npos) << out;
  EXPECT_NE(out.find("chunk "), std::string::npos) << out;
  EXPECT_EQ(LinkProxy::Count(p->Stop(), "fault flip"), 1u);
}

}  // namespace
}  // namespace rf
