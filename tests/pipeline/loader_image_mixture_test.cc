// A mixture of image/jpeg datasets through the library's loader (pipeline/images/image_stage.h over
// pipeline/sources/mixed_source.h): every sample is its own dataset's record decoded under the crop
// of its mixture key (seed, 0, e_i T + first_i + j), so the first dataset's first epoch is cropped
// as a loader of that dataset alone crops it, and centre crops equal the single-dataset loader's
// everywhere; a state saved while the stage has decoded ahead, or a restart mid-epoch, gives the
// batches of a run never stopped, bit for bit; a bad record is named in its own dataset; datasets
// with other class lists, or an image dataset mixed with another kind, are refused naming both.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decode/jpeg_image.h"
#include "io/dataset.h"
#include "pipeline/loader.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using Jpegs = std::vector<std::vector<uint8_t>>;

constexpr uint32_t kSize = 32;
constexpr size_t kSampleBytes = 3 * kSize * kSize;  // uint8 NHWC

// One batch as handed out: its place, its samples' mixture indices, labels and pixels.
struct Taken {
  uint64_t epoch = 0, position = 0;
  std::vector<uint64_t> indices;
  std::vector<int64_t> labels;
  std::vector<uint8_t> pixels;
  bool operator==(const Taken&) const = default;
};

class LoaderImageMixture : public ::testing::Test {
 protected:
  // A: JPEGs 0 to 39 of MakeJpegs(70), B: 40 to 69, so mixture index g is JPEG g (first_B = 40).
  void SetUp() override {
    all_ = testing::MakeJpegs(70);
    Write("a.rfd", Jpegs(all_.begin(), all_.begin() + 40));
    Write("b.rfd", Jpegs(all_.begin() + 40, all_.end()));
  }
  void Write(const std::string& name, const Jpegs& jpegs,
             const std::vector<std::string>& class_names = {}) {
    const uint32_t classes = class_names.empty() ? 5 : static_cast<uint32_t>(class_names.size());
    ASSERT_TRUE(
        testing::WriteJpegDataset(dir_.File(name), jpegs, classes, 16384, {}, class_names).ok());
    auto d = Dataset::Open(dir_.File(name));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    datasets_[name] = std::make_unique<Dataset>(std::move(*d));
  }
  std::vector<const Dataset*> Of(const std::vector<std::string>& names) const {
    std::vector<const Dataset*> out;
    for (const std::string& n : names) out.push_back(datasets_.at(n).get());
    return out;
  }
  // A CPU loader of decoded images (uint8 NHWC, not normalized, size 32) of `weights`.
  static LoaderOptions Options(ImageCrop crop, std::vector<float> weights = {0.7f, 0.3f}) {
    LoaderOptions o = testing::HostOptions("(the datasets given)", 8);
    o.output.dtype = DType::kUInt8;
    o.output.layout = SampleLayout::kNHWC;
    o.image.size = kSize;
    o.image.crop = crop;
    o.image.threads = 2;
    o.output_buffers = 4;  // the stage decodes 2 batches ahead of the consumer
    o.pipeline.weights = std::move(weights);
    return o;
  }
  std::unique_ptr<Loader> Open(const std::vector<std::string>& names, const LoaderOptions& o) {
    auto l = Loader::Create(Of(names), o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }
  // The next `n` batches (on into the next mixture epochs where one ends), with the loader's
  // mixture state after each.
  static std::vector<Taken> Take(Loader& l, size_t n, std::vector<MixtureState>* states = nullptr) {
    std::vector<Taken> out;
    while (out.size() < n) {
      Result<std::shared_ptr<LoadedBatch>> r = l.Next();
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      if (*r == nullptr) {
        EXPECT_TRUE(l.StartEpoch(l.epoch() + 1, 0).ok());
        continue;
      }
      const LoadedBatch& b = **r;
      Taken t{
          b.epoch(), b.position(), b.indices(),
          std::vector<int64_t>(b.labels(), b.labels() + b.size()),
          std::vector<uint8_t>(static_cast<const uint8_t*>(b.samples()),
                               static_cast<const uint8_t*>(b.samples()) + b.size() * kSampleBytes)};
      out.push_back(std::move(t));
      if (states != nullptr) states->push_back(*l.mixture_state());
    }
    return out;
  }

  testing::TempDir dir_;
  Jpegs all_;
  std::map<std::string, std::unique_ptr<Dataset>> datasets_;
};

TEST_F(LoaderImageMixture, EverySampleIsItsRecordDecodedUnderItsMixtureKey) {
  const LoaderOptions o = Options(ImageCrop::kRandomResized);
  auto l = Open({"a.rfd", "b.rfd"}, o);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->plan().kind, BatchKind::kImages);
  EXPECT_EQ(l->sample_shape(), (std::vector<int64_t>{kSize, kSize, 3}));
  EXPECT_NE(l->Describe().find("mixture of 2 datasets"), std::string::npos) << l->Describe();
  EXPECT_NE(l->Describe().find("images 32x32 (random resized crop and flip)"), std::string::npos);
  auto ref = JpegImageDecoder::Create(testing::ImageSpecOf(o));
  ASSERT_TRUE(ref.ok());
  // A single-dataset loader of A: its epoch 0 crops are the mixture's for A's first epoch.
  LoaderOptions alone = o;
  alone.pipeline.weights = {};
  auto a = Loader::Create(*datasets_.at("a.rfd"), alone);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE((*a)->StartEpoch(0, 0).ok());
  std::map<uint64_t, std::vector<uint8_t>> a_epoch0;
  for (const Taken& t : Take(**a, 5)) {
    for (size_t i = 0; i < t.indices.size(); ++i) {
      a_epoch0[t.indices[i]].assign(t.pixels.begin() + i * kSampleBytes,
                                    t.pixels.begin() + (i + 1) * kSampleBytes);
    }
  }
  ASSERT_EQ(a_epoch0.size(), 40u);

