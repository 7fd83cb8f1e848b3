// ringfeed-convert images --skip-bad (issue 43): a tree with damaged, empty and non-JPEG files
// among good photographs is written with the good ones only, in order and with their labels;
// each one left out is listed with its reason in OUT.skipped.tsv; without the option the
// refusal names it; with no image left, nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tests/tools/image_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::FailsWith;
using testing::Jpeg;
using testing::TempDir;
namespace fs = std::filesystem;

std::string Text(const std::string& path) {
  const std::vector<uint8_t> b = testing::ReadAll(path);
  return std::string(b.begin(), b.end());
}

class SkipBad : public ::testing::Test {
 protected:
  // tree/a: 1.jpg, 2-cut.jpg (damaged), 3.jpg; tree/b: 4-empty.jpg, 5.jpg, 6-text.jpg.
  void SetUp() override {
    fs::create_directories(t_.File("tree/a"));
    fs::create_directories(t_.File("tree/b"));
    const std::vector<uint8_t> big = Jpeg(96, 64, 7);
    good_ = {Jpeg(40, 30, 1), Jpeg(48, 30, 2), Jpeg(56, 30, 3)};
    testing::WriteAll(t_.File("tree/a/1.jpg"), good_[0]);
    testing::WriteAll(t_.File("tree/a/2-cut.jpg"),
                      std::vector<uint8_t>(big.begin(), big.begin() + big.size() / 2));
    testing::WriteAll(t_.File("tree/a/3.jpg"), good_[1]);
    testing::WriteAll(t_.File("tree/b/4-empty.jpg"), std::vector<uint8_t>{});
    testing::WriteAll(t_.File("tree/b/5.jpg"), good_[2]);
    testing::WriteAll(t_.File("tree/b/6-text.jpg"), "hello, world", 12);
  }

  std::string Bad(const std::string& name, const std::string& why) const {
    return t_.File("tree/" + name) + "\t" + why + "\n";
  }

  TempDir t_;
  std::vector<std::vector<uint8_t>> good_;
};

TEST_F(SkipBad, WritesTheGoodImagesAndListsTheOthersWithTheirReasons) {
  std::string out;
  const Status st = Convert(
      {"images", t_.File("tree"), "--keep-order", "--skip-bad", "-o", t_.File("o.rfd")}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::vector<testing::Record> got = testing::Records(t_.File("o.rfd"));
  ASSERT_EQ(got.size(), 3u);
  const int labels[] = {0, 0, 1};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].bytes, good_[i]) << i;
    EXPECT_EQ(got[i].label, labels[i]) << i;
  }
  const std::string report = Text(t_.File("o.skipped.tsv"));
  EXPECT_TRUE(report.starts_with("# ringfeed-convert images: the images left out of " +
                                 t_.File("o.rfd") + " (--skip-bad)"))
      << report;
  const std::string lines = report.substr(report.find('\n') + 1);
  EXPECT_EQ(lines, Bad("a/2-cut.jpg", "truncated: no end-of-image marker after the scan") +
                       Bad("b/4-empty.jpg", "an empty file, not an image") +
                       Bad("b/6-text.jpg", "not an image: it starts with bytes 68 65 6c 6c"));
  EXPECT_NE(out.find("wrote " + t_.File("o.rfd") + ": 3 images (3 JPEG; image/jpeg) of 2 classes"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("left out 3 images that could not be stored (--skip-bad): listed in " +
                     t_.File("o.skipped.tsv")),
            std::string::npos)
      << out;
}

TEST_F(SkipBad, WithoutItTheRefusalNamesItAndNothingIsWritten) {
  const Status st =
      Convert({"images", t_.File("tree"), "--keep-order", "-q", "-o", t_.File("o.rfd")});
  EXPECT_TRUE(FailsWith(st, "3 images refused, nothing written: " + t_.File("tree/a/2-cut.jpg")))
      << st.ToString();
  EXPECT_TRUE(FailsWith(st, "(--skip-bad writes the others and lists these in " +
                                t_.File("o.skipped.tsv") +
                                "; --max-side N resizes images above --max-image-side)"))
      << st.ToString();
  EXPECT_EQ(testing::FilesIn(t_.path()), std::vector<std::string>{"tree"});
}

TEST_F(SkipBad, NoImageLeftWritesNothing) {
  for (const char* good : {"tree/a/1.jpg", "tree/a/3.jpg", "tree/b/5.jpg"})
    fs::remove(t_.File(good));
  const Status st = Convert(
      {"images", t_.File("tree"), "--keep-order", "--skip-bad", "-q", "-o", t_.File("o.rfd")});
  EXPECT_TRUE(FailsWith(st, "3 images refused and none left, nothing written: ")) << st.ToString();
  EXPECT_EQ(testing::FilesIn(t_.path()), std::vector<std::string>{"tree"});
}

// A clean tree under --skip-bad still writes its report (a header line), so an older run's list
// beside the output never stands for this one's.
TEST_F(SkipBad, ACleanTreeReplacesAnOlderReport) {
  testing::WriteAll(t_.File("o.skipped.tsv"), "stale\n", 6);
  for (const char* bad : {"tree/a/2-cut.jpg", "tree/b/4-empty.jpg", "tree/b/6-text.jpg"})
    fs::remove(t_.File(bad));
  std::string out;
  ASSERT_TRUE(
      Convert({"images", t_.File("tree"), "--keep-order", "--skip-bad", "-o", t_.File("o.rfd")},
              &out)
          .ok());
  const std::string report = Text(t_.File("o.skipped.tsv"));
  EXPECT_TRUE(report.starts_with("# ringfeed-convert images")) << report;
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 1) << report;
  EXPECT_NE(out.find("left out 0 images that could not be stored (--skip-bad): none; listed in "),
            std::string::npos)
      << out;
}

// The report is an output, under the rules of every output (io/file.h's PlanOutput): a directory
// at its path is refused before anything is read, and left as it is.
TEST_F(SkipBad, ADirectoryAtTheReportsPathIsRefusedFirst) {
  fs::create_directories(t_.File("o.skipped.tsv/kept"));
  const Status st = Convert(
      {"images", t_.File("tree"), "--keep-order", "--skip-bad", "-q", "-o", t_.File("o.rfd")});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find(t_.File("o.skipped.tsv")), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs::exists(t_.File("o.rfd")));
  EXPECT_TRUE(fs::is_directory(t_.File("o.skipped.tsv/kept")));
}

}  // namespace
}  // namespace rf
