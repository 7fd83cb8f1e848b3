// ringfeed-convert's threads (tools/convert/block_pipeline.h): the dataset is byte for byte the
// same for every thread count, for every input kind, with and without a codec, and the same as
// one DatasetWriter::Append of the decoded samples (the serial statistics); a bad input gets the
// same one-line error whatever the thread count, as a whole-block check in input order gives it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"
#include "tools/convert/converter.h"
#include "tools/convert/idx_input.h"
#include "tools/convert/npy_input.h"
#include "tools/convert/predecessor_input.h"
#include "tools/convert/raw_input.h"

namespace rf {
namespace {

using convert::ConvertOptions;
using convert::SampleSource;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

// 3x16x16 samples: 4000 of them fill several blocks of a 12 MiB budget, each cut into more than
// one piece and into batches that are not whole stripes of the transpose (block_pipeline.cc).
constexpr uint64_t kN = 4000, kC = 3, kH = 16, kW = 16, kElems = kC * kH * kW;
constexpr uint64_t kBudget = 12 << 20;

// Element k of sample i, in [0, 1]: every sample and element differ.
float ValueAt(uint64_t i, uint64_t k) {
  return static_cast<float>((i * 7919 + k * 31) % 1021) / 1020.f;
}

// Label i of a label array of dtype t.
void PutLabel(DType t, int64_t v, uint8_t* labels, uint64_t i) {
  const size_t n = DTypeSize(t);
  const int32_t w =
      static_cast<int32_t>(v);  // little-endian: its low bytes are the narrower types'
  std::memcpy(labels + i * n, &w, n);
}

std::vector<uint8_t> Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// One input kind, written to a temporary directory, and how to open it.
struct Input {
  std::string name;
  std::function<void(const TempDir&)> write;
  std::function<Result<std::unique_ptr<SampleSource>>(const TempDir&)> open;
  std::string dtype;  // the stored dtype asked for ("": the default)
};

std::vector<Input> Inputs() {
  std::vector<Input> in;
  const auto u8 = [] { return testing::PositionalSamples(kN, kElems); };
  in.push_back({"raw uint8, labels first",
                [u8](const TempDir& t) {
                  const std::vector<uint8_t> s = u8();
                  std::vector<uint8_t> rec;
                  for (uint64_t i = 0; i < kN; ++i) {
                    rec.push_back(static_cast<uint8_t>(testing::PositionalLabel(i)));
                    rec.insert(rec.end(), s.begin() + i * kElems, s.begin() + (i + 1) * kElems);
                  }
                  WriteAll(t.File("r.bin"), rec);
                },
                [](const TempDir& t) {
                  convert::RawOptions o;
                  o.records_path = t.File("r.bin");
                  o.shape = {kC, kH, kW};
                  return convert::OpenRawSource(o);
                },
                ""});
  in.push_back({"raw uint8 stored as float16",
                [u8](const TempDir& t) {
                  WriteAll(t.File("r.bin"), u8());
                  WriteAll(t.File("l.bin"), testing::PositionalLabels(kN));
                },
                [](const TempDir& t) {
                  convert::RawOptions o;
                  o.records_path = t.File("r.bin");
                  o.shape = {kC, kH, kW};
                  o.labels = convert::RawOptions::Labels::kFile;
                  o.labels_path = t.File("l.bin");
                  return convert::OpenRawSource(o);
                },
                "float16"});
  in.push_back(
      {"idx uint8",
       [u8](const TempDir& t) {
         WriteAll(t.File("i.idx"), testing::IdxBytes(0x08, {kN, kC, kH, kW}, u8()));
         WriteAll(t.File("l.idx"), testing::IdxBytes(0x08, {kN}, testing::PositionalLabels(kN)));
       },
       [](const TempDir& t) { return convert::OpenIdxSource(t.File("i.idx"), t.File("l.idx")); },
       ""});
  const auto floats = [] {
    std::vector<float> v(kN * kElems);
    for (uint64_t i = 0; i < kN; ++i)
      for (uint64_t k = 0; k < kElems; ++k) v[i * kElems + k] = ValueAt(i, k);
    return v;
  };
  in.push_back(
      {"idx float32 (big-endian) stored as uint8",
       [floats](const TempDir& t) {
         WriteAll(t.File("i.idx"),
                  testing::IdxBytes(0x0D, {kN, kC, kH, kW}, testing::BigEndianFloats(floats())));
       },
       [](const TempDir& t) { return convert::OpenIdxSource(t.File("i.idx"), ""); }, "uint8"});
  in.push_back({"npy float32 stored as bfloat16",
                [floats](const TempDir& t) {
                  const std::vector<float> v = floats();
                  WriteAll(t.File("x.npy"), testing::NpyBytes("<f4", {kN, kC, kH, kW}, v.data(),
                                                              v.size() * sizeof(float)));
                  const std::vector<uint8_t> l = testing::PositionalLabels(kN);
                  WriteAll(t.File("y.npy"), testing::NpyBytes("|u1", {kN}, l.data(), l.size()));
                },
                [](const TempDir& t) {
                  return convert::OpenNpySource(t.File("x.npy"), t.File("y.npy"), false);
                },
                "bfloat16"});
  in.push_back(
      {"npy uint8 nhwc",
       [u8](const TempDir& t) {
         const std::vector<uint8_t> s = u8();
         WriteAll(t.File("x.npy"), testing::NpyBytes("|u1", {kN, kH, kW, kC}, s.data(), s.size()));
       },
       [](const TempDir& t) { return convert::OpenNpySource(t.File("x.npy"), "", true); }, ""});
  // The predecessor's files: feature f of sample s at f * N + s.
  const auto predecessor = [floats](const TempDir& t) {
    const std::vector<float> v = floats();
    std::vector<float> fm(v.size());
    for (uint64_t s = 0; s < kN; ++s)
      for (uint64_t f = 0; f < kElems; ++f) fm[f * kN + s] = v[s * kElems + f];
    WriteAll(t.File("images_train.bin"), Bytes(fm));
    std::vector<int32_t> labels(kN);
    for (uint64_t s = 0; s < kN; ++s) labels[s] = static_cast<int32_t>(testing::PositionalLabel(s));
    WriteAll(t.File("labels_train.bin"), labels.data(), labels.size() * sizeof(int32_t));
  };
  const auto open_predecessor = [](const TempDir& t) {
    return convert::OpenPredecessorSource(t.File("images_train.bin"), t.File("labels_train.bin"),
                                          kC, kH, kW);
  };
  in.push_back({"predecessor stored as uint8", predecessor, open_predecessor, "uint8"});
  in.push_back({"predecessor float32", predecessor, open_predecessor, ""});
  return in;
}

// Converts `in` with `threads` threads into `out` (a fixed dataset id, so runs compare byte for
// byte), and returns every file written, main dataset first.
std::vector<std::string> ConvertWith(const Input& in, const TempDir& t, const std::string& out,
                                     uint32_t threads, const std::string& codec,
                                     double test_split = 0) {
  Result<std::unique_ptr<SampleSource>> source = in.open(t);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  if (!source.ok()) return {};
  ConvertOptions o;
  if (!in.dtype.empty()) o.sample_dtype = *ParseDType(in.dtype);
  o.threads = threads;
  o.memory_budget = kBudget;
  o.chunk_bytes = 256 << 10;
  o.dataset_id = 0x1234567;
  o.progress = false;
  o.test_fraction = test_split;
  o.split_seed = 3;
  Result<CodecSpec> spec = ParseCodec(codec);
  EXPECT_TRUE(spec.ok());
  if (spec.ok()) o.codec = *spec;
  Result<convert::ConvertSummary> s = convert::Convert(**source, t.File(out), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? s->paths : std::vector<std::string>{};
}

void ExpectSameFiles(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(ReadAll(a[i]) == ReadAll(b[i])) << a[i] << " and " << b[i] << " differ";
  }
}

TEST(ConvertThreads, EveryInputKindGivesTheSameBytesForAnyThreadCountAndCodec) {
  for (const Input& in : Inputs()) {
    SCOPED_TRACE(in.name);
    TempDir t;
    in.write(t);
    for (const std::string codec : {"none", "lz4", "zstd:1"}) {
      SCOPED_TRACE(codec);
      const std::vector<std::string> one = ConvertWith(in, t, "one.rfd", 1, codec);
      for (const uint32_t threads : {3u, 8u}) {
        SCOPED_TRACE(threads);
        ExpectSameFiles(one, ConvertWith(in, t, "many.rfd", threads, codec));
      }
      auto d = Dataset::Open(t.File("one.rfd"));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->header().total_samples, kN);
    }
  }
}

TEST(ConvertThreads, ATestSplitGivesTheSameBothDatasetsForAnyThreadCount) {
  const std::vector<Input> inputs = Inputs();
  for (const Input& in : {inputs.front(), inputs.back()}) {
    SCOPED_TRACE(in.name);
    TempDir t;
    in.write(t);
    const std::vector<std::string> one = ConvertWith(in, t, "one.rfd", 1, "none", 0.3);
    ASSERT_EQ(one.size(), 2u);
    ExpectSameFiles(one, ConvertWith(in, t, "many.rfd", 5, "none", 0.3));
  }
}

// The statistics the threads sum are those of one Append of every sample (each sample summed by
// the writer itself, in order): the same dataset, byte for byte.
TEST(ConvertThreads, TheDatasetIsOneAppendOfTheDecodedSamples) {
  for (const Input& in : Inputs()) {
    if (!in.dtype.empty()) continue;  // the stored samples are the decoded input as it is
    SCOPED_TRACE(in.name);
    TempDir t;
    in.write(t);
    const std::vector<std::string> converted = ConvertWith(in, t, "c.rfd", 4, "none");
    Result<std::unique_ptr<SampleSource>> source = in.open(t);
    ASSERT_TRUE(source.ok());
    Result<convert::SampleBlock> all = (*source)->Next(kN);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(all->count, kN);
    const convert::SourceShape& shape = (*source)->shape();
    DatasetSpec spec;
    spec.sample_dtype = *convert::ElemAsDType(shape.elem);
    spec.label_dtype = shape.has_labels ? shape.label_dtype : DType::kUInt8;
    spec.shape = shape.dims;
    spec.has_labels = shape.has_labels;
    spec.num_classes = shape.has_labels ? 10 : 0;
    WriterOptions w;
    w.chunk_bytes = 256 << 10;
    w.dataset_id = 0x1234567;
    auto writer = DatasetWriter::Create(t.File("w.rfd"), spec, w);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    std::vector<uint8_t> labels(kN * DTypeSize(spec.label_dtype));
    for (uint64_t i = 0; i < kN; ++i) PutLabel(spec.label_dtype, all->labels[i], labels.data(), i);
    ASSERT_TRUE(
        (*writer)->Append(all->samples, shape.has_labels ? labels.data() : nullptr, kN).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
    ExpectSameFiles(converted, (*writer)->paths());
  }
}

// x.npy: 400 float32 samples of 3x32x32 (pieces of 160 samples in batches of 32), sample 10
// holding 1e6 (which float16 cannot hold) and sample `nan_sample` a NaN (none where negative);
// labels 0..9, sample `bad_label`'s 10 where given.
constexpr uint64_t kBadN = 400, kBadElems = 3 * 32 * 32;
void WriteBadNpy(const TempDir& t, int64_t bad_label, int64_t nan_sample) {
  std::vector<float> v(kBadN * kBadElems, 0.5f);
  v[10 * kBadElems + 7] = 1e6f;
  if (nan_sample >= 0) v[nan_sample * kBadElems + 3] = std::numeric_limits<float>::quiet_NaN();
  WriteAll(t.File("x.npy"),
           testing::NpyBytes("<f4", {kBadN, 3, 32, 32}, v.data(), v.size() * sizeof(float)));
  std::vector<uint8_t> l = testing::PositionalLabels(kBadN);
  if (bad_label >= 0) l[bad_label] = 10;
  WriteAll(t.File("y.npy"), testing::NpyBytes("|u1", {kBadN}, l.data(), l.size()));
}

// The converter's refusal of x.npy's sample `sample` for `what` at `element`.
std::string SampleRefusal(const TempDir& t, uint64_t sample, const std::string& what,
                          uint64_t element) {
  const uint64_t data = ReadAll(t.File("x.npy")).size() - kBadN * kBadElems * sizeof(float);
  return t.File("x.npy") + ": at byte " +
         std::to_string(data + sample * kBadElems * sizeof(float)) + ": sample " +
         std::to_string(sample) + " (which starts here) holds " + what + " at element " +
         std::to_string(element) + "; a dataset needs finite samples for its channel statistics";
}

// Converting the files to float16 fails with `want` for 1, 2 and 7 threads, leaving nothing.
void ExpectErrorForAnyThreads(const TempDir& t, const std::string& want) {
  for (const std::string threads : {"1", "2", "7"}) {
    const Status st = testing::Convert({"npy", "--images", t.File("x.npy"), "--labels",
                                        t.File("y.npy"), "--dtype", "float16", "--classes", "10",
                                        "--threads", threads, "-o", t.File("d.rfd"), "--quiet"});
    EXPECT_EQ(st.ToString(), want) << threads << " threads";
    EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"x.npy", "y.npy"}));
  }
}

