// Dataset::Open of a directory: its datasets (the parts, each a file or a complete shard set)
// concatenated in name order, each part's samples encoding their global index (so a misplaced
// part or chunk shows); the combined header (counts, the largest chunk, pooled statistics, an id
// derived from the parts'); what is refused, each naming the directory or the file at fault; a
// part still being written is not seen; errors of a chunk name its own file, chunk and offset.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

// 8x8 uint8 samples, labels i % 10; a 4 KiB chunk holds 63 of them.
constexpr uint32_t kSampleBytes = 64, kChunkSamples = 63;

struct PartSpec {
  std::string name;
  uint64_t samples;
  uint32_t shards = 1;
  CodecSpec codec = {};
  uint64_t chunk_bytes = 4096;
};

// Writes the parts into `dir` in the order given (not the name order), each holding the samples
// after the ones before it in `parts`' order.
void WriteParts(const TempDir& dir, const std::vector<PartSpec>& parts) {
  uint64_t first = 0;
  for (const PartSpec& p : parts) {
    testing::WritePositionalDataset(dir.File(p.name), p.samples,
                                    {.shards = p.shards,
                                     .chunk_bytes = p.chunk_bytes,
                                     .codec = p.codec,
                                     .first_sample = first});
    first += p.samples;
  }
}

// Every chunk read back holds the samples [first_sample, ...) its location says, each with its
// label; the chunks cover 0 .. sample_count() - 1 in order.
void ExpectEverySampleInPlace(const Dataset& d) {
  std::vector<uint8_t> buf(d.max_chunk_bytes());
  uint64_t next = 0;
  for (size_t c = 0; c < d.chunk_count(); ++c) {
    const Status st = d.ReadChunk(c, buf.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(d.chunk(c).first_sample, next) << "chunk " << c;
    for (uint32_t j = 0; j < d.chunk(c).entry.sample_count; ++j, ++next) {
      ASSERT_EQ(testing::SampleIndex(&buf[j * kSampleBytes]), next) << "chunk " << c;
      ASSERT_EQ(d.Label(c, buf.data(), j), testing::PositionalLabel(next));
    }
  }
  EXPECT_EQ(next, d.sample_count());
}

Result<Dataset> Open(const std::string& path) {
  Result<Dataset> d = Dataset::Open(path);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d;
}

TEST(DatasetDirectory, ConcatenatesItsPartsInNameOrderWithTheirShortChunksInTheMiddle) {
  TempDir t;
  // Written out of name order; "b" in 3 shards; files that are not datasets beside them.
  WriteParts(t, {{"a.rfd", 100}, {"b.rfd", 250, 3}, {"c-part.rfd", 37}});
  testing::WriteAll(t.File("notes.txt"), std::vector<uint8_t>(100, 'x'));
  testing::WriteAll(t.File("a.rfd.tmp.1.0"), std::vector<uint8_t>(100, 'x'));
  auto d = Open(t.path());
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->is_directory());
  ASSERT_EQ(d->part_count(), 3u);
  const std::vector<std::string> names = {t.File("a.rfd"), t.File("b.rfd"), t.File("c-part.rfd")};
  const uint64_t samples[] = {100, 250, 37}, files[] = {1, 3, 1};
  uint64_t first = 0, first_chunk = 0, first_file = 0;
  std::vector<uint32_t> counts;
  for (size_t p = 0; p < 3; ++p) {
    const DatasetPart& part = d->part(p);
    EXPECT_EQ(part.path, names[p]);
    EXPECT_EQ(part.sample_count, samples[p]);
    EXPECT_EQ(part.first_sample, first);
    EXPECT_EQ(part.first_chunk, first_chunk);
    EXPECT_EQ(part.first_file, first_file);
    EXPECT_EQ(part.file_count, files[p]);
    EXPECT_EQ(part.chunk_count, (samples[p] + kChunkSamples - 1) / kChunkSamples);
    // The part's own chunks, as its own files number them, and where they lie.
    for (uint64_t c = 0; c < part.chunk_count; ++c) {
      const ChunkLocation& at = d->chunk(part.first_chunk + c);
      EXPECT_EQ(at.entry.index, c);
      EXPECT_EQ(at.entry.first_sample, c * kChunkSamples);
      EXPECT_EQ(at.first_sample, first + c * kChunkSamples);
      EXPECT_EQ(at.shard, part.first_file + c % part.file_count);
      counts.push_back(
          static_cast<uint32_t>(std::min<uint64_t>(kChunkSamples, samples[p] - c * kChunkSamples)));
    }
    first += part.sample_count;
    first_chunk += part.chunk_count;
    first_file += part.file_count;
  }
  EXPECT_EQ(d->shard_count(), 5u);
  EXPECT_EQ(d->shard_path(1), t.File("b-00000-of-00003.rfd"));
  EXPECT_EQ(d->chunk_count(), first_chunk);
  // 100 = 63 + 37 and 250 = 3 x 63 + 61: short chunks in the middle.
  EXPECT_EQ(d->ChunkSampleCounts(), counts);
  EXPECT_EQ(counts[1], 37u);
  ExpectEverySampleInPlace(*d);
}

