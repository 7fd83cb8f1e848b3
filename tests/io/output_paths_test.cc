// Where an output may go (io/file.h's PlanOutput and CheckOutputPaths): a special file is written
// in place or refused, never replaced; two outputs that are one file are refused; a symbolic link
// to a file stays a link. Issue 23's D1 and D2: every output of ringfeed was renamed into place,
// even over a device node (as root, `--metrics /dev/null` replaced the machine's /dev/null).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "io/dataset_writer.h"
#include "io/file.h"
#include "io/sequential_output.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

mode_t TypeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & S_IFMT;
}

// A character device like /dev/null (1, 3) in `dir`, or false where this process may not make
// one (not root): the tests never touch the machine's own /dev/null.
bool MakeNullDevice(const std::string& path) {
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
}

TEST(OutputPaths, ACharacterDeviceIsWrittenInPlaceAndStaysADevice) {
  TempDir t;
  const std::string dev = t.File("null");
  if (!MakeNullDevice(dev)) GTEST_SKIP() << "cannot make a device node here (not root)";
  auto out = SequentialOutput::Create(dev);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->Append("metrics\n").ok());
  ASSERT_TRUE(out->Commit().ok());
  EXPECT_EQ(TypeOf(dev), S_IFCHR);
  ASSERT_TRUE(WriteFileAtomically(dev, "checkpoint").ok());
  EXPECT_EQ(TypeOf(dev), S_IFCHR);
  // An abandoned in-place output is the user's file: it is closed, never removed.
  { auto abandoned = AtomicOutput::Create(dev); }
  EXPECT_EQ(TypeOf(dev), S_IFCHR);
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"null"});
}

TEST(OutputPaths, AFifoWithAReaderGetsTheBytesInOrderAndStaysAFifo) {
  TempDir t;
  const std::string fifo = t.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
  });
  // The output opens without waiting, so the reader must be there first.
  Result<SequentialOutput> out = Status::Aborted("not opened");
  for (int i = 0; i < 2000 && !out.ok(); ++i) {
    out = SequentialOutput::Create(fifo, 4);  // a 4-byte buffer: several writes
    if (!out.ok()) ::usleep(1000);
  }
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->Append("epoch 1\n").ok());
  ASSERT_TRUE(out->Append("epoch 2\n").ok());
  ASSERT_TRUE(out->Commit().ok());
  out = Status::Aborted("closed");  // closes the write end: the reader sees the end
  reader.join();
  EXPECT_EQ(got, "epoch 1\nepoch 2\n");
  EXPECT_EQ(TypeOf(fifo), S_IFIFO);
}

TEST(OutputPaths, AFifoNobodyReadsIsRefusedWithoutWaiting) {
  TempDir t;
  const std::string fifo = t.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto out = AtomicOutput::Create(fifo);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().ToString(),
            fifo +
                ": is a FIFO that nobody reads; refusing to wait for one: No such device or "
                "address (errno 6)");
  EXPECT_EQ(TypeOf(fifo), S_IFIFO);
}

TEST(OutputPaths, ADatasetIsNotWrittenFrontToBackSoAFifoRefusesIt) {
  TempDir t;
  const std::string fifo = t.File("d.rfd");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  DatasetSpec spec;
  spec.height = spec.width = 4;
  auto w = DatasetWriter::Create(fifo, spec, WriterOptions{});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<uint8_t> samples(16 * 8, 1), labels(8, 0);
  Status st = (*w)->Append(samples.data(), labels.data(), 8);
  if (st.ok()) st = (*w)->Finish();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.ToString(), fifo +
                               ": chunk 0 at byte 4096: cannot write this output to a FIFO: it is "
                               "not written front to back (give a regular file)");
  w->reset();
  ::close(reader);
  EXPECT_EQ(TypeOf(fifo), S_IFIFO);
}

