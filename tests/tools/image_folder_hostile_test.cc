// ringfeed-convert images against hostile ImageFolder trees (issue 40, W1): a symbolic link loop
// (`ln -s .. tree/a/loop`) converted with exit 0, 82 images where there are 2, 40 copies of class
// b's image labelled a. Links to directories are not followed; each is named on stderr and in
// the summary.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tests/tools/image_testing.h"

namespace rf {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

TEST(ImageFolderHostile, LinksToDirectoriesAreNotFollowedAndAreNamed) {
  TempDir t;
  const std::string tree = t.File("tree");
  fs::create_directories(tree + "/a");
  fs::create_directories(tree + "/b");
  const std::vector<uint8_t> a = testing::Jpeg(16, 16, 1), b = testing::Jpeg(24, 16, 2);
  testing::WriteAll(tree + "/a/a.jpg", a);
  testing::WriteAll(tree + "/b/b.jpg", b);
  fs::create_directory_symlink("..", tree + "/a/loop");      // the tree itself: a loop
  fs::create_directory_symlink("../a", tree + "/b/other");   // another class
  fs::create_symlink("../a/a.jpg", tree + "/b/linked.jpg");  // a link to a file: followed
  const testing::MeasuredRun r =
      testing::RunMeasured({testing::ProgramPath("ringfeed-convert"), "images", tree, "-o",
                            t.File("o.rfd"), "--keep-order"});
  ASSERT_EQ(r.rc, 0) << r.output;
  const std::string links =
      "2 links to directories, not followed: " + tree + "/a/loop, " + tree + "/b/other";
  EXPECT_EQ(r.output.find("ringfeed-convert: passing over " + links + "\n"), 0u) << r.output;
  EXPECT_NE(
      r.output.find("wrote " + t.File("o.rfd") + ": 3 images (3 JPEG; image/jpeg) of 2 classes"),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\npassed over " + links + "\n"), std::string::npos) << r.output;
  const std::vector<testing::Record> got = testing::Records(t.File("o.rfd"));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].bytes, a);
  EXPECT_EQ(got[0].label, 0);
  EXPECT_EQ(got[1].bytes, b);  // b/b.jpg, then b/linked.jpg: name order
  EXPECT_EQ(got[1].label, 1);
  EXPECT_EQ(got[2].bytes, a);
  EXPECT_EQ(got[2].label, 1);
}

// A link to nothing among the images is a bad image named as one, not "cannot list the folder".
TEST(ImageFolderHostile, ALinkToNothingIsNamedAsABadImage) {
  TempDir t;
  const std::string tree = t.File("tree");
  fs::create_directories(tree + "/a");
  testing::WriteAll(tree + "/a/a.jpg", testing::Jpeg(16, 16, 1));
  fs::create_symlink("nowhere.jpg", tree + "/a/gone.jpg");
  fs::create_symlink("nowhere", tree + "/a/gone.txt");  // not an image: passed over
  const Status st = testing::Convert({"images", tree, "-q", "-o", t.File("o.rfd")});
  EXPECT_TRUE(testing::FailsWith(st, "1 image refused, nothing written: " + tree +
                                         "/a/gone.jpg: cannot be read: " + tree +
                                         "/a/gone.jpg: cannot open: No such file or directory"))
      << st.ToString();
  EXPECT_FALSE(fs::exists(t.File("o.rfd")));
}

}  // namespace
}  // namespace rf