  // 3 mixture epochs of 70 samples: A (weight 0.7) goes through about 3.7 of its epochs, B
  // about 2.1. Each dataset's k-th sample taken is of its epoch k / its samples (one rank).
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  const std::vector<Taken> batches = Take(*l, 27);  // 9 a mixture epoch
  uint64_t taken[2] = {0, 0};
  const uint64_t samples[2] = {40, 30}, first[2] = {0, 40};
  size_t compared_alone = 0;
  for (const Taken& t : batches) {
    EXPECT_EQ(t.indices.size() * kSampleBytes, t.pixels.size());
    for (size_t i = 0; i < t.indices.size(); ++i) {
      const uint64_t g = t.indices[i];
      ASSERT_LT(g, 70u);
      const int d = g >= 40 ? 1 : 0;
      const uint64_t e = taken[d]++ / samples[d];
      const uint64_t key = e * 70 + g;  // e_i T + first_i + j, g = first_i + j
      ASSERT_EQ(g - first[d] < samples[d], true);
      EXPECT_EQ(t.labels[i], int64_t((g - first[d]) % 5));
      std::vector<uint8_t> want(kSampleBytes);
      ASSERT_EQ((*ref)->Decode(all_[g].data(), all_[g].size(), 0, key, want.data()), "");
      const std::vector<uint8_t> got(t.pixels.begin() + i * kSampleBytes,
                                     t.pixels.begin() + (i + 1) * kSampleBytes);
      ASSERT_EQ(got, want) << "sample " << g << " of its dataset's epoch " << e;
      if (d == 0 && e == 0) {
        EXPECT_EQ(got, a_epoch0.at(g)) << "sample " << g;
        ++compared_alone;
      }
    }
  }
  EXPECT_EQ(compared_alone, 40u);
  EXPECT_GE(taken[0], 3 * 40u);
  EXPECT_GE(taken[1], 2 * 30u);
}

