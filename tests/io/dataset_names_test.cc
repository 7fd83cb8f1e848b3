// Issue 15, defect 7: stale datasets won silently. Converting "x.rfd" as one file and later as
// 2 shards (or 2 then 3) left both, and every tool opened the old one. Now a name holds one
// dataset: the writer removes what its new dataset replaces, once the new one is committed, and
// readers refuse a name under which more than one dataset exists, naming each.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

std::vector<std::string> Write(const std::string& path, uint64_t samples, uint32_t shards) {
  std::vector<std::string> files;
  testing::WritePositionalDataset(path, samples, {.shards = shards, .chunk_bytes = 4096}, &files);
  return files;
}

TEST(DatasetNames, TheWriterReplacesAnOlderDatasetOfTheNameWhateverItsShardCount) {
  TempDir t;
  const std::string name = t.File("x.rfd");
  Write(name, 300, 1);
  Write(name, 400, 2);
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"x-00000-of-00002.rfd", "x-00001-of-00002.rfd"}));
  auto two = Dataset::Open(name);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->sample_count(), 400u);

  Write(name, 500, 3);
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"x-00000-of-00003.rfd", "x-00001-of-00003.rfd",
                                      "x-00002-of-00003.rfd"}));
  Write(name, 200, 1);
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"x.rfd"});
  auto one = Dataset::Open(name);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->sample_count(), 200u);
}

// What a crash between the commit and the removal, or files copied in by hand, leave.
TEST(DatasetNames, AFileBesideShardsOfItsNameIsRefusedNamingBoth) {
  TempDir t;
  const std::vector<std::string> shards = Write(t.File("x.rfd"), 400, 2);
  Write(t.File("y.rfd"), 300, 1);
  std::filesystem::rename(t.File("y.rfd"), t.File("x.rfd"));
  auto d = Dataset::Open(t.File("x.rfd"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().ToString(),
            t.File("x.rfd") + ": 2 datasets have this name: " + t.File("x.rfd") + ", " + shards[0] +
                " (2 shards); remove the stale one(s) or name one shard");
  // A shard named exactly is one dataset.
  auto by_shard = Dataset::Open(shards[1]);
  ASSERT_TRUE(by_shard.ok()) << by_shard.status().ToString();
  EXPECT_EQ(by_shard->sample_count(), 400u);
}

TEST(DatasetNames, ShardsOfTwoCountsAreRefusedNamingOneOfEach) {
  TempDir t;
  const std::vector<std::string> two = Write(t.File("a.rfd"), 400, 2);
  const std::vector<std::string> three = Write(t.File("b.rfd"), 300, 3);
  for (uint32_t i = 0; i < 3; ++i) {
    std::filesystem::rename(three[i], t.File("a-0000" + std::to_string(i) + "-of-00003.rfd"));
  }
  auto d = Dataset::Open(t.File("a.rfd"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().ToString(), t.File("a.rfd") + ": 2 datasets have this name: " + two[0] +
                                       " (2 shards), " + t.File("a-00000-of-00003.rfd") +
                                       " (3 shards); remove the stale one(s) or name one shard");
}

}  // namespace
}  // namespace rf