// Shard sets are found by a glob of their name: a directory named like a pattern is itself.
TEST(DatasetDirectory, ADirectoryNamedLikeAGlobPatternFindsItsShards) {
  TempDir t;
  const std::string dir = t.File("runs[1]*?");
  std::filesystem::create_directory(dir);
  std::filesystem::create_directory(t.File("runs1"));  // what "runs[1]" would match
  testing::WritePositionalDataset(dir + "/a.rfd", 100, {.shards = 2, .chunk_bytes = 4096});
  testing::WritePositionalDataset(dir + "/b.rfd", 50, {.chunk_bytes = 4096, .first_sample = 100});
  auto d = Open(dir);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->part_count(), 2u);
  EXPECT_EQ(d->shard_count(), 3u);
  ExpectEverySampleInPlace(*d);
  auto a = Open(dir + "/a.rfd");  // by its base name, as before
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->shard_count(), 2u);
}

TEST(DatasetDirectory, TheHeaderSumsThePartsAndDerivesItsIdFromTheirsInOrder) {
  TempDir t;
  // The second part in chunks of 8 KiB: 126 samples (and their labels).
  WriteParts(t, {{"p0.rfd", 100}, {"p1.rfd", 140, 1, {}, 8192}});
  auto d = Open(t.path());
  ASSERT_TRUE(d.ok());
  const format::Header& h = d->header();
  EXPECT_EQ(h.total_samples, 240u);
  EXPECT_EQ(d->sample_count(), 240u);
  EXPECT_EQ(h.total_chunks, 4u);
  EXPECT_EQ(d->part(0).header.chunk_samples, kChunkSamples);
  EXPECT_EQ(h.chunk_samples, 126u);  // the largest
  EXPECT_EQ(d->ChunkSampleCounts(), (std::vector<uint32_t>{63, 37, 126, 14}));
  ExpectEverySampleInPlace(*d);
  const uint64_t id0 = d->part(0).header.dataset_id, id1 = d->part(1).header.dataset_id;
  EXPECT_EQ(h.dataset_id, PartsDatasetId({id0, id1}));
  EXPECT_NE(h.dataset_id, id0);
  EXPECT_NE(h.dataset_id, PartsDatasetId({id1, id0}));
  EXPECT_NE(h.dataset_id, PartsDatasetId({id0}));
  EXPECT_EQ(h.dataset_id % 2, 1u);
  auto again = Open(t.path() + "/");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->header().dataset_id, h.dataset_id);
  // A part more, or one renamed to sort first: another dataset, another id.
  WriteParts(t, {{"p2.rfd", 10}});
  auto more = Open(t.path());
  ASSERT_TRUE(more.ok());
  EXPECT_NE(more->header().dataset_id, h.dataset_id);
  std::filesystem::remove(t.File("p2.rfd"));
  std::filesystem::rename(t.File("p1.rfd"), t.File("a.rfd"));
  auto swapped = Open(t.path());
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(swapped->header().dataset_id, PartsDatasetId({id1, id0}));
  // A directory of one dataset reads as that dataset: its header, id and all.
  std::filesystem::remove(t.File("a.rfd"));
  auto one = Open(t.path());
  auto file = Open(t.File("p0.rfd"));
  ASSERT_TRUE(one.ok() && file.ok());
  EXPECT_EQ(one->part_count(), 1u);
  EXPECT_EQ(one->header().dataset_id, file->header().dataset_id);
  EXPECT_EQ(one->header().mean, file->header().mean);
  EXPECT_EQ(one->ChunkSampleCounts(), file->ChunkSampleCounts());
}

