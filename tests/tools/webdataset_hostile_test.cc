// ringfeed-convert images against hostile WebDataset tars (issue 40): a pax or GNU long-name
// header was allocated at the size it declared (a 4 KiB sparse tar declaring a 2 GiB pax header
// took 2.1 GB; at 8 or 64 GiB it ended in "out of memory (--memory-budget ...)", naming no file).
// Each is refused naming the tar and the header's byte, in bounded memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tests/tools/image_testing.h"

namespace rf {
namespace {

using testing::TempDir;

std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

// A tar of one good sample (a.jpg, a.cls), then a header of `type` declaring `size` bytes, its
// data a hole: the file is sparse, a few KiB on disk. Returns where that header is.
uint64_t WriteTarDeclaring(const std::string& path, char type, uint64_t size) {
  std::vector<uint8_t> tar;
  testing::TarMember(&tar, "a.jpg", testing::Jpeg(16, 16, 1));
  testing::TarMember(&tar, "a.cls", Text("1"));
  const uint64_t header = tar.size();
  testing::TarHeader(&tar, "././@LongLink", size, type);
  testing::WriteAll(path, tar);
  std::filesystem::resize_file(path, tar.size() + (size + 511) / 512 * 512 + 1024);
  return header;
}

TEST(WebDatasetHostile, LongNameAndPaxHeadersOfGigabytesAreRefusedNamingTheTarAndTheByte) {
  TempDir t;
  const std::string tar = t.File("s.tar");
  const std::string program = testing::ProgramPath("ringfeed-convert");
  struct Case {
    char type;
    uint64_t size;
    std::string what;
  };
  for (const Case& c : {Case{'x', uint64_t{2} << 30, "a pax extended header"},
                        Case{'x', uint64_t{8} << 30, "a pax extended header"},
                        Case{'x', uint64_t{64} << 30, "a pax extended header"},
                        Case{'x', (uint64_t{64} << 10) + 1, "a pax extended header"},
                        Case{'L', uint64_t{2} << 30, "a GNU long name header"},
                        Case{'L', 4097, "a GNU long name header"}}) {
    const uint64_t header = WriteTarDeclaring(tar, c.type, c.size);
    const testing::MeasuredRun r =
        testing::RunMeasured({program, "images", tar, "-q", "-o", t.File("o.rfd")});
    EXPECT_EQ(r.rc, 1) << c.size;
    EXPECT_EQ(r.output, "ringfeed-convert: " + tar + ": at byte " + std::to_string(header) + ": " +
                            c.what + " of " + std::to_string(c.size) + " bytes, more than the " +
                            (c.type == 'L' ? "4096" : "65536") +
                            " this reads (a member's path is a few KiB at most)\n");
    EXPECT_LT(r.max_rss_kib, 100u * 1024) << c.size;
    EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"s.tar"});
  }
}

TEST(WebDatasetHostile, LongNameAndPaxHeadersWithinTheBoundsNameTheirMember) {
  TempDir t;
  const std::string dir(200, 'd');
  std::vector<uint8_t> tar;
  const std::string jpg = dir + "/k.jpg", cls = dir + "/k.cls";
  testing::TarMember(&tar, "././@LongLink", Text(jpg + '\0'), 'L');
  testing::TarMember(&tar, "x.jpg", testing::Jpeg(16, 16, 1));  // named by the long name
  const std::string record = " path=" + cls + "\n";
  const std::string len = std::to_string(record.size() + 3);  // its own 3 digits
  testing::TarMember(&tar, "pax", Text(len + record), 'x');
  testing::TarMember(&tar, "y.cls", Text("4"));  // named by the pax path
  tar.resize(tar.size() + 1024);
  testing::WriteAll(t.File("s.tar"), tar);
  std::string out;
  const Status st = testing::Convert({"images", t.File("s.tar"), "-o", t.File("o.rfd")}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_NE(out.find("1 images (1 JPEG; image/jpeg) of 5 classes"), std::string::npos) << out;
}

// A key with two .cls members converted with exit 0, the later label winning; two images were
// refused already. Either is refused naming the tar and the second member's header byte.
TEST(WebDatasetHostile, AKeyWithTwoLabelsOrTwoImagesIsRefusedNamingTheSecond) {
  TempDir t;
  const std::vector<uint8_t> j = testing::Jpeg(16, 16, 1);
  std::vector<uint8_t> tar;
  testing::TarMember(&tar, "a.jpg", j);
  testing::TarMember(&tar, "a.cls", Text("1"));
  const uint64_t second = tar.size();
  testing::TarMember(&tar, "a.cls", Text("2"));
  tar.resize(tar.size() + 1024);
  testing::WriteAll(t.File("s.tar"), tar);
  Status st = testing::Convert({"images", t.File("s.tar"), "-q", "-o", t.File("o.rfd")});
  EXPECT_EQ(st.ToString(), t.File("s.tar") + ": at byte " + std::to_string(second) +
                               ": sample 'a' holds two labels (a.cls twice)");
  tar.clear();
  testing::TarMember(&tar, "a.jpg", j);
  const uint64_t jpeg = tar.size();
  testing::TarMember(&tar, "a.jpeg", j);
  testing::TarMember(&tar, "a.cls", Text("1"));
  tar.resize(tar.size() + 1024);
  testing::WriteAll(t.File("s.tar"), tar);
  st = testing::Convert({"images", t.File("s.tar"), "-q", "-o", t.File("o.rfd")});
  EXPECT_EQ(st.ToString(), t.File("s.tar") + ": at byte " + std::to_string(jpeg) +
                               ": sample 'a' holds two images (a.jpg, a.jpeg)");
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"s.tar"});
}

// Found writing the tar fuzz target: a member's name is any bytes, and one holding a newline made
// a refusal two lines. Control bytes are written \xNN.
TEST(WebDatasetHostile, AMemberNameWithANewlineIsNamedOnOneLine) {
  TempDir t;
  std::vector<uint8_t> tar;
  testing::TarMember(&tar, "a\nb.jpg", testing::Jpeg(16, 16, 1));
  testing::TarMember(&tar, "a\nb.cls", Text("x\ty"));
  tar.resize(tar.size() + 1024);
  testing::WriteAll(t.File("s.tar"), tar);
  EXPECT_EQ(testing::Convert({"images", t.File("s.tar"), "-q", "-o", t.File("o.rfd")}).ToString(),
            t.File("s.tar") + ": at byte " + std::to_string(tar.size() - 1024 - 512) +
                ": a\\x0ab.cls: the label 'x\\x09y' is not an integer from 0 to 2^31 - 1");
  tar.clear();
  testing::TarMember(&tar, "a\nb.jpg", testing::Jpeg(16, 16, 1));
  tar.resize(tar.size() + 1024);
  testing::WriteAll(t.File("s.tar"), tar);
  EXPECT_EQ(testing::Convert({"images", t.File("s.tar"), "-q", "-o", t.File("o.rfd")}).ToString(),
            t.File("s.tar") + ": sample 'a\\x0ab' has no label (a\\x0ab.cls)");
}

}  // namespace
}  // namespace rf
