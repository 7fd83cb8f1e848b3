// LineOutput (io/line_output.h): a log on the file record by record as it is written, continued
// by a later run from a fresh line, and never left with half a record by a failed write.
#include "io/line_output.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

std::string Text(const std::string& path) {
  const std::vector<uint8_t> bytes = testing::ReadAll(path);
  return std::string(bytes.begin(), bytes.end());
}

// What a run killed at any point leaves: each record is on the file once Write returns, with
// nothing held back in a buffer (read here while the output is still open).
TEST(LineOutput, EachRecordIsOnTheFileWhenWriteReturns) {
  TempDir t;
  auto out = LineOutput::Open(t.File("log"), LineOutput::Start::kTruncate);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->Write("{\"record\": 0}\n").ok());
  EXPECT_EQ(Text(t.File("log")), "{\"record\": 0}\n");
  ASSERT_TRUE(out->Write("1\n2\n3\n").ok());
  EXPECT_EQ(Text(t.File("log")), "{\"record\": 0}\n1\n2\n3\n");
  EXPECT_EQ(out->bytes(), 20u);
  EXPECT_TRUE(out->Close().ok());
}

TEST(LineOutput, TruncateStartsEmptyAndAppendContinues) {
  TempDir t;
  testing::WriteAll(t.File("log"), "old\n", 4);
  {
    auto out = LineOutput::Open(t.File("log"), LineOutput::Start::kAppend);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_TRUE(out->Write("new\n").ok());
    ASSERT_TRUE(out->Close().ok());
  }
  EXPECT_EQ(Text(t.File("log")), "old\nnew\n");
  auto out = LineOutput::Open(t.File("log"), LineOutput::Start::kTruncate);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->Write("fresh\n").ok());
  ASSERT_TRUE(out->Close().ok());
  EXPECT_EQ(Text(t.File("log")), "fresh\n");
}

// A run killed in the middle of a write may leave a record's prefix: the next run's records
// start on a line of their own, so the cut line is the only one that does not parse.
TEST(LineOutput, AppendAfterARecordCutShortStartsOnAFreshLine) {
  TempDir t;
  testing::WriteAll(t.File("log"), "{\"a\": 1}\n{\"a\"", 13);
  auto out = LineOutput::Open(t.File("log"), LineOutput::Start::kAppend);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->Write("{\"b\": 2}\n").ok());
  ASSERT_TRUE(out->Close().ok());
  EXPECT_EQ(Text(t.File("log")), "{\"a\": 1}\n{\"a\"\n{\"b\": 2}\n");
}

// In a forked child (the limit is per process): under RLIMIT_FSIZE of `limit` bytes with SIGXFSZ
// ignored, writes each of `records`; returns the first error's line and that of Close ("" if
// none).
std::string WriteUnderFileSizeLimit(const std::string& path, rlim_t limit,
                                    const std::vector<std::string>& records) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit r{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &r);
    std::string line;
    auto out = LineOutput::Open(path, LineOutput::Start::kTruncate);
    if (!out.ok()) {
      line = out.status().ToString();
    } else {
      for (const std::string& rec : records) {
        const Status st = out->Write(rec);
        if (!st.ok() && line.empty()) line = st.ToString();
      }
      const Status closed = out->Close();
      line += closed.ok() ? "" : " | close: " + closed.ToString();
    }
    (void)!::write(fds[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return got;
}

// A full disk (EFBIG past a file size limit stands in for it) stops a record part-way: the file
// is cut back to its last whole record, and the error, naming the file and the byte, is every
// later call's too.
TEST(LineOutput, AFailedWriteLeavesOnlyWholeRecords) {
  TempDir t;
  const std::string path = t.File("log");
  const std::string error = path + ": at byte 16: write failed: File too large (errno 27)";
  EXPECT_EQ(WriteUnderFileSizeLimit(path, 16, {"0123456789\n", "abcdefghij\n", "x\n"}),
            error + " | close: " + error);
  EXPECT_EQ(Text(path), "0123456789\n");
}

TEST(LineOutput, ADirectoryIsRefusedAndAMissingDirectoryNamed) {
  TempDir t;
  auto dir = LineOutput::Open(t.path(), LineOutput::Start::kAppend);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(),
            t.path() + " is a directory; refusing to write an output over it: give a file name");
  auto missing = LineOutput::Open(t.File("no/log"), LineOutput::Start::kTruncate);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().ToString(),
            t.File("no/log") + ": cannot create the file: its directory " + t.File("no") +
                " does not exist: No such file or directory (errno 2)");
}

}  // namespace
}  // namespace rf
