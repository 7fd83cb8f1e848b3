// The loader over samples of several fields (BatchKind::kFields, pipeline/fields/field_split.h):
// each batch's fields by name, each sample's fields its own (every field of sample g is sample
// g's), every sample once an epoch; the image field decoded as image records are (the same pixels
// for the same index), bad images skipped with their other fields; and the options refused.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/fields.h"
#include "pipeline/loader.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

constexpr const char* kFields = "jpg=image/jpeg,txt=tokens:int32,emb=tensor:int64:2,cls=label";

// Sample i's caption: i % 5 ids (some empty), and its tensor.
std::vector<int32_t> Caption(uint64_t i) {
  std::vector<int32_t> ids;
  for (uint64_t k = 0; k < i % 5; ++k) ids.push_back(static_cast<int32_t>(100 * i + k));
  return ids;
}
std::vector<int64_t> Embedding(uint64_t i) {
  return {static_cast<int64_t>(i), -static_cast<int64_t>(i)};
}

Status WritePairs(const std::string& path, const std::vector<std::vector<uint8_t>>& jpegs) {
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kFields;
  spec.fields = format::ParseFields(kFields).value();
  spec.num_classes = 5;
  WriterOptions o;
  o.chunk_bytes = 16384;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> w, DatasetWriter::Create(path, spec, o));
  for (size_t i = 0; i < jpegs.size(); ++i) {
    const std::vector<int32_t> txt = Caption(i);
    const std::vector<int64_t> emb = Embedding(i);
    const uint8_t* parts[3] = {jpegs[i].data(), reinterpret_cast<const uint8_t*>(txt.data()),
                               reinterpret_cast<const uint8_t*>(emb.data())};
    const uint64_t sizes[3] = {jpegs[i].size(), txt.size() * 4, 16};
    std::vector<uint8_t> r;
    format::EncodeSample(spec.fields, parts, sizes, &r);
    const uint64_t offsets[2] = {0, r.size()};
    const uint8_t label = static_cast<uint8_t>(i % 5);
    RF_RETURN_IF_ERROR(w->AppendRecords(r.data(), offsets, &label, 1));
  }
  return w->Finish();
}

const LoadedBatch::View& ViewOf(const LoadedBatch& b, int v) {
  return b.views().at(static_cast<size_t>(v));
}

// Checks every field of the batch against its samples' own; returns their indices.
std::vector<uint64_t> CheckBatch(const LoadedBatch& b,
                                 const std::vector<std::vector<uint8_t>>& jpegs, bool decoded) {
  const std::vector<LoadedBatch::Field>& f = b.fields();
  EXPECT_EQ(f.size(), 4u);
  if (f.size() != 4) return {};
  EXPECT_EQ(f[0].name, "jpg");
  EXPECT_EQ(f[1].name, "txt");
  EXPECT_EQ(f[2].name, "emb");
  EXPECT_EQ(f[3].name, "cls");
  EXPECT_EQ(f[3].where, LoadedBatch::Field::kLabels);
  EXPECT_EQ(f[0].where, decoded ? LoadedBatch::Field::kSamples : LoadedBatch::Field::kViews);
  const LoadedBatch::View& txt = ViewOf(b, f[1].values);
  const auto* txt_offsets = static_cast<const int64_t*>(ViewOf(b, f[1].offsets).data);
  EXPECT_EQ(txt.dtype, DType::kInt32);
  EXPECT_EQ(f[2].offsets, -1);
  const LoadedBatch::View& emb = ViewOf(b, f[2].values);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{b.size(), 2}));
  EXPECT_EQ(ViewOf(b, f[1].offsets).shape, std::vector<int64_t>{int64_t{b.size()} + 1});
  for (uint32_t k = 0; k < b.size(); ++k) {
    const uint64_t g = b.indices()[k];
    EXPECT_EQ(b.labels()[k], static_cast<int64_t>(g % 5));
    const auto* ids = static_cast<const int32_t*>(txt.data);
    EXPECT_EQ(std::vector<int32_t>(ids + txt_offsets[k], ids + txt_offsets[k + 1]), Caption(g));
    const auto* e = static_cast<const int64_t*>(emb.data) + 2 * k;
    EXPECT_EQ(std::vector<int64_t>(e, e + 2), Embedding(g));
    if (!decoded) {
      const LoadedBatch::View& jpg = ViewOf(b, f[0].values);
      const auto* off = static_cast<const int64_t*>(ViewOf(b, f[0].offsets).data);
      const auto* bytes = static_cast<const uint8_t*>(jpg.data);
      EXPECT_EQ(std::vector<uint8_t>(bytes + off[k], bytes + off[k + 1]), jpegs[g]);
    }
  }
  return b.indices();
}

