// ringfeed-convert images: an ImageFolder tree and WebDataset tars as image records, the
// original bytes byte for byte, labels and class names (io/format.h's class names block); every
// bad input (an empty class, a PNG named .jpg, a truncated, progressive, CMYK, 12-bit or
// 65535x65535 JPEG, an unreadable file) refused naming the file, nothing written. The JPEGs are
// made here with TurboJPEG's encoder; a set of photographs (tools/bench/make_jpeg_set.py) too
// where Python has PIL and scikit-image's data.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tests/tools/image_testing.h"
#include "tools/convert/image_check.h"

namespace rf {
namespace {

using testing::BadImage;
using testing::Convert;
using testing::FailsWith;
using testing::FilesIn;
using testing::Jpeg;
using testing::Record;
using testing::Records;
using testing::TarMember;
using testing::TempDir;
using testing::WriteAll;
namespace fs = std::filesystem;

// Where the frame header (SOF0) of a baseline JPEG starts: its marker's ff.
size_t Sof0(const std::vector<uint8_t>& j) {
  for (size_t i = 2; i + 1 < j.size(); ++i)
    if (j[i] == 0xff && j[i + 1] == 0xc0) return i;
  ADD_FAILURE() << "no SOF0";
  return 0;
}

// An ImageFolder: classes given out of name order, a nested folder, a file that is no image.
struct Folder {
  std::vector<std::string> classes = {"zebra", "cat", "dog"};  // indices 2, 0, 1
  std::vector<Record> expected;                                // in conversion order
};

Folder MakeFolder(const std::string& root) {
  Folder f;
  fs::create_directories(root);
  std::vector<std::vector<Record>> by_class(3);
  int seed = 0;
  for (const std::string& c : f.classes) {
    const int label = c == "cat" ? 0 : c == "dog" ? 1 : 2;
    fs::create_directories(root + "/" + c + "/sub");
    for (int i = 0; i < 3; ++i) {
      // Names sort as a/..., b/..., sub/... in each class.
      const std::string name =
          i == 2 ? "sub/c.JPEG" : std::string(1, static_cast<char>('a' + i)) + ".jpg";
      const std::vector<uint8_t> j = Jpeg(40 + 8 * i + seed, 30 + seed, seed);
      ++seed;
      WriteAll(root + "/" + c + "/" + name, j);
      by_class[label].push_back({j, label});
    }
    WriteAll(root + "/" + c + "/notes.txt", "not an image", 12);
  }
  for (auto& v : by_class) f.expected.insert(f.expected.end(), v.begin(), v.end());
  return f;
}

void ExpectRecords(const std::vector<Record>& got, const std::vector<Record>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].bytes, want[i].bytes) << "record " << i;
    EXPECT_EQ(got[i].label, want[i].label) << "record " << i;
  }
}