TEST_F(LoaderImageMixture, CentreCropsAreTheSingleDatasetLoadersForEveryRecord) {
  const LoaderOptions o = Options(ImageCrop::kCenter);
  std::map<uint64_t, std::vector<uint8_t>> alone;  // mixture index -> pixels
  for (const auto& [name, first] : {std::pair<std::string, uint64_t>{"a.rfd", 0}, {"b.rfd", 40}}) {
    LoaderOptions one = o;
    one.pipeline.weights = {};
    auto l = Loader::Create(*datasets_.at(name), one);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    ASSERT_TRUE((*l)->StartEpoch(2, 0).ok());
    for (const Taken& t : Take(**l, first == 0 ? 5 : 4)) {
      for (size_t i = 0; i < t.indices.size(); ++i) {
        alone[first + t.indices[i]].assign(t.pixels.begin() + i * kSampleBytes,
                                           t.pixels.begin() + (i + 1) * kSampleBytes);
      }
    }
  }
  ASSERT_EQ(alone.size(), 70u);
  auto l = Open({"a.rfd", "b.rfd"}, o);
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  size_t seen = 0;
  for (const Taken& t : Take(*l, 18)) {
    for (size_t i = 0; i < t.indices.size(); ++i, ++seen) {
      EXPECT_EQ(std::vector<uint8_t>(t.pixels.begin() + i * kSampleBytes,
                                     t.pixels.begin() + (i + 1) * kSampleBytes),
                alone.at(t.indices[i]))
          << "sample " << t.indices[i];
    }
  }
  EXPECT_EQ(seen, 140u);
}

TEST_F(LoaderImageMixture, AResumeMidEpochGivesTheBatchesOfARunNeverStopped) {
  const LoaderOptions o = Options(ImageCrop::kRandomResized);
  std::vector<Taken> straight;
  std::vector<MixtureState> states;
  {
    auto l = Open({"a.rfd", "b.rfd"}, o);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->StartEpoch(0, 0).ok());
    straight = Take(*l, 22, &states);  // into the third mixture epoch
  }
  // Stopped after batch 4 (in epoch 0), batch 10 (the second of epoch 1: epochs are 9 batches)
  // and batch 8 (epoch 0's last); each state taken while the stage had decoded ahead.
  for (const size_t stop : {4u, 10u, 8u}) {
    LoaderOptions resumed = o;
    resumed.pipeline.mixture = states[stop];
    auto l = Open({"a.rfd", "b.rfd"}, resumed);
    ASSERT_TRUE(l);
    const Taken& last = straight[stop];
    const uint64_t position = last.position + last.indices.size();
    const bool over = position >= 70;
    ASSERT_TRUE(l->StartEpoch(over ? last.epoch + 1 : last.epoch, over ? 0 : position).ok());
    const std::vector<Taken> rest = Take(*l, straight.size() - stop - 1);
    ASSERT_EQ(rest.size(), straight.size() - stop - 1);
    for (size_t k = 0; k < rest.size(); ++k) {
      EXPECT_TRUE(rest[k] == straight[stop + 1 + k]) << "batch " << stop + 1 + k << " of a run "
                                                     << "resumed after batch " << stop;
    }
  }
  // The same loader restarted where its consumer is, after the stage had decoded ahead: the
  // stream goes back to the last batch handed out.
  auto again = Open({"a.rfd", "b.rfd"}, o);
  ASSERT_TRUE(again);
  ASSERT_TRUE(again->StartEpoch(0, 0).ok());
  Take(*again, 3);
  ASSERT_TRUE(again->StartEpoch(0, 24).ok());
  const std::vector<Taken> after = Take(*again, 4);
  for (size_t k = 0; k < after.size(); ++k) EXPECT_TRUE(after[k] == straight[3 + k]) << k;
  // And restored (RestoreMixture) to a state while it had decoded ahead.
  ASSERT_TRUE(again->RestoreMixture(states[4], {}).ok());
  ASSERT_TRUE(again->StartEpoch(0, 40).ok());
  const std::vector<Taken> restored = Take(*again, 3);
  for (size_t k = 0; k < restored.size(); ++k) EXPECT_TRUE(restored[k] == straight[5 + k]) << k;
}

