// ringfeed-convert images SHARD.tar --fields jpg,txt,json,cls: WebDataset samples kept whole as
// samples of several fields (io/fields.h), each field its member's bytes byte for byte, the label
// the chunk's; a sample without a named member refused naming it, a bad image left out with its
// other fields under --skip-bad, and the lists --fields refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/fields.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tests/tools/image_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::FailsWith;
using testing::Jpeg;
using testing::Record;
using testing::Records;
using testing::TarMember;
using testing::TempDir;
using testing::WriteAll;
namespace fs = std::filesystem;

std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

struct Pair {
  std::vector<uint8_t> jpg, txt, json;
  int64_t label;
};

// A shard of n samples (members in the order a WebDataset writer puts them: .cls first), sample
// `broken` (if any) a JPEG cut short.
std::vector<Pair> WriteShard(const std::string& path, int n, int broken = -1) {
  std::vector<Pair> want;
  std::vector<uint8_t> tar;
  for (int i = 0; i < n; ++i) {
    std::string k = "k", caption = "a caption of sample ", json = "{\"i\": ";
    k += std::to_string(1000 + i);  // appended apart: GCC 12's -Wrestrict misfires on "lit" + s
    caption += std::to_string(i);
    json += std::to_string(i);
    json += "}";
    Pair p{Jpeg(20 + i, 24, i), Text(caption), Text(json), i % 3};
    if (i == broken) p.jpg.resize(60);
    TarMember(&tar, k + ".cls", Text(std::to_string(p.label)));
    TarMember(&tar, k + ".jpg", p.jpg);
    TarMember(&tar, k + ".json", p.json);
    TarMember(&tar, k + ".txt", p.txt);
    want.push_back(std::move(p));
  }
  tar.resize(tar.size() + 1024);
  WriteAll(path, tar);
  return want;
}

// Each record split into its fields (the table's order: jpg, txt, json; the label apart).
void ExpectPairs(const std::string& dataset, const std::vector<Pair>& want) {
  Result<Dataset> d = Dataset::Open(dataset);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::vector<format::FieldSpec>& fields = d->header().fields;
  ASSERT_EQ(format::FieldsText(fields),
            "jpg=image/jpeg,txt=text/plain,json=application/json,cls=label");
  const std::vector<Record> got = Records(dataset, "fields");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    format::FieldSpan spans[3];
    std::string why;
    ASSERT_TRUE(format::SplitSample(fields, got[i].bytes.data(), got[i].bytes.size(), spans, &why))
        << why;
    auto part = [&](int k) {
      return std::vector<uint8_t>(got[i].bytes.begin() + spans[k].offset,
                                  got[i].bytes.begin() + spans[k].offset + spans[k].size);
    };
    EXPECT_EQ(part(0), want[i].jpg) << "sample " << i;
    EXPECT_EQ(part(1), want[i].txt) << "sample " << i;
    EXPECT_EQ(part(2), want[i].json) << "sample " << i;
    EXPECT_EQ(got[i].label, want[i].label) << "sample " << i;
  }
}