TEST(ImagesFolder, ConvertsByteForByteWithLabelsAndClassNames) {
  TempDir t;
  const Folder f = MakeFolder(t.File("tree"));
  std::string out;
  const Status st =
      Convert({"images", t.File("tree"), "-o", t.File("d.rfd"), "--keep-order"}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectRecords(Records(t.File("d.rfd")), f.expected);
  Result<Dataset> d = Dataset::Open(t.File("d.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"cat", "dog", "zebra"}));
  EXPECT_EQ(d->header().num_classes, 3u);
  EXPECT_EQ(d->header().label_dtype, DType::kUInt8);
  EXPECT_NE(out.find("9 images (9 JPEG; image/jpeg) of 3 classes"), std::string::npos) << out;
  EXPECT_NE(out.find("passed over 3 files that are not images"), std::string::npos) << out;
}

TEST(ImagesFolder, ClassNamesInEveryShardAndKeptByRecompress) {
  TempDir t;
  const Folder f = MakeFolder(t.File("tree"));
  ASSERT_TRUE(Convert({"images", t.File("tree"), "-o", t.File("d.rfd"), "--shards", "2",
                       "--chunk-size", "4KiB", "--compress", "zstd", "--keep-order", "-q"})
                  .ok());
  ExpectRecords(Records(t.File("d.rfd")), f.expected);
  const std::vector<std::string> names = {"cat", "dog", "zebra"};
  for (const char* shard : {"d-00000-of-00002.rfd", "d-00001-of-00002.rfd"})
    EXPECT_EQ(Dataset::Open(t.File(shard))->class_names(), names) << shard;
  ASSERT_TRUE(Convert({"recompress", t.File("d.rfd"), "-o", t.File("e.rfd"), "-q"}).ok());
  EXPECT_EQ(Dataset::Open(t.File("e.rfd"))->class_names(), names);
  ExpectRecords(Records(t.File("e.rfd")), f.expected);
}

// Without --keep-order: the same records, in a fixed shuffle of the walk's order (the same on
// every run and at every thread count), which mixes the classes.
TEST(ImagesFolder, ByDefaultTheImagesAreAFixedShuffleOfTheWalksOrder) {
  TempDir t;
  const Folder f = MakeFolder(t.File("tree"));
  ASSERT_TRUE(Convert({"images", t.File("tree"), "-o", t.File("a.rfd"), "-q"}).ok());
  ASSERT_TRUE(
      Convert({"images", t.File("tree"), "-o", t.File("b.rfd"), "--threads", "3", "-q"}).ok());
  const std::vector<Record> a = Records(t.File("a.rfd")), b = Records(t.File("b.rfd"));
  ASSERT_EQ(a.size(), f.expected.size());
  // Each record as "label:bytes".
  const auto text = [](int64_t label, const std::vector<uint8_t>& bytes) {
    std::string t = std::to_string(label) + ":";
    t.append(bytes.begin(), bytes.end());
    return t;
  };
  std::vector<std::string> got, want;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].bytes, b[i].bytes) << i;
    got.push_back(text(a[i].label, a[i].bytes));
    want.push_back(text(f.expected[i].label, f.expected[i].bytes));
  }
  EXPECT_NE(got, want);  // not the walk's order
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);  // the same records, each with its own label
  // The header says how the images were ordered, with the shuffle's seed.
  EXPECT_EQ(Dataset::Open(t.File("a.rfd"))->header().origin,
            "imagefolder;order=shuffled;seed=0x696d616765735f31");
  ASSERT_TRUE(
      Convert({"images", t.File("tree"), "-o", t.File("k.rfd"), "--keep-order", "-q"}).ok());
  EXPECT_EQ(Dataset::Open(t.File("k.rfd"))->header().origin, "imagefolder;order=walk");
}

// --list-images: OUT.images.tsv names each sample's source file and label in the dataset's order
// (the shuffle's), so sample i's bytes are its file's; the summary names the list.
TEST(ImagesFolder, TheImageListNamesEachSamplesSourceInTheDatasetsOrder) {
  TempDir t;
  MakeFolder(t.File("tree"));
  std::string out;
  ASSERT_TRUE(
      Convert({"images", t.File("tree"), "-o", t.File("a.rfd"), "--list-images"}, &out).ok());
  EXPECT_NE(out.find("listed each sample's source (--list-images) in " + t.File("a.images.tsv")),
            std::string::npos)
      << out;
  const std::vector<Record> a = Records(t.File("a.rfd"));
  const std::vector<uint8_t> raw = testing::ReadAll(t.File("a.images.tsv"));
  std::string list(raw.begin(), raw.end());
  ASSERT_TRUE(list.starts_with("# ringfeed-convert images: the source of each sample of " +
                               t.File("a.rfd")))
      << list;
  list = list.substr(list.find('\n') + 1);
  size_t i = 0;
  for (size_t at = 0; at < list.size(); ++i) {
    const size_t end = list.find('\n', at);
    ASSERT_NE(end, std::string::npos);
    const std::string line = list.substr(at, end - at);
    at = end + 1;
    const size_t tab1 = line.find('\t'), tab2 = line.rfind('\t');
    ASSERT_NE(tab1, tab2) << line;
    ASSERT_LT(i, a.size());
    EXPECT_EQ(line.substr(0, tab1), std::to_string(i));
    EXPECT_EQ(testing::ReadAll(line.substr(tab1 + 1, tab2 - tab1 - 1)), a[i].bytes) << line;
    EXPECT_EQ(line.substr(tab2 + 1), std::to_string(a[i].label)) << line;
  }
  EXPECT_EQ(i, a.size());
}

// ---- WebDataset

std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

void EndTar(std::vector<uint8_t>* tar) { tar->resize(tar->size() + 1024); }

