// How a DatasetWriter commits its shards (issue 15, defect 9, and the writers under ENOSPC/EIO):
// every shard is fsynced and closed before any is renamed, so a failure leaves no final name
// (shard 0 under its final name made a half-written set look finished), and shard 0 is renamed
// last, so a crash during the renames leaves a set that readers refuse as incomplete.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/scoped_faults.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

TEST(DatasetCommit, AFailedFsyncOfAnyShardLeavesNoFinalNameAndTheOldDatasetIntact) {
  TempDir t;
  const std::string name = t.File("x.rfd");
  testing::WritePositionalDataset(name, 300, {.chunk_bytes = 4096});
  const std::vector<uint8_t> old = testing::ReadAll(name);
  for (const char* shard : {"x-00000-of-00002", "x-00001-of-00002"}) {
    SCOPED_TRACE(shard);
    DatasetSpec spec;
    spec.height = spec.width = 8;
    auto w = DatasetWriter::Create(name, spec, {.shards = 2, .chunk_bytes = 4096});
    ASSERT_TRUE(w.ok());
    const std::vector<uint8_t> samples(64 * 200, 7), labels(200, 1);
    ASSERT_TRUE((*w)->Append(samples.data(), labels.data(), 200).ok());
    testing::ScopedFaults faults(std::string("fsync:eio@path=") + shard);
    const Status st = (*w)->Finish();
    EXPECT_EQ(st.ToString(), t.File(shard) + ".rfd: fsync failed: Input/output error (errno 5)");
    w->reset();
    EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"x.rfd"});
    EXPECT_EQ(testing::ReadAll(name), old);
  }
}

// What a crash between the renames leaves: every shard but shard 0.
TEST(DatasetCommit, ASetWithoutShardZeroIsRefusedAsIncomplete) {
  TempDir t;
  std::vector<std::string> files;
  testing::WritePositionalDataset(t.File("x.rfd"), 300, {.shards = 2, .chunk_bytes = 4096}, &files);
  std::filesystem::remove(files[0]);
  auto d = Dataset::Open(t.File("x.rfd"));
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsNotFound());
  EXPECT_EQ(d.status().ToString(),
            files[0] +
                ": shard 0 of 2 is missing: an incomplete dataset (an interrupted conversion?); "
                "convert it again: No such file or directory (errno 2)");
}

// Issue 15, defect 6's backstop: NaN samples made a dataset that no reader opens ("channel
// statistics are not finite"); the writer refuses to finish it.
TEST(DatasetCommit, NonFiniteSamplesAreRefusedAndLeaveNoFile) {
  TempDir t;
  DatasetSpec spec;
  spec.sample_dtype = DType::kFloat32;
  spec.height = spec.width = 2;
  auto w = DatasetWriter::Create(t.File("f.rfd"), spec, {});
  ASSERT_TRUE(w.ok());
  const float samples[8] = {0, 1, 2, 3, 4, std::numeric_limits<float>::quiet_NaN(), 6, 7};
  const uint8_t labels[2] = {0, 1};
  ASSERT_TRUE((*w)->Append(samples, labels, 2).ok());
  EXPECT_EQ((*w)->Finish().ToString(),
            t.File("f.rfd") +
                ": the statistics of channel 0 are not finite: the samples hold NaN or infinite "
                "values");
  w->reset();
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

}  // namespace
}  // namespace rf