TEST(ImagesFields, WebDatasetSamplesKeepEveryNamedMemberByteForByte) {
  TempDir t;
  const std::vector<Pair> want = WriteShard(t.File("s.tar"), 30);
  std::string out;
  const Status st = Convert({"images", t.File("s.tar"), "--fields", "jpg,txt,json,cls", "-o",
                             t.File("pairs.rfd"), "--chunk-size", "8KiB"},
                            &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectPairs(t.File("pairs.rfd"), want);
  EXPECT_NE(out.find("30 images (30 JPEG; image/jpeg) of 3 classes"), std::string::npos) << out;
  EXPECT_NE(out.find("each sample's fields: jpg=image/jpeg,txt=text/plain,json=application/json,"
                     "cls=label"),
            std::string::npos)
      << out;
  std::string shown;
  ASSERT_TRUE(Convert({"inspect", t.File("pairs.rfd")}, &shown).ok());
  EXPECT_NE(shown.find("field jpg: image/jpeg (an image field)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("field cls: label (the sample's label)"), std::string::npos) << shown;
  // Given again, a field at a time, the same dataset; without cls, one without labels.
  ASSERT_TRUE(Convert({"images", t.File("s.tar"), "--fields", "jpg", "--fields", "txt,json",
                       "--fields", "cls", "-o", t.File("again.rfd"), "--chunk-size", "8KiB", "-q"})
                  .ok());
  ExpectPairs(t.File("again.rfd"), want);
  ASSERT_TRUE(
      Convert({"images", t.File("s.tar"), "--fields", "txt,jpg", "-o", t.File("u.rfd"), "-q"})
          .ok());
  Result<Dataset> u = Dataset::Open(t.File("u.rfd"));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->header().num_classes, 0u);
  EXPECT_EQ(format::FieldsText(u->header().fields), "txt=text/plain,jpg=image/jpeg");
}

TEST(ImagesFields, ASampleWithoutANamedMemberIsRefusedNamingIt) {
  TempDir t;
  WriteShard(t.File("s.tar"), 5);
  EXPECT_TRUE(FailsWith(Convert({"images", t.File("s.tar"), "--fields", "jpg,caption,cls", "-o",
                                 t.File("x.rfd"), "-q"}),
                        "sample 'k1000' has no k1000.caption, a field --fields names"));
  EXPECT_FALSE(fs::exists(t.File("x.rfd")));
  EXPECT_TRUE(FailsWith(
      Convert({"images", t.File("s.tar"), "--fields", "txt,cls", "-o", t.File("x.rfd"), "-q"}),
      "name one image (jpg, jpeg, png or webp), not 0"));
  EXPECT_TRUE(FailsWith(
      Convert({"images", t.File("s.tar"), "--fields", "jpg,png,cls", "-o", t.File("x.rfd"), "-q"}),
      "not 2"));
  EXPECT_TRUE(FailsWith(Convert({"images", t.File("s.tar"), "--fields", "jpg,txt,txt,cls", "-o",
                                 t.File("x.rfd"), "-q"}),
                        "field 'txt': named twice"));
}

TEST(ImagesFields, AnImageFoldersCaptionsBesideItsImagesAreTheirFields) {
  TempDir t;
  std::vector<std::vector<uint8_t>> images;
  for (int c = 0; c < 2; ++c) {
    std::string folder = "tree/class";
    folder += std::to_string(c);
    fs::create_directories(t.File(folder));
    for (int i = 0; i < 3; ++i) {
      std::string stem = t.File(folder);
      stem += "/img";
      stem += std::to_string(i);
      images.push_back(Jpeg(20 + i, 20 + c, 3 * c + i));
      WriteAll(stem + ".jpg", images.back());
      std::string caption = "caption ";
      caption += std::to_string(3 * c + i);
      WriteAll(stem + ".txt", Text(caption));
    }
  }
  std::string out;
  ASSERT_TRUE(Convert({"images", t.File("tree"), "--fields", "jpg,txt,cls", "--keep-order", "-o",
                       t.File("f.rfd")},
                      &out)
                  .ok())
      << out;
  EXPECT_EQ(out.find("passed over"), std::string::npos) << out;  // the captions are kept
  Result<Dataset> d = Dataset::Open(t.File("f.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(format::FieldsText(d->header().fields), "jpg=image/jpeg,txt=text/plain,cls=label");
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"class0", "class1"}));
  const std::vector<Record> got = Records(t.File("f.rfd"), "fields");
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < got.size(); ++i) {  // the walk's order: class by class, name order
    format::FieldSpan spans[2];
    std::string why;
    ASSERT_TRUE(format::SplitSample(d->header().fields, got[i].bytes.data(), got[i].bytes.size(),
                                    spans, &why))
        << why;
    EXPECT_EQ(std::vector<uint8_t>(got[i].bytes.begin() + spans[0].offset,
                                   got[i].bytes.begin() + spans[0].offset + spans[0].size),
              images[i]);
    std::string caption = "caption ";
    caption += std::to_string(i);
    EXPECT_EQ(std::string(got[i].bytes.begin() + spans[1].offset,
                          got[i].bytes.begin() + spans[1].offset + spans[1].size),
              caption);
    EXPECT_EQ(got[i].label, static_cast<int64_t>(i / 3));
  }
  // An image without its caption is refused naming both, and nothing is written.
  fs::remove(t.File("tree/class1/img2.txt"));
  std::string refusal = "img2.jpg has no ";
  refusal += t.File("tree/class1/img2.txt");
  refusal += " beside it";
  EXPECT_TRUE(FailsWith(
      Convert({"images", t.File("tree"), "--fields", "jpg,txt,cls", "-o", t.File("g.rfd"), "-q"}),
      refusal));
  EXPECT_FALSE(fs::exists(t.File("g.rfd")));
}

TEST(ImagesFields, UnderSkipBadABadImageIsLeftOutWithItsOtherFields) {
  TempDir t;
  std::vector<Pair> want = WriteShard(t.File("s.tar"), 12, 4);
  EXPECT_TRUE(FailsWith(Convert({"images", t.File("s.tar"), "--fields", "jpg,txt,json,cls", "-o",
                                 t.File("x.rfd"), "-q"}),
                        "k1004.jpg"));
  ASSERT_TRUE(Convert({"images", t.File("s.tar"), "--fields", "jpg,txt,json,cls", "--skip-bad",
                       "-o", t.File("x.rfd"), "-q"})
                  .ok());
  want.erase(want.begin() + 4);
  ExpectPairs(t.File("x.rfd"), want);
}

}  // namespace
}  // namespace rf