TEST(DatasetDirectory, MixedVersionsAndCodecsAreOnePartEach) {
  TempDir t;
  // b's chunks of 16 KiB: a 4 KiB chunk cannot shrink by a block.
  WriteParts(t, {{"a.rfd", 120}, {"b.rfd", 700, 2, {Codec::kZstd, 3}, 16384}, {"c.rfd", 70}});
  auto d = Open(t.path());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->part(0).header.version, 1u);
  EXPECT_EQ(d->part(1).header.version, 2u);
  EXPECT_EQ(d->header().version, 2u);
  EXPECT_EQ(d->header().codec, CodecSpec{});  // the parts' codecs differ
  EXPECT_GT(d->compressed_chunks(), 0u);      // positional samples shrink
  ExpectEverySampleInPlace(*d);
}

// What a single writer computes over all the samples, the parts' pooled give (to float32's
// precision: each part's statistics are floats).
TEST(DatasetDirectory, PooledStatisticsEqualOneWritersOverTheSameSamples) {
  TempDir parts, whole;
  WriteParts(parts, {{"0.rfd", 333}, {"1.rfd", 1000}, {"2.rfd", 7}});
  WriteParts(whole, {{"all.rfd", 1340}});
  auto d = Open(parts.path());
  auto w = Open(whole.File("all.rfd"));
  ASSERT_TRUE(d.ok() && w.ok());
  ASSERT_NE(d->part(0).header.mean[0], d->part(1).header.mean[0]);
  EXPECT_NEAR(d->header().mean[0], w->header().mean[0], 1e-5 * w->header().mean[0]);
  EXPECT_NEAR(d->header().stddev[0], w->header().stddev[0], 1e-5 * w->header().stddev[0]);
}

TEST(DatasetDirectory, PoolStatisticsIsTheExactFormula) {
  // Channel 0: part a 1 sample of mean 0, std 0; part b 3 samples of mean 4, std 0: the four
  // values 0, 4, 4, 4 have mean 3 and variance (9 + 3) / 4 = 3. Channel 1: std 2 and 1 about
  // means 1 and 1: variance (1 x 4 + 3 x 1) / 4.
  format::Header a, b;
  a.total_samples = 1;
  b.total_samples = 3;
  a.mean[0] = 0, b.mean[0] = 4;
  a.mean[1] = 1, b.mean[1] = 1, a.stddev[1] = 2, b.stddev[1] = 1;
  a.mean[2] = b.mean[2] = 7;  // channels past the count keep the first's
  std::array<float, format::kMaxChannels> mean{}, stddev{};
  ASSERT_TRUE(PoolStatistics({&a, &b}, 2, &mean, &stddev));
  EXPECT_FLOAT_EQ(mean[0], 3.f);
  EXPECT_FLOAT_EQ(stddev[0], std::sqrt(3.f));
  EXPECT_FLOAT_EQ(mean[1], 1.f);
  EXPECT_FLOAT_EQ(stddev[1], std::sqrt(7.f / 4));
  EXPECT_EQ(mean[2], 7.f);
  // Ids' statistics (mean 0, std 1 by convention) pool to the same.
  format::Header i0, i1;
  i0.total_samples = 5, i1.total_samples = 11;
  i0.stddev[0] = i1.stddev[0] = 1;
  ASSERT_TRUE(PoolStatistics({&i0, &i1}, 1, &mean, &stddev));
  EXPECT_EQ(mean[0], 0.f);
  EXPECT_EQ(stddev[0], 1.f);
  // Means and stds near float32's largest pool to a std beyond it: refused, never infinite.
  a.mean[0] = -3e38f, b.mean[0] = 3e38f;
  a.stddev[0] = b.stddev[0] = 3e38f;
  EXPECT_FALSE(PoolStatistics({&a, &b}, 1, &mean, &stddev));
}

