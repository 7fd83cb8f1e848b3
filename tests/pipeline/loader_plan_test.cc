// ResolveLoader (pipeline/plan/loader_plan.h): the one place a loader's kind of batch, output
// dtype and decode are decided, for every kind of dataset; what it takes where dtype and
// normalize are not given (the Python face); and the options it refuses for a kind, each named.
#include "pipeline/plan/loader_plan.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "pipeline/loader.h"
#include "tests/pipeline/loader_testing.h"
#include "tests/testing/jpeg_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

class LoaderPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WritePositionalDataset(dir_.File("pixels.rfd"), 64);
    ASSERT_TRUE(testing::WriteDocuments(dir_.File("tokens.rfd"), testing::Documents(50, 30)).ok());
    ASSERT_TRUE(testing::WriteJpegDataset(dir_.File("jpegs.rfd"), testing::MakeJpegs(12)).ok());
    for (const char* name : {"pixels.rfd", "tokens.rfd", "jpegs.rfd"}) {
      Result<Dataset> d = Dataset::Open(dir_.File(name));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      datasets_.push_back(std::make_unique<Dataset>(std::move(d).value()));
    }
  }

  // The plan for dataset `which` (0 pixels, 1 tokens, 2 JPEGs) under `o`.
  Result<LoaderPlan> Plan(size_t which, const LoaderOptions& o) {
    return ResolveLoader(o, {datasets_[which].get()});
  }
  LoaderOptions Options(const char* name) { return testing::HostOptions(dir_.File(name), 8); }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<Dataset>> datasets_;
};

TEST_F(LoaderPlanTest, EachDatasetGetsItsKindOfBatch) {
  Result<LoaderPlan> p = Plan(0, Options("pixels.rfd"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kind, BatchKind::kTensors);
  EXPECT_EQ(p->sample_shape, (std::vector<int64_t>{1, 8, 8}));
  EXPECT_FALSE(p->host_staging);

  p = Plan(1, Options("tokens.rfd"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kind, BatchKind::kRecords);
  EXPECT_TRUE(p->sample_shape.empty());
  EXPECT_EQ(p->output, DType::kUInt16);
  EXPECT_TRUE(p->host_staging);

  LoaderOptions o = Options("jpegs.rfd");
  o.image.size = 32;
  p = Plan(2, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kind, BatchKind::kImages);
  EXPECT_EQ(p->sample_shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(p->image.size, 32u);
  // JPEGs handed out as stored (image_size 0), and the raw level of any records: records.
  o.image.size = 0;
  EXPECT_EQ(Plan(2, o)->kind, BatchKind::kRecords);
  o.image.size = 32;
  o.output_buffers = 0;
  EXPECT_EQ(Plan(2, o)->kind, BatchKind::kRecords);
  EXPECT_FALSE(Plan(2, o)->decoded);
  EXPECT_STREQ(BatchKindName(BatchKind::kImages), "images");
}

TEST_F(LoaderPlanTest, DtypeAndNormalizeLeftOutAreWhatTheDataCallsFor) {
  auto taken = [&](size_t which, const char* name, uint32_t image_size) {
    LoaderOptions o = Options(name);
    o.image.size = image_size;
    o.output.given = {true, false, false};
    Result<LoaderPlan> p = Plan(which, o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::make_pair(p->output_options.dtype, p->output_options.normalize);
  };
  // uint8 intensities: float32, normalized; token ids as stored, never normalized; JPEGs decoded
  // to float32, normalized.
  EXPECT_EQ(taken(0, "pixels.rfd", 224), std::make_pair(DType::kFloat32, true));
  EXPECT_EQ(taken(1, "tokens.rfd", 224), std::make_pair(DType::kUInt16, false));
  EXPECT_EQ(taken(2, "jpegs.rfd", 32), std::make_pair(DType::kFloat32, true));
  EXPECT_EQ(taken(2, "jpegs.rfd", 0), std::make_pair(DType::kUInt8, false));
  // A dtype given, normalize left out: normalized where the output is a float.
  LoaderOptions o = Options("pixels.rfd");
  o.output.dtype = DType::kUInt8;
  o.output.given = {true, true, false};
  EXPECT_FALSE(Plan(0, o)->output_options.normalize);
  o.output.dtype = DType::kBFloat16;
  EXPECT_TRUE(Plan(0, o)->output_options.normalize);
  // The loader's options() are the values taken.
  o.output.given = {true, false, false};
  std::unique_ptr<Loader> l = testing::OpenLoader(o);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->options().output.dtype, DType::kFloat32);
  EXPECT_TRUE(l->options().output.normalize);
}

TEST_F(LoaderPlanTest, WhatAKindDoesNothingWithIsRefusedNamingIt) {
  auto refusal = [&](size_t which, const LoaderOptions& o) {
    Result<LoaderPlan> p = Plan(which, o);
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string("OK") : p.status().message();
  };
  // Records given a dtype or normalize by a caller that tells (Python); a C++ caller's fields
  // are ignored, as the records come out as stored.
  LoaderOptions o = Options("tokens.rfd");
  EXPECT_EQ(Plan(1, o)->output_options.dtype, DType::kUInt16);
  o.output.given = {true, true, false};
  EXPECT_EQ(refusal(1, o),
            "dtype and normalize: tokens records come out as stored (uint16 values and int64 "
            "offsets), not decoded");
  o = Options("tokens.rfd");
  o.output.given = {true, false, true};
  o.output.normalize = true;
  EXPECT_NE(refusal(1, o).find("dtype and normalize"), std::string::npos);
  o = Options("tokens.rfd");
  o.pipeline.mode = PipelineMode::kManaged;
  EXPECT_EQ(refusal(1, o),
            "mode managed serves fixed-shape tensors; tokens records stream (mode streaming)");
  o = Options("pixels.rfd");
  o.image.threads = 3;
  EXPECT_EQ(refusal(0, o),
            "image_threads: this dataset's batches are no decoded images (it holds no "
            "image records); leave it out");
  o = Options("jpegs.rfd");
  o.output.augment = "flip";
  EXPECT_NE(refusal(2, o).find("augment: image records are decoded with their own"),
            std::string::npos);
  o = Options("pixels.rfd");
  o.output_buffers = kMaxOutputBuffers + 1;
  EXPECT_EQ(refusal(0, o), "prefetch must be at most 64 batches, got 65");
  o = Options("tokens.rfd");
  o.sequence.pad_token = 3;
  EXPECT_EQ(refusal(1, o),
            "eod_token, pad_token and packing shape packed sequences: give sequence_length too");
  o = Options("tokens.rfd");
  o.sequence.length = 16;
  o.output_buffers = 0;
  EXPECT_EQ(refusal(1, o),
            "output_buffers: packed sequences are handed out in the loader's buffers; 0 leaves "
            "none");
}

// sequence_length makes packed sequences, their own maker's, which reads sources of its own:
// the tokens in the dtype given, int64 where the Python face gave none.
TEST_F(LoaderPlanTest, ASequenceLengthMakesPackedSequences) {
  LoaderOptions o = Options("tokens.rfd");
  o.sequence.length = 16;
  o.output.dtype = DType::kInt32;
  Result<LoaderPlan> p = Plan(1, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kind, BatchKind::kSequences);
  EXPECT_FALSE(p->staged);
  EXPECT_EQ(p->output, DType::kInt32);
  o.output.given = {true, false, false};
  p = Plan(1, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->output, DType::kInt64);
  EXPECT_STREQ(BatchKindName(p->kind), "sequences");
}

}  // namespace
}  // namespace rf
