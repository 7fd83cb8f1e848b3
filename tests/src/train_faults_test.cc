// `ringfeed train` and `ringfeed read` under RINGFEED_FAULTS (io/fault_plan.h), as shipped: a read
// that keeps failing with EIO mid-run stops training with exit 1 and a message naming the file,
// chunk, byte offset and attempts; with --checkpoint it first writes an emergency checkpoint of
// the last completed step and prints the command that resumes, and that command, run once the
// data reads again, ends bit-identical to a run that never failed. A malformed plan is a usage
// error.
#include <gtest/gtest.h>

#include <string>

#include "io/dataset.h"
#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

// The rest of the line of `text` that starts with `prefix` ("" where none does).
std::string LineAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  const size_t from = at + prefix.size();
  return text.substr(from, text.find('\n', from) - from);
}

// Two epochs of 10 steps (300 samples in batches of 32); a small ring, so epoch 2's reads start
// only once most of epoch 1 has been trained.
const std::string kFlags = "--epochs 2 --ring-slots 2 --shuffle-window 2";

TEST(TrainFaults, PersistentEioWritesAnEmergencyCheckpointThatResumesBitIdentically) {
  TempDir t;
  const std::string data = MakeDataset(t);
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  const uint64_t offset = d->chunk(2).entry.offset;
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, kFlags + " --checkpoint " + t.File("straight")), &out), 0)
      << out;

  // Chunk 2 reads once in epoch 1, then never again: every request after the first fails.
  const std::string ck = t.File("emergency");
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@chunk=2,after=1' " +
                           Train(data, kFlags + " --checkpoint " + ck),
                       &out),
            1)
      << out;
  EXPECT_NE(out.find("ringfeed: RINGFEED_FAULTS is set: injecting read faults "
                     "(read:eio@chunk=2,after=1)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\nringfeed: " + data + ": chunk 2 at byte " + std::to_string(offset) +
                     ": read failed after 4 attempts: Input/output error (errno 5)\n"),
            std::string::npos)
      << out;
  const std::string stopped = LineAfter(out, "ringfeed train: stopped by a data error after step ");
  ASSERT_FALSE(stopped.empty()) << out;
  const uint64_t step = std::stoull(stopped);
  EXPECT_NE(stopped.find("; emergency checkpoint written to " + ck), std::string::npos) << out;
  auto c = ReadCheckpoint(ck);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->step, step);
  EXPECT_GE(step, 1u) << out;   // the run did train before the failure...
  EXPECT_LT(step, 20u) << out;  // ...and stopped before the end
  // Where step `step` left the epoch (10 steps an epoch: 9 of 32 samples, then 12).
  EXPECT_EQ(c->epoch, step < 10 ? 0u : 1u);
  EXPECT_EQ(c->next_sample, step < 10 ? step * 32 : (step - 10) * 32);

  // The command it printed, run as printed (with this build's program), without the fault.
  std::string resume = LineAfter(out, "ringfeed train: to resume once the data reads again: ");
  EXPECT_EQ(resume, "ringfeed train --data " + data +
                        " --device cpu --batch-size 32 --conv 4,8 --hidden 16 --seed 9 " + kFlags +
                        " --checkpoint " + ck + " --resume " + ck)
      << out;
  ASSERT_EQ(resume.rfind("ringfeed ", 0), 0u) << out;
  resume.replace(0, 8, ProgramPath("ringfeed"));
  ASSERT_EQ(RunCommand(resume, &out), 0) << out;
  auto straight = ReadCheckpoint(t.File("straight"));
  auto resumed = ReadCheckpoint(ck);
  ASSERT_TRUE(straight.ok() && resumed.ok());
  EXPECT_EQ(resumed->step, 20u);
  EXPECT_TRUE(testing::BitIdentical(straight->params, resumed->params));
  EXPECT_TRUE(testing::BitIdentical(straight->momentum, resumed->momentum));
  EXPECT_EQ(testing::ReadAll(ck), testing::ReadAll(t.File("straight")));
}

TEST(TrainFaults, PersistentEioWithoutCheckpointStopsNamingTheChunk) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(
      RunCommand("RINGFEED_FAULTS='read:eio@chunk=4,times=always' " + Train(data, kFlags), &out), 1)
      << out;
  EXPECT_NE(out.find(": chunk 4 at byte "), std::string::npos) << out;
  EXPECT_NE(out.find("read failed after 4 attempts: Input/output error (errno 5)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("emergency checkpoint"), std::string::npos) << out;
}

// Faults the reader gets past leave no trace in the model: the same checkpoint as without them.
TEST(TrainFaults, FaultsTheReaderGetsPastChangeNothing) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, kFlags + " --checkpoint " + t.File("a")), &out), 0) << out;
  ASSERT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@chunk=1,times=3;read:short=4096@chunk=3;"
                       "read:eintr@chunk=5,times=2;read:delay=50ms@chunk=0;read:reorder' " +
                           Train(data, kFlags + " --checkpoint " + t.File("b")),
                       &out),
            0)
      << out;
  EXPECT_EQ(testing::ReadAll(t.File("a")), testing::ReadAll(t.File("b")));
}