// A dataset of 10 samples of `shape` and `dtype` (or without labels) at `path`.
void WriteOther(const std::string& path, DType dtype, std::vector<uint64_t> shape, bool labels,
                uint32_t classes = 10, DType label_dtype = DType::kUInt8) {
  DatasetSpec spec;
  spec.sample_dtype = dtype;
  spec.shape = std::move(shape);
  spec.has_labels = labels;
  spec.num_classes = labels ? classes : 0;
  spec.label_dtype = label_dtype;
  auto w = DatasetWriter::Create(path, spec, {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  uint64_t elems = 1;
  for (uint64_t d : spec.shape) elems *= d;
  std::vector<uint8_t> samples(10 * elems * DTypeSize(dtype), 0);
  std::vector<uint8_t> label_bytes(10 * DTypeSize(label_dtype), 0);
  ASSERT_TRUE((*w)->Append(samples.data(), labels ? label_bytes.data() : nullptr, 10).ok());
  ASSERT_TRUE((*w)->Finish().ok());
}

TEST(DatasetDirectory, APartWithOtherRecordsIsRefusedNamingBothFilesAndTheField) {
  struct Case {
    const char* what;
    DType dtype;
    std::vector<uint64_t> shape;
    bool labels;
    uint32_t classes;
    DType label_dtype;
    const char* said;
  };
  const Case cases[] = {
      {"dtype",
       DType::kFloat32,
       {1, 8, 8},
       true,
       10,
       DType::kUInt8,
       "sample dtype float32, not uint8"},
      {"shape", DType::kUInt8, {64}, true, 10, DType::kUInt8, "sample shape 64, not 1x8x8"},
      {"classes",
       DType::kUInt8,
       {1, 8, 8},
       true,
       12,
       DType::kUInt8,
       "labels 12 classes, not 10 classes"},
      {"no labels",
       DType::kUInt8,
       {1, 8, 8},
       false,
       0,
       DType::kUInt8,
       "labels no labels, not 10 classes"},
      {"label dtype",
       DType::kUInt8,
       {1, 8, 8},
       true,
       10,
       DType::kInt32,
       "label dtype int32, not uint8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir t;
    WriteParts(t, {{"part-00000.rfd", 100}, {"part-00001.rfd", 50}});
    WriteOther(t.File("part-00002.rfd"), c.dtype, c.shape, c.labels, c.classes, c.label_dtype);
    auto d = Dataset::Open(t.path());
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(d.status().IsInvalidArgument());
    EXPECT_EQ(d.status().ToString(),
              t.File("part-00002.rfd") + ": holds other records than " + t.File("part-00000.rfd") +
                  ": " + c.said +
                  " (the datasets of a directory are read as one, so they must hold the same "
                  "records)");
  }
}

// Records of any size: a header's shape is its largest record, which parts need not share; the
// media type says what a bytes record is, which they must.
TEST(DatasetDirectory, RecordsOfAnySizeDifferInTheirLargestRecordNotInTheirMediaType) {
  format::Header a, b;
  a.version = b.version = 2;
  a.record_kind = b.record_kind = format::RecordKind::kBytes;
  ASSERT_TRUE(format::SetSampleShape({1000}, &a).ok());
  ASSERT_TRUE(format::SetSampleShape({70000}, &b).ok());
  a.media_type = b.media_type = "image/jpeg";
  EXPECT_TRUE(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ok());
  // Image records of any codecs are read alike (each record's codec is in its first bytes).
  b.media_type = "image/png";
  EXPECT_TRUE(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ok());
  b.media_type = "text/plain";
  EXPECT_EQ(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ToString(),
            "x/b.rfd: holds other records than x/a.rfd: media type text/plain, not image/jpeg (the "
            "datasets of a directory are read as one, so they must hold the same records)");
  b.media_type.clear();
  EXPECT_NE(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd")
                .ToString()
                .find("media type (none), not image/jpeg"),
            std::string::npos);
  a.record_kind = b.record_kind = format::RecordKind::kTensor;  // a tensor's shape is its shape
  b.media_type = a.media_type;
  EXPECT_NE(
      CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ToString().find("sample shape 70000, not 1000"),
      std::string::npos);
}

// A directory of image parts of several codecs reads as images of any codec (image/*): what the
// loader's decoder choice reads (nvJPEG only where a record may be a JPEG); parts of one codec
// keep it.
TEST(DatasetDirectory, ImagePartsOfSeveralCodecsReadAsImagesOfAnyCodec) {
  auto write = [](const std::string& path, const std::string& media_type) {
    DatasetSpec spec;
    spec.record_kind = format::RecordKind::kBytes;
    spec.media_type = media_type;
    spec.num_classes = 2;
    auto w = DatasetWriter::Create(path, spec, WriterOptions{});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    const std::string blobs = "abcdef";
    const uint64_t offsets[3] = {0, 2, 6};
    const uint8_t labels[2] = {1, 0};
    ASSERT_TRUE((*w)->AppendRecords(blobs.data(), offsets, labels, 2).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  };
  TempDir same, mixed;
  write(same.File("part-00000.rfd"), "image/png");
  write(same.File("part-00001.rfd"), "image/png");
  write(mixed.File("part-00000.rfd"), "image/png");
  write(mixed.File("part-00001.rfd"), "image/jpeg");
  auto a = Dataset::Open(same.path());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->header().media_type, "image/png");
  auto b = Dataset::Open(mixed.path());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->header().media_type, "image/*");
  EXPECT_EQ(b->sample_count(), 4u);
}

// Where the records came from: export --format megatron writes every part as the first part's
// origin says, so parts from Megatron files of other dtypes are not one dataset.
TEST(DatasetDirectory, PartsOfOtherOriginsAreRefusedNamingBoth) {
  format::Header a, b;
  a.version = b.version = 2;
  a.record_kind = b.record_kind = format::RecordKind::kTokens;
  ASSERT_TRUE(format::SetSampleShape({100}, &a).ok());
  ASSERT_TRUE(format::SetSampleShape({100}, &b).ok());
  a.origin = b.origin = "megatron;dtype=int32";
  EXPECT_TRUE(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ok());
  b.origin = "megatron;dtype=uint16";
  EXPECT_EQ(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ToString(),
            "x/b.rfd: holds other records than x/a.rfd: origin megatron;dtype=uint16, not "
            "megatron;dtype=int32 (the datasets of a directory are read as one, so they must hold "
            "the same records)");
  b.origin.clear();
  EXPECT_NE(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd")
                .ToString()
                .find("origin (none), not megatron;dtype=int32"),
            std::string::npos);
  // Image records: the origin says how each part's images were ordered, the parts' own.
  a.record_kind = b.record_kind = format::RecordKind::kBytes;
  a.media_type = b.media_type = "image/jpeg";
  a.origin = "imagefolder;order=walk";
  b.origin = "webdataset;order=shards";
  EXPECT_TRUE(CheckSameRecords(a, "x/a.rfd", b, "x/b.rfd").ok());
}

TEST(DatasetDirectory, ADirectoryWithoutADatasetIsRefusedNamingIt) {
  TempDir t;
  for (int with_other_files = 0; with_other_files < 2; ++with_other_files) {
    auto d = Dataset::Open(t.path());
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(d.status().IsNotFound());
    EXPECT_EQ(d.status().ToString(),
              t.path() +
                  ": no dataset in this directory (a directory is read as the datasets in it: "
                  ".rfd files, or complete shard sets)");
    testing::WriteAll(t.File("README"), std::vector<uint8_t>(10, 'r'));
    testing::WriteAll(t.File("x.rfd.tmp.99999.0"), std::vector<uint8_t>(10, 'r'));
  }
}

TEST(DatasetDirectory, AnRfdFileThatIsNoDatasetIsAnErrorNotSkipped) {
  TempDir t;
  WriteParts(t, {{"a.rfd", 100}});
  testing::WriteAll(t.File("b.rfd"), std::vector<uint8_t>(10000, 'j'));
  auto d = Dataset::Open(t.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().path(), t.File("b.rfd")) << d.status().ToString();
  // A directory named like a dataset is named as what it is.
  std::filesystem::remove(t.File("b.rfd"));
  std::filesystem::create_directory(t.File("b.rfd"));
  d = Dataset::Open(t.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().ToString(), t.File("b.rfd") +
                                       ": a directory, not a dataset (a .rfd file, or the base "
                                       "name of its shards)");
}

TEST(DatasetDirectory, AStaleMixAndAnIncompleteShardSetAreRefusedAsByName) {
  TempDir t;
  WriteParts(t, {{"a.rfd", 100}});
  // A stale single file beside shards of its name (DatasetNames' rule).
  std::vector<std::string> shards;
  testing::WritePositionalDataset(t.File("b.rfd"), 200, {.shards = 2, .chunk_bytes = 4096},
                                  &shards);
  std::filesystem::copy_file(t.File("a.rfd"), t.File("b.rfd"));
  auto d = Dataset::Open(t.path());
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsInvalidArgument());
  EXPECT_EQ(d.status().path(), t.File("b.rfd"));
  EXPECT_NE(d.status().message().find("2 datasets have this name"), std::string::npos)
      << d.status().ToString();
  // Shard 0 gone (a writer renames it last): the set is incomplete, named by the missing shard.
  std::filesystem::remove(t.File("b.rfd"));
  std::filesystem::remove(shards[0]);
  d = Dataset::Open(t.path());
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsNotFound());
  EXPECT_EQ(d.status().path(), shards[0]) << d.status().ToString();
}