class LoaderFields : public ::testing::Test {
 protected:
  void SetUp() override {
    jpegs_ = testing::MakeJpegs(90);
    path_ = dir_.File("pairs.rfd");
    ASSERT_TRUE(WritePairs(path_, jpegs_).ok());
  }
  testing::TempDir dir_;
  std::vector<std::vector<uint8_t>> jpegs_;
  std::string path_;
};

TEST_F(LoaderFields, EachBatchHandsOutEveryFieldByNameEachSampleOnceAnEpoch) {
  LoaderOptions o = testing::HostOptions(path_, 16);
  o.image.size = 0;  // the image field's bytes as stored
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  for (uint64_t epoch : {0u, 1u}) {
    ASSERT_TRUE((*l)->StartEpoch(epoch, 0).ok());
    std::multiset<uint64_t> seen;
    for (;;) {
      Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (*b == nullptr) break;
      for (uint64_t g : CheckBatch(**b, jpegs_, false)) seen.insert(g);
    }
    ASSERT_EQ(seen.size(), jpegs_.size());
    EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()).size(), jpegs_.size());
  }
}

// Every sample's decoded image, by its global index.
std::map<uint64_t, std::vector<uint8_t>> DecodedPixels(const LoaderOptions& o,
                                                       const std::vector<std::vector<uint8_t>>& j,
                                                       bool fields) {
  std::map<uint64_t, std::vector<uint8_t>> pixels;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return pixels;
  EXPECT_TRUE((*l)->StartEpoch(1, 0).ok());
  for (;;) {
    Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || *b == nullptr) break;
    const LoadedBatch& batch = **b;
    if (fields) CheckBatch(batch, j, true);
    EXPECT_EQ(batch.shape(), (std::vector<int64_t>{batch.size(), 32, 32, 3}));
    for (uint32_t k = 0; k < batch.size(); ++k) {
      const auto* p = static_cast<const uint8_t*>(batch.samples()) + size_t{k} * 32 * 32 * 3;
      pixels[batch.indices()[k]].assign(p, p + 32 * 32 * 3);
    }
  }
  return pixels;
}

LoaderOptions DecodedOptions(const std::string& path) {
  LoaderOptions o = testing::HostOptions(path, 16);
  o.output.dtype = DType::kUInt8;
  o.output.layout = SampleLayout::kNHWC;
  o.image.size = 32;
  o.image.threads = 2;
  o.output_buffers = 4;
  return o;
}

TEST_F(LoaderFields, TheImageFieldDecodesToTheSamePixelsAsImageRecordsBesideTheOtherFields) {
  const std::string plain = dir_.File("plain.rfd");
  ASSERT_TRUE(testing::WriteJpegDataset(plain, jpegs_).ok());
  const auto want = DecodedPixels(DecodedOptions(plain), jpegs_, false);
  const auto got = DecodedPixels(DecodedOptions(path_), jpegs_, true);
  ASSERT_EQ(want.size(), jpegs_.size());
  EXPECT_EQ(got, want);  // the crop is keyed by (seed, epoch, index), not by the chunks
}