TEST(ConvertThreads, ABadInputGetsTheSameErrorForAnyThreadCount) {
  // In one block, a NaN is reported before the overflow of an earlier sample, as a check of the
  // whole block's input before its conversion reports it: in a later piece (350), and in a later
  // batch of the same piece (150), which is still checked after the overflow.
  for (const int64_t nan_sample : {350, 150}) {
    TempDir t;
    WriteBadNpy(t, -1, nan_sample);
    ExpectErrorForAnyThreads(t, SampleRefusal(t, nan_sample, "a NaN or infinite value", 3));
  }
  {
    // A label out of range is reported before any sample of its block.
    TempDir t;
    WriteBadNpy(t, 399, 350);
    const uint64_t data = ReadAll(t.File("y.npy")).size() - kBadN;
    ExpectErrorForAnyThreads(t, t.File("y.npy") + ": at byte " + std::to_string(data + 399) +
                                    ": label 10 of sample 399 is outside [0, 10) (--classes 10)");
  }
  {
    // The overflow alone.
    TempDir t;
    WriteBadNpy(t, -1, -1);
    ExpectErrorForAnyThreads(t, SampleRefusal(t, 10, "a value that overflows float16", 7));
  }
}

TEST(ConvertThreads, MoreThan1024ThreadsIsAUsageError) {
  TempDir t;
  WriteBadNpy(t, -1, -1);
  EXPECT_TRUE(
      testing::FailsWithUsage(testing::Convert({"npy", "--images", t.File("x.npy"), "--threads",
                                                "1025", "-o", t.File("d.rfd")}),
                              "npy: --threads must be a whole number from 0 to 1024, got 1025"));
}

}  // namespace
}  // namespace rf