TEST(TrainFaults, AMalformedPlanIsAUsageError) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@chunk=two' " + Train(data, ""), &out), 2) << out;
  EXPECT_NE(out.find("ringfeed: RINGFEED_FAULTS: rule \"read:eio@chunk=two\": chunk= takes a "
                     "chunk number\n"),
            std::string::npos)
      << out;
}

TEST(ReadFaults, PersistentEioStopsTheReadCommandNamingTheChunk) {
  TempDir t;
  const std::string data = MakeDataset(t);
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  std::string out;
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@chunk=3,times=always' " +
                           ProgramPath("ringfeed") + " read " + data,
                       &out),
            1)
      << out;
  EXPECT_NE(out.find(data + ": chunk 3 at byte " + std::to_string(d->chunk(3).entry.offset) +
                     ": read failed after 4 attempts: Input/output error (errno 5)"),
            std::string::npos)
      << out;
}

// Compressed chunks (format version 2) under the same faults: the stored extents are read into the
// chunk stage's buffers and decompressed there. The faults the reader gets past change nothing:
// the model is bit-identical to one trained on the uncompressed dataset without faults (a
// dataset's epochs do not depend on its codec; the checkpoints differ only in the datasets' ids).
TEST(TrainFaults, CompressedDataUnderFaultsTrainsAsTheRawDataDoes) {
  TempDir raw, packed;
  const std::string plain = MakeDataset(raw);
  const std::string zstd = MakeDataset(packed, 300, {Codec::kZstd, 3});
  auto d = Dataset::Open(zstd);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_GE(d->compressed_chunks(), 4u);
  std::string out;
  ASSERT_EQ(RunCommand(Train(plain, kFlags + " --checkpoint " + raw.File("a")), &out), 0) << out;
  auto a = ReadCheckpoint(raw.File("a"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  for (const std::string threads : {"1", "4"}) {
    SCOPED_TRACE("--decode-threads " + threads);
    const std::string ck = packed.File("b" + threads);
    ASSERT_EQ(
        RunCommand("RINGFEED_FAULTS='read:eio@chunk=1,times=3;read:short=4096@chunk=5;"
                   "read:eintr@chunk=3,times=2;read:eagain@chunk=4,times=2;"
                   "read:delay=50ms@chunk=0;read:reorder' " +
                       Train(zstd, kFlags + " --decode-threads " + threads + " --checkpoint " + ck),
                   &out),
        0)
        << out;
    auto b = ReadCheckpoint(ck);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->step, a->step);
    EXPECT_TRUE(testing::BitIdentical(a->params, b->params));
    EXPECT_TRUE(testing::BitIdentical(a->momentum, b->momentum));
  }
}

TEST(TrainFaults, PersistentEioOnACompressedChunkStopsNamingFileChunkAndOffset) {
  TempDir t;
  const std::string data = MakeDataset(t, 300, {Codec::kLz4, 0});
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->chunk(4).entry.compressed());
  std::string out;
  EXPECT_EQ(
      RunCommand("RINGFEED_FAULTS='read:eio@chunk=4,times=always' " + Train(data, kFlags), &out), 1)
      << out;
  EXPECT_NE(out.find("\nringfeed: " + data + ": chunk 4 at byte " +
                     std::to_string(d->chunk(4).entry.offset) +
                     ": read failed after 4 attempts: Input/output error (errno 5)\n"),
            std::string::npos)
      << out;
}

TEST(ReadFaults, FaultsOnACompressedDatasetAreGotPastOrNamed) {
  TempDir t;
  const std::string data = MakeDataset(t, 300, {Codec::kZstd, 1});
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->chunk(3).entry.compressed());
  const std::string read = ProgramPath("ringfeed") + " read " + data + " --decode-threads 3";
  std::string out;
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@chunk=3,times=3;read:eintr@chunk=1;"
                       "read:reorder' " +
                           read,
                       &out),
            0)
      << out;
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='read:eio@chunk=3,times=always' " + read, &out), 1) << out;
  EXPECT_NE(out.find("ringfeed: " + data + ": chunk 3 at byte " +
                     std::to_string(d->chunk(3).entry.offset) +
                     ": read failed after 4 attempts: Input/output error (errno 5)\n"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace rf