TEST_F(LoaderFields, ABadImageIsSkippedWithItsOtherFields) {
  std::vector<std::vector<uint8_t>> broken = jpegs_;
  broken[7].resize(40);  // a JPEG cut short: only its decode finds it
  broken[50] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::string path = dir_.File("broken.rfd");
  ASSERT_TRUE(WritePairs(path, broken).ok());
  LoaderOptions o = DecodedOptions(path);
  o.image.skip_bad_records = true;
  const auto got = DecodedPixels(o, broken, true);  // the other fields checked against their own
  EXPECT_EQ(got.size(), jpegs_.size() - 2);
  EXPECT_EQ(got.count(7), 0u);
  EXPECT_EQ(got.count(50), 0u);
  // Without skipping, the first bad image stops the epoch naming the file.
  o.image.skip_bad_records = false;
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  ASSERT_TRUE(l.ok());
  const Status st = testing::FirstErrorOfEpoch(**l);
  EXPECT_TRUE(st.IsCorruption()) << "the epoch ended without naming its bad images: "
                                 << st.ToString();
  EXPECT_NE(st.ToString().find("broken.rfd"), std::string::npos) << st.ToString();
}

TEST_F(LoaderFields, OptionsThatWouldDoNothingAreRefused) {
  LoaderOptions o = testing::HostOptions(path_, 16);
  o.image.size = 0;
  o.output.mean = {1, 2, 3};
  o.output.stddev = {1, 2, 3};
  EXPECT_NE(Loader::Open(o).status().message().find("mean and std: fields records are not"),
            std::string::npos);
  o = testing::HostOptions(path_, 16);
  o.image.size = 0;
  o.image.crop = ImageCrop::kCenter;
  EXPECT_NE(Loader::Open(o).status().message().find("image_crop"), std::string::npos);
  // An image option on samples without an image field (image_size's default decodes none).
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kFields;
  spec.fields = format::ParseFields("txt=tokens:uint16").value();
  spec.has_labels = false;
  const std::string text = dir_.File("text.rfd");
  auto w = DatasetWriter::Create(text, spec, WriterOptions{});
  ASSERT_TRUE(w.ok());
  const std::vector<uint8_t> r = {2, 0, 0, 0, 7, 0};
  const uint64_t offsets[2] = {0, r.size()};
  ASSERT_TRUE((*w)->AppendRecords(r.data(), offsets, nullptr, 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  o = testing::HostOptions(text, 1);
  EXPECT_TRUE(Loader::Open(o).ok()) << Loader::Open(o).status().ToString();
  o.image.crop = ImageCrop::kCenter;
  EXPECT_NE(Loader::Open(o).status().message().find("image_crop: this dataset's batches are no "
                                                    "decoded images"),
            std::string::npos)
      << Loader::Open(o).status().ToString();
  // Two image fields: which one to decode is the user's to say.
  spec.fields = format::ParseFields("a=image/jpeg,b=image/png").value();
  const std::string two = dir_.File("two.rfd");
  auto w2 = DatasetWriter::Create(two, spec, WriterOptions{});
  ASSERT_TRUE(w2.ok());
  const std::vector<uint8_t> r2 = {1, 0, 0, 0, 1, 0, 0, 0, 7, 8};
  const uint64_t offsets2[2] = {0, r2.size()};
  ASSERT_TRUE((*w2)->AppendRecords(r2.data(), offsets2, nullptr, 1).ok());
  ASSERT_TRUE((*w2)->Finish().ok());
  o = testing::HostOptions(two, 1);
  EXPECT_NE(Loader::Open(o).status().message().find("several image fields (a, b)"),
            std::string::npos)
      << Loader::Open(o).status().ToString();
  o.image.size = 0;
  EXPECT_TRUE(Loader::Open(o).ok());
}

}  // namespace
}  // namespace rf