// A writer writes under temporary names and renames at Finish: a part it is still writing is
// not one until then, whatever reads the directory meanwhile.
TEST(DatasetDirectory, APartStillBeingWrittenIsNotSeenUntilItsWriterFinishes) {
  TempDir t;
  WriteParts(t, {{"part-00000.rfd", 100}});
  DatasetSpec spec;
  spec.height = spec.width = 8;
  spec.num_classes = 10;
  WriterOptions o;
  o.chunk_bytes = 4096;
  o.shards = 2;
  auto w = DatasetWriter::Create(t.File("part-00001.rfd"), spec, o);
  ASSERT_TRUE(w.ok());
  const std::vector<uint8_t> samples = testing::PositionalSamples(300, kSampleBytes);
  const std::vector<uint8_t> labels = testing::PositionalLabels(300);
  ASSERT_TRUE((*w)->Append(samples.data(), labels.data(), 300).ok());  // chunks on disk
  ASSERT_GT(testing::FilesIn(t.path()).size(), 1u);
  auto d = Open(t.path());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->part_count(), 1u);
  EXPECT_EQ(d->sample_count(), 100u);
  ASSERT_TRUE((*w)->Finish().ok());
  d = Open(t.path());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->part_count(), 2u);
  EXPECT_EQ(d->sample_count(), 400u);
}