TEST(OutputPaths, ADirectoryADanglingLinkAndABlockDeviceAreRefusedByName) {
  TempDir t;
  ASSERT_EQ(::mkdir(t.File("dir").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(t.File("nowhere").c_str(), t.File("dangling").c_str()), 0);
  auto dir = AtomicOutput::Create(t.File("dir"));
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().ToString(), t.File("dir") +
                                         " is a directory; refusing to write an output over it: "
                                         "give a file name");
  auto dangling = AtomicOutput::Create(t.File("dangling"));
  ASSERT_FALSE(dangling.ok());
  EXPECT_EQ(dangling.status().ToString(),
            t.File("dangling") +
                " is a symbolic link to nothing (No such file or directory); refusing to replace "
                "it: give the file itself");
  if (::mknod(t.File("blk").c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0) {
    auto blk = AtomicOutput::Create(t.File("blk"));
    ASSERT_FALSE(blk.ok());
    EXPECT_NE(blk.status().ToString().find("is a block device; refusing"), std::string::npos);
    EXPECT_EQ(TypeOf(t.File("blk")), S_IFBLK);
  }
  EXPECT_EQ(TypeOf(t.File("dir")), S_IFDIR);
  EXPECT_EQ(TypeOf(t.File("dangling")), S_IFLNK);
}

TEST(OutputPaths, ALinkToAFileStaysALinkAndItsTargetIsReplaced) {
  TempDir t;
  testing::WriteAll(t.File("target"), "old", 3);
  ASSERT_EQ(::symlink("target", t.File("link").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(t.File("link"), "new contents").ok());
  EXPECT_EQ(TypeOf(t.File("link")), S_IFLNK);
  const std::vector<uint8_t> got = testing::ReadAll(t.File("target"));
  EXPECT_EQ(std::string(got.begin(), got.end()), "new contents");
}

TEST(OutputPaths, TwoOutputsThatAreOneFileAreRefusedByAnyName) {
  TempDir t;
  testing::WriteAll(t.File("x"), "keep", 4);
  ASSERT_EQ(::link(t.File("x").c_str(), t.File("hard").c_str()), 0);
  ASSERT_EQ(::symlink(t.path().c_str(), t.File("same-dir").c_str()), 0);
  struct Case {
    std::string a, b, suffix;
  };
  const std::vector<Case> cases = {
      {t.File("x"), t.File("x"), ""},                                 // the same name
      {t.File("x"), t.File("hard"), " (by another name)"},            // a hard link
      {t.File("new"), t.path() + "/./new", " (by another name)"},     // not there yet
      {t.File("new"), t.File("same-dir/new"), " (by another name)"},  // a linked directory
  };
  for (const Case& c : cases) {
    const Status st = CheckOutputPaths({{"--checkpoint", c.a}, {"--metrics", c.b}}, {});
    EXPECT_TRUE(st.IsUsage()) << c.b;
    EXPECT_EQ(st.message(), "--checkpoint " + c.a + " and --metrics " + c.b + " are the same file" +
                                c.suffix + "; one would replace the other: give each its own file");
  }
  EXPECT_TRUE(
      CheckOutputPaths({{"--checkpoint", t.File("a")}, {"--metrics", t.File("b")}}, {}).ok());
  EXPECT_EQ(testing::ReadAll(t.File("x")), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
}

TEST(OutputPaths, TwoOutputsMayShareADeviceWrittenInPlace) {
  TempDir t;
  const std::string dev = t.File("null");
  if (!MakeNullDevice(dev)) GTEST_SKIP() << "cannot make a device node here (not root)";
  EXPECT_TRUE(CheckOutputPaths({{"--metrics", dev}, {"--trace", dev}}, {}).ok());
  const Status st = CheckOutputPaths({{"--metrics", t.path()}}, {});
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(), "--metrics: " + t.path() +
                              " is a directory; refusing to write an output over it: give a file "
                              "name");
}

}  // namespace
}  // namespace rf