TEST_F(LoaderImageMixture, ABadRecordIsNamedInItsOwnDataset) {
  Jpegs b(all_.begin() + 40, all_.end());
  b[7].resize(b[7].size() / 2);
  Write("bad-b.rfd", b);
  LoaderOptions o = Options(ImageCrop::kCenter);
  o.pipeline.order.shuffle = ShuffleMode::kNone;  // B's first 21 samples in epoch 0: 7 among them
  auto l = Open({"a.rfd", "bad-b.rfd"}, o);
  ASSERT_TRUE(l);
  const Status st = testing::FirstErrorOfEpoch(*l);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_EQ(st.path(), dir_.File("bad-b.rfd"));
  EXPECT_NE(st.message().find(
                "record 7 (sample 7 of the dataset, 47 of the mixture), an image record of"),
            std::string::npos)
      << st.message();
  // Skipped instead: named so too, and the epoch still holds every other sample.
  o.image.skip_bad_records = true;
  auto skipping = Open({"a.rfd", "bad-b.rfd"}, o);
  ASSERT_TRUE(skipping);
  ASSERT_TRUE(skipping->StartEpoch(0, 0).ok());
  size_t seen = 0;
  for (const Taken& t : Take(*skipping, 9)) seen += t.indices.size();
  EXPECT_EQ(seen + skipping->skipped().count, 70u);
  ASSERT_GE(skipping->skipped().count, 1u);
  EXPECT_EQ(skipping->skipped().named[0].rfind("sample 47 (" + dir_.File("bad-b.rfd"), 0), 0u)
      << skipping->skipped().named[0];
}

TEST_F(LoaderImageMixture, DatasetsWithOtherClassListsAreRefusedNamingTheFirstDifference) {
  const Jpegs some(all_.begin(), all_.begin() + 20);
  Write("cats.rfd", some, {"cat", "dog", "fox"});
  Write("cats2.rfd", some, {"cat", "dog", "fox"});
  Write("owls.rfd", some, {"cat", "owl", "fox"});
  Write("more.rfd", some, {"cat", "dog", "fox", "yak"});
  auto refused = [&](const std::vector<std::string>& names, const std::string& what) {
    auto l = Loader::Create(Of(names), Options(ImageCrop::kRandomResized, {1, 1}));
    ASSERT_FALSE(l.ok()) << what;
    EXPECT_TRUE(l.status().IsUsage()) << l.status().ToString();
    EXPECT_EQ(l.status().path(), dir_.File(names[1]));
    EXPECT_NE(l.status().message().find(what), std::string::npos) << l.status().message();
  };
  refused({"cats.rfd", "owls.rfd"},
          "holds other classes than " + dir_.File("cats.rfd") +
              ": its class 1 is \"owl\", not \"dog\" (a label names one class in every dataset "
              "of a mixture, so their class lists must be equal, in the same order)");
  refused({"cats.rfd", "more.rfd"}, "it has 4 class names, not 3 (the first 3 the same)");
  refused({"cats.rfd", "a.rfd"}, "it has none, " + dir_.File("cats.rfd") + " 3 class names");
  // Equal lists mix.
  auto l = Open({"cats.rfd", "cats2.rfd"}, Options(ImageCrop::kRandomResized, {1, 1}));
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->StartEpoch(0, 0).ok());
  EXPECT_EQ(Take(*l, 5).size(), 5u);
}

TEST_F(LoaderImageMixture, AnImageDatasetMixedWithAnotherKindIsRefused) {
  const std::string other = dir_.File("tensors.rfd");
  testing::WritePositionalDataset(other, 50, {});
  auto t = Dataset::Open(other);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (const bool image_first : {true, false}) {
    std::vector<const Dataset*> d = {datasets_.at("a.rfd").get(), &*t};
    if (!image_first) std::swap(d[0], d[1]);
    LoaderOptions o = Options(ImageCrop::kRandomResized);
    if (!image_first) o.image = ImageOptions{};
    auto l = Loader::Create(d, o);
    ASSERT_FALSE(l.ok());
    EXPECT_TRUE(l.status().IsUsage()) << l.status().ToString();
    const std::string jpeg = "image/jpeg bytes records";
    const std::string& path = d[0]->path();
    EXPECT_NE(l.status().message().find("cannot be mixed with " + path + ": it holds "),
              std::string::npos)
        << l.status().message();
    EXPECT_NE(l.status().message().find(jpeg), std::string::npos) << l.status().message();
    EXPECT_NE(l.status().message().find("uint8 samples of shape "), std::string::npos);
    EXPECT_NE(l.status().message().find("a mixture of image datasets (decoded into images) "
                                        "takes image datasets only"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace rf