// A damaged chunk of the third part: the error names that part's file, the chunk as that file's
// index numbers it, and its byte offset in that file, whether the checksum or the label check
// finds it.
TEST(DatasetDirectory, ACorruptChunkInAPartIsNamedByItsFileChunkAndOffset) {
  TempDir t;
  WriteParts(t, {{"p0.rfd", 100}, {"p1.rfd", 130}, {"p2.rfd", 200}});
  uint64_t global = 0, offset = 0;
  {
    auto d = Open(t.path());
    ASSERT_TRUE(d.ok());
    global = d->part(2).first_chunk + 1;
    ASSERT_EQ(global, 6u);
    offset = d->chunk(global).entry.offset;
  }
  testing::FlipBit(t.File("p2.rfd"), offset + 100, 3);
  auto d = Open(t.path());
  ASSERT_TRUE(d.ok());
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  Status st = d->ReadChunk(global, buf.data());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_EQ(st.path(), t.File("p2.rfd"));
  EXPECT_EQ(st.chunk(), 1u);
  EXPECT_EQ(st.offset(), offset);
  EXPECT_EQ(
      st.ToString().rfind(t.File("p2.rfd") + ": chunk 1 at byte " + std::to_string(offset), 0), 0u)
      << st.ToString();
  // A label out of range, forged past the checksum: sample 63 + 5 of that file.
  testing::FlipBit(t.File("p2.rfd"), offset + 100, 3);  // back as it was
  testing::ForgeLabel(t.File("p2.rfd"), 1, 5, 200);
  d = Open(t.path());
  ASSERT_TRUE(d.ok());
  st = d->ReadChunk(global, buf.data());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.path(), t.File("p2.rfd"));
  EXPECT_EQ(st.chunk(), 1u);
  EXPECT_NE(st.message().find("label 200 of sample 68 "), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace rf
