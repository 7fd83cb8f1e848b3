// Issue 15, defect 7: stale datasets won silently. Converting "x.rfd" as one file and later as
// 2 shards (or 2 then 3) left both, and every tool opened the old one. Now a name holds one
// dataset: the writer removes what its new dataset replaces, once the new one is committed, and
// readers refuse a name under which more than one dataset exists, naming each.
#include <gtest/gtest.h>
#include <unistd.h>

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

// Issue 23, D4: the writer removed any file named like a shard of its output, its own inputs
// (.npy files named like shards) and text files included. Now it removes only ringfeed datasets,
// never a file it was told to keep (the inputs, by any name), and lists each removal.
TEST(DatasetNames, OnlyOlderDatasetsAreRemovedNeverInputsOrOtherFiles) {
  TempDir t;
  const std::string name = t.File("d.rfd");
  testing::WriteAll(t.File("images.npy"), "images", 6);
  ASSERT_EQ(::symlink(t.File("images.npy").c_str(), t.File("images-link").c_str()), 0);
  // An older dataset of the name, in 3 shards: it is what the new one replaces.
  const std::vector<std::string> older = Write(name, 300, 3);

  DatasetSpec spec;
  spec.height = spec.width = 8;
  WriterOptions o{.chunk_bytes = 4096};
  o.keep = {t.File("images-link")};
  auto w = DatasetWriter::Create(name, spec, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::vector<uint8_t> samples(64 * 10, 3), labels(10, 1);
  ASSERT_TRUE((*w)->Append(samples.data(), labels.data(), 10).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ((*w)->removed(), older);
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"d.rfd", "images-link", "images.npy"}));
  EXPECT_EQ(testing::ReadAll(t.File("images.npy")),
            (std::vector<uint8_t>{'i', 'm', 'a', 'g', 'e', 's'}));
}

// Issue 40, W5: files the new dataset's name would share that the writer does not replace (a
// file that is not a dataset, an input, a symbolic link) left the name naming two datasets: the
// shards were written, then nothing could open them by the name ("2 datasets have this name",
// calling a text file a dataset). Refused before anything is written; every file stays.
TEST(DatasetNames, AFileOfTheNameThatWouldStayIsRefusedBeforeAnythingIsWritten) {
  TempDir t;
  const std::vector<std::string> input = Write(t.File("in.rfd"), 300, 2);
  testing::WriteAll(t.File("n.rfd"), "notes", 5);                      // beside shards of n
  testing::WriteAll(t.File("m-00001-of-00003.rfd"), "a note", 6);      // beside m.rfd
  ASSERT_EQ(::symlink(input[0].c_str(), t.File("k.rfd").c_str()), 0);  // an input, linked
  const std::vector<std::string> other = Write(t.File("o.rfd"), 100, 1);
  ASSERT_EQ(::symlink(other[0].c_str(), t.File("j.rfd").c_str()), 0);  // a link, not an input
  struct Case {
    std::string name;
    uint32_t shards;
    std::string file, why;
  };
  const std::vector<Case> cases = {
      {"n.rfd", 2, "n.rfd", "it is not a ringfeed dataset"},
      {"m.rfd", 1, "m-00001-of-00003.rfd", "it is not a ringfeed dataset"},
      {"k.rfd", 2, "k.rfd", "it is an input"},
      {"j.rfd", 2, "j.rfd", "a symbolic link, which the writer never removes"},
  };
  const std::vector<std::string> before = testing::FilesIn(t.path());
  for (const Case& c : cases) {
    DatasetSpec spec;
    WriterOptions o{.shards = c.shards};
    o.keep = input;
    auto w = DatasetWriter::Create(t.File(c.name), spec, o);
    ASSERT_FALSE(w.ok()) << c.name;
    EXPECT_TRUE(w.status().IsUsage());
    const std::string written =
        c.shards == 1 ? t.File(c.name)
                      : "its 2 shards (" + format::ShardPath(t.File(c.name), 0, 2) + ", ...)";
    EXPECT_EQ(w.status().message(),
              t.File(c.file) + " has the name of the dataset being written and would stay (" +
                  c.why + "), so " + written + " could not be opened as " + t.File(c.name) +
                  ": move it, or write the dataset under another name");
    EXPECT_EQ(testing::FilesIn(t.path()), before) << c.name;
  }
  EXPECT_EQ(testing::ReadAll(t.File("n.rfd")), (std::vector<uint8_t>{'n', 'o', 't', 'e', 's'}));
}

// Issue 23, accepted item 5: "-o q-00000-of-00002.rfd" with one shard wrote a dataset nothing
// could open (the name says shard 0 of 2).
TEST(DatasetNames, AnOutputNamedLikeAShardIsRefused) {
  TempDir t;
  DatasetSpec spec;
  auto w = DatasetWriter::Create(t.File("q-00000-of-00002.rfd"), spec, {});
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(w.status().IsUsage());
  EXPECT_EQ(w.status().message(),
            t.File("q-00000-of-00002.rfd") +
                " is named like shard 0 of 2 of q.rfd, so it could not be opened as a dataset: "
                "name the dataset (q.rfd) and give the shard count");
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

}  // namespace
}  // namespace rf