TEST(ImagesWebDataset, TarShardsConvertInOrderWithTheirLabels) {
  TempDir t;
  std::vector<Record> want;
  for (int s = 0; s < 2; ++s) {
    std::vector<uint8_t> tar;
    for (int i = 0; i < 4; ++i) {
      char k[32];  // "s1/3"; a key may hold a folder
      std::snprintf(k, sizeof k, "s%d/%d", s, i);
      const std::vector<uint8_t> j = Jpeg(33 + i, 17 + s, s * 10 + i);
      const int64_t label = (s * 4 + i) * 3 % 7;
      TarMember(&tar, std::string(k) + ".cls", Text(std::to_string(label) + "\n"));
      TarMember(&tar, std::string(k) + ".jpg", j);
      TarMember(&tar, std::string(k) + ".json", Text("{}"));
      want.push_back({j, label});
    }
    EndTar(&tar);
    WriteAll(t.File("shard" + std::to_string(s) + ".tar"), tar);
  }
  std::string out;
  const Status st =
      Convert({"images", t.File("shard0.tar"), t.File("shard1.tar"), "-o", t.File("w.rfd")}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectRecords(Records(t.File("w.rfd")), want);
  Result<Dataset> d = Dataset::Open(t.File("w.rfd"));
  EXPECT_EQ(d->header().num_classes, 7u);  // one more than the largest label, 6
  EXPECT_TRUE(d->class_names().empty());
  EXPECT_NE(out.find("8 images (8 JPEG; image/jpeg) of 7 classes"), std::string::npos) << out;
}

TEST(ImagesWebDataset, ASampleWithoutLabelOrImageOrWithABadLabelIsRefused) {
  TempDir t;
  const std::vector<uint8_t> j = Jpeg(16, 16, 1);
  struct Case {
    std::vector<std::pair<std::string, std::vector<uint8_t>>> members;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{{"a.jpg", j}, {"b.jpg", j}, {"b.cls", Text("1")}}, "sample 'a' has no label (a.cls)"},
      {{{"a.cls", Text("1")}}, "sample 'a' has no image (a.jpg, .png or .webp)"},
      {{{"a.jpg", j}, {"a.cls", Text("-1")}}, "a.cls: the label '-1' is not an integer"},
      {{{"a.jpg", j}, {"a.cls", Text("cat")}}, "a.cls: the label 'cat' is not an integer"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> tar;
    for (const auto& [name, data] : c.members) TarMember(&tar, name, data);
    EndTar(&tar);
    WriteAll(t.File("x.tar"), tar);
    const Status st = Convert({"images", t.File("x.tar"), "-o", t.File("x.rfd"), "-q"});
    EXPECT_TRUE(FailsWith(st, c.fragment));
    EXPECT_TRUE(FailsWith(st, t.File("x.tar")));
    EXPECT_FALSE(fs::exists(t.File("x.rfd")));
  }
  std::vector<uint8_t> tar;
  TarMember(&tar, "a.jpg", j);
  WriteAll(t.File("cut.tar"), std::vector<uint8_t>(tar.begin(), tar.end() - 100));
  EXPECT_TRUE(FailsWith(Convert({"images", t.File("cut.tar"), "-o", t.File("x.rfd"), "-q"}),
                        "tar file ends without its end-of-archive blocks (truncated?)"));
}

// ---- bad images

TEST(ImagesBadInput, EachBadImageIsRefusedNamingTheFileAndNothingIsWritten) {
  const std::vector<uint8_t> good = Jpeg(48, 32, 3), big = Jpeg(256, 256, 4);
  std::vector<uint8_t> twelve = good, huge = good, lossless = good;
  const size_t sof = Sof0(good);
  twelve[sof + 4] = 12;                                       // precision
  for (size_t i = sof + 5; i < sof + 9; ++i) huge[i] = 0xff;  // 65535 x 65535
  lossless[sof + 1] = 0xc3;
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
  const std::vector<BadImage> cases = {
      {"png.jpg", png, "PNG: truncated: the data ends inside the IHDR chunk"},
      {"cut.jpg", std::vector<uint8_t>(big.begin(), big.begin() + big.size() / 2),
       "truncated: no end-of-image marker after the scan"},
      {"cut-header.jpg", std::vector<uint8_t>(good.begin(), good.begin() + 100),
       "truncated: its header ends before the first scan"},
      {"lossless.jpg", lossless, "a lossless JPEG (SOF3): libjpeg-turbo does not decode it"},
      {"twelve.jpg", twelve, "12-bit samples: only 8-bit JPEGs are stored"},
      {"huge.jpg", huge, "65535x65535 pixels, more than --max-image-side 16384 a side"},
      {"empty.jpg", {}, "an empty file, not an image"},
      // Issue 40: ff d8 alone said "not a JPEG (it starts with bytes ff d8, not ff d8)".
      {"two.jpg",
       {0xff, 0xd8},
       "truncated: 2 bytes, where a JPEG needs its markers (ff d8, a frame header, a scan, ff d9)"},
      {"one.jpg",
       {0xff},
       "truncated: 1 byte, where a JPEG needs its markers (ff d8, a frame header, a scan, ff d9)"},
      {"a.jpg", {0x41}, "not an image: it starts with bytes 41"},
      {"ab.jpg", {0x41, 0x42, 0x43}, "not an image: it starts with bytes 41 42 43"},
  };
  for (const BadImage& c : cases) {
    TempDir t;
    const Folder f = MakeFolder(t.File("tree"));
    WriteAll(t.File("tree/dog/") + c.name, c.bytes);
    const Status st = Convert({"images", t.File("tree"), "-o", t.File("d.rfd"), "-q"});
    EXPECT_TRUE(FailsWith(st, "1 image refused, nothing written: " + t.File("tree/dog/") + c.name +
                                  ": " + c.fragment))
        << c.name;
    EXPECT_FALSE(st.IsUsage());  // a data error: exit 1
    EXPECT_EQ(FilesIn(t.path()), std::vector<std::string>{"tree"}) << c.name;  // no temporaries
  }
}

TEST(ImagesBadInput, HugeDimensionsAreCheckedFromTheHeaderAlone) {
  // Only the frame header: a decoder would allocate 12 GB for it; CheckImage allocates nothing.
  const std::vector<uint8_t> j = {0xff, 0xd8, 0xff, 0xc0, 0, 11,   8, 0xff,
                                  0xff, 0xff, 0xff, 1,    1, 0x11, 0};
  ImageHeader info;
  EXPECT_EQ(convert::CheckImage(j.data(), j.size(), 16384, &info),
            "65535x65535 pixels, more than --max-image-side 16384 a side");
  const std::vector<uint8_t> good = Jpeg(40, 20, 1);
  EXPECT_EQ(convert::CheckImage(good.data(), good.size(), 16384, &info), "");
  EXPECT_EQ(info.width, 40u);
  EXPECT_EQ(info.height, 20u);
  EXPECT_EQ(info.kind, "baseline");
  EXPECT_EQ(convert::CheckImage(good.data(), good.size(), 39, &info),
            "40x20 pixels, more than --max-image-side 39 a side");
}

TEST(ImagesBadInput, EveryBadFileIsNamedInOneLineAndUnreadableAndEmptyClassesToo) {
  TempDir t;
  MakeFolder(t.File("tree"));
  WriteAll(t.File("tree/cat/x.jpg"), "GIF89a", 6);
  fs::create_symlink(t.File("nowhere.jpg"), t.File("tree/zebra/gone.jpg"));  // cannot be opened
  const Status st = Convert({"images", t.File("tree"), "-o", t.File("d.rfd"), "-q"});
  EXPECT_TRUE(FailsWith(st, "2 images refused, nothing written: " + t.File("tree/cat/x.jpg") +
                                ": GIF data: JPEG, PNG and WebP are stored; " +
                                t.File("tree/zebra/gone.jpg") + ": cannot be read"));
  EXPECT_EQ(st.ToString().find('\n'), std::string::npos);
  EXPECT_FALSE(fs::exists(t.File("d.rfd")));

  TempDir e;
  MakeFolder(e.File("tree"));
  fs::create_directories(e.File("tree/empty"));
  WriteAll(e.File("tree/empty/readme.txt"), "x", 1);
  EXPECT_TRUE(FailsWith(Convert({"images", e.File("tree"), "-o", e.File("d.rfd"), "-q"}),
                        "class folder 2 holds no image (.jpg, .jpeg, ...): an empty class"));
  EXPECT_FALSE(fs::exists(e.File("d.rfd")));
}

// ---- photographs (tools/bench/make_jpeg_set.py), where Python has what the script needs

TEST(ImagesPhotos, ASmallGeneratedSetOfPhotographsConverts) {
  TempDir t;
  const std::string cmd = "/usr/bin/python3 " + std::string(RINGFEED_SOURCE_DIR) +
                          "/tools/bench/make_jpeg_set.py --count 50 --seed 3 -o " +
                          t.File("photos") + " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "no python3-pil or python3-skimage";
  std::string out;
  const Status st = Convert({"images", t.File("photos"), "-o", t.File("p.rfd")}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::vector<Record> r = Records(t.File("p.rfd"));
  ASSERT_EQ(r.size(), 50u);
  Result<Dataset> d = Dataset::Open(t.File("p.rfd"));
  EXPECT_EQ(d->class_names().size(), d->header().num_classes);
  for (const Record& rec : r) {
    ImageHeader info;
    EXPECT_EQ(convert::CheckImage(rec.bytes.data(), rec.bytes.size(), 16384, &info), "");
  }
}

}  // namespace
}  // namespace rf
