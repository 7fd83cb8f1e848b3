// Records of any size (format version 2's tokens and bytes kinds): what the writer lays out, what
// the readers take back byte for byte, and the hostile record tables and headers they refuse
// before anything is sized or read from them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/format.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

using format::RecordKind;
using testing::Documents;
using testing::WriteDocuments;

// Every record of the dataset, in order, read back through Dataset::ReadChunk.
std::vector<std::vector<uint16_t>> ReadDocuments(const Dataset& d, std::vector<int64_t>* labels) {
  std::vector<std::vector<uint16_t>> docs;
  std::vector<uint8_t> buf(d.max_chunk_bytes());
  for (size_t g = 0; g < d.chunk_count(); ++g) {
    const Status st = d.ReadChunk(g, buf.data());
    EXPECT_TRUE(st.ok()) << st.ToString();
    const auto* table = reinterpret_cast<const uint64_t*>(buf.data());
    const uint8_t* records = buf.data() + d.RecordsOffset(g);
    for (uint32_t i = 0; i < d.chunk(g).entry.sample_count; ++i) {
      std::vector<uint16_t> doc((table[i + 1] - table[i]) / 2);
      std::memcpy(doc.data(), records + table[i], table[i + 1] - table[i]);
      docs.push_back(std::move(doc));
      if (labels != nullptr) labels->push_back(d.Label(g, buf.data(), i));
    }
  }
  return docs;
}

TEST(Records, TokenDocumentsComeBackByteForByteWithTheirLabels) {
  testing::TempDir dir;
  const auto docs = Documents(500, 3000);
  for (CodecSpec codec : {CodecSpec{}, CodecSpec{Codec::kLz4, 0}, CodecSpec{Codec::kZstd, 3}}) {
    const std::string path = dir.File("docs.rfd");
    ASSERT_TRUE(WriteDocuments(path, docs, codec).ok());
    Result<Dataset> d = Dataset::Open(path);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const format::Header& h = d->header();
    EXPECT_EQ(h.version, 3u);
    EXPECT_EQ(h.record_kind, RecordKind::kTokens);
    EXPECT_EQ(d->sample_count(), docs.size());
    size_t longest = 0;
    for (const auto& doc : docs) longest = std::max(longest, doc.size());
    // The shape is the largest record; chunks end by bytes, so they hold different counts.
    EXPECT_EQ(h.Shape(), std::vector<uint64_t>{longest});
    EXPECT_GT(d->chunk_count(), 10u);
    std::vector<int64_t> labels;
    EXPECT_EQ(ReadDocuments(*d, &labels), docs);
    for (size_t i = 0; i < labels.size(); ++i) ASSERT_EQ(labels[i], int64_t(i % 7));
    uint64_t record_bytes = 0, doc_bytes = 0;
    for (size_t g = 0; g < d->chunk_count(); ++g) {
      // Within the target, or a record's own chunk where one record is larger.
      EXPECT_LE(d->chunk(g).entry.data_bytes, std::max<uint64_t>(16 << 10, 12288));
      // Version 3's index says each chunk's record bytes, exactly its data size's.
      const format::ChunkEntry& e = d->chunk(g).entry;
      EXPECT_GE(e.record_bytes, uint64_t{e.sample_count} * 2);
      EXPECT_EQ(format::RecordChunkBytes(e.sample_count, 1, e.record_bytes), e.data_bytes);
      record_bytes += e.record_bytes;
    }
    for (const auto& doc : docs) doc_bytes += doc.size() * 2;
    EXPECT_EQ(record_bytes, doc_bytes);
  }
}

// Version 2 records (written before the index said each chunk's record bytes) still read; their
// entries' record bytes are unknown (0).
TEST(Records, Version2RecordsStillReadWithoutRecordBytes) {
  testing::TempDir dir;
  const auto docs = Documents(300, 2000);
  DatasetSpec spec;
  spec.record_kind = RecordKind::kTokens;
  spec.sample_dtype = DType::kUInt16;
  spec.has_labels = false;
  WriterOptions o;
  o.chunk_bytes = 16 << 10;
  o.version = 2;
  auto w = DatasetWriter::Create(dir.File("v2.rfd"), spec, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (const auto& doc : docs) {
    const uint64_t ends[2] = {0, doc.size()};
    const Status st = (*w)->AppendRecords(doc.data(), ends, nullptr, 1);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  ASSERT_TRUE((*w)->Finish().ok());
  Result<Dataset> d = Dataset::Open(dir.File("v2.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header().version, 2u);
  for (size_t g = 0; g < d->chunk_count(); ++g) EXPECT_EQ(d->chunk(g).entry.record_bytes, 0u);
  EXPECT_EQ(ReadDocuments(*d, nullptr), docs);
}

TEST(Records, ChunkCountsAndFirstRecordsJoinUpAcrossShards) {
  testing::TempDir dir;
  const auto docs = Documents(300, 2000);
  ASSERT_TRUE(WriteDocuments(dir.File("s.rfd"), docs, {}, 16 << 10, true, 3).ok());
  Result<Dataset> d = Dataset::Open(dir.File("s.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  uint64_t next = 0;
  for (size_t g = 0; g < d->chunk_count(); ++g) {
    EXPECT_EQ(d->chunk(g).entry.first_sample, next);
    EXPECT_EQ(d->chunk(g).shard, g % 3);
    next += d->chunk(g).entry.sample_count;
  }
  EXPECT_EQ(next, docs.size());
  EXPECT_EQ(ReadDocuments(*d, nullptr), docs);
}

TEST(Records, BytesRecordsKeepTheirMediaType) {
  testing::TempDir dir;
  DatasetSpec spec;
  spec.record_kind = RecordKind::kBytes;
  spec.media_type = "image/jpeg";
  spec.num_classes = 3;
  auto w = DatasetWriter::Create(dir.File("img.rfd"), spec, WriterOptions{});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string blobs = "abcdefghij";
  const uint64_t offsets[4] = {0, 3, 4, 10};
  const uint8_t labels[3] = {2, 0, 1};
  ASSERT_TRUE((*w)->AppendRecords(blobs.data(), offsets, labels, 3).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  Result<Dataset> d = Dataset::Open(dir.File("img.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header().media_type, "image/jpeg");
  EXPECT_EQ(d->header().record_kind, RecordKind::kBytes);
  EXPECT_EQ(d->header().Shape(), std::vector<uint64_t>{6});
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  ASSERT_TRUE(d->ReadChunk(0, buf.data()).ok());
  EXPECT_EQ(std::memcmp(buf.data() + d->RecordsOffset(0), blobs.data(), 10), 0);
  EXPECT_EQ(d->Label(0, buf.data(), 0), 2);
}

TEST(Records, TheWriterRefusesWhatNoReaderCouldTake) {
  testing::TempDir dir;
  DatasetSpec spec;
  spec.record_kind = RecordKind::kTokens;
  spec.sample_dtype = DType::kFloat32;
  EXPECT_NE(DatasetWriter::Create(dir.File("a.rfd"), spec, {})
                .status()
                .message()
                .find("uint16, int32 or int64"),
            std::string::npos);
  spec.sample_dtype = DType::kUInt16;
  spec.media_type = "image/jpeg";
  EXPECT_FALSE(DatasetWriter::Create(dir.File("a.rfd"), spec, {}).ok());
  spec.media_type.clear();
  WriterOptions o;
  o.version = 1;
  EXPECT_FALSE(DatasetWriter::Create(dir.File("a.rfd"), spec, o).ok());
  o.version = 0;
  o.max_record_bytes = 64;
  spec.has_labels = false;
  auto w = DatasetWriter::Create(dir.File("a.rfd"), spec, o);
  ASSERT_TRUE(w.ok());
  const uint16_t ids[40] = {};
  const uint64_t empty[2] = {3, 3};
  EXPECT_NE((*w)->AppendRecords(ids, empty, nullptr, 1).message().find("record 0 is empty"),
            std::string::npos);
  const uint64_t large[2] = {0, 33};  // 66 bytes, more than 64
  EXPECT_NE((*w)->AppendRecords(ids, large, nullptr, 1).message().find("max_record_bytes"),
            std::string::npos);
  const uint16_t one = 9;
  EXPECT_FALSE((*w)->Append(&one, nullptr, 1).ok());  // records go through AppendRecords
  const uint64_t fine[2] = {0, 32};
  EXPECT_TRUE((*w)->AppendRecords(ids, fine, nullptr, 1).ok());
  EXPECT_TRUE((*w)->Finish().ok());
}

// A written tokens dataset of raw chunks, forged: the first chunk's record table edited.
class HostileRecordTable : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("docs.rfd");
    ASSERT_TRUE(WriteDocuments(path_, Documents(200, 500)).ok());
  }
  // The error reading chunk 0 once `edit` changed its table (entries as uint64).
  std::string ErrorAfter(const std::function<void(uint64_t* table)>& edit) {
    testing::ForgeChunk(
        path_, 0, [&](uint8_t* stored, uint64_t) { edit(reinterpret_cast<uint64_t*>(stored)); });
    Result<Dataset> d = Dataset::Open(path_);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return "";
    std::vector<uint8_t> buf(d->max_chunk_bytes());
    const Status st = d->ReadChunk(0, buf.data());
    EXPECT_FALSE(st.ok());
    EXPECT_TRUE(st.IsCorruption());
    const std::string s = st.ToString();
    EXPECT_NE(s.find(path_), std::string::npos) << s;
    EXPECT_NE(s.find("chunk 0"), std::string::npos) << s;
    return s;
  }
  testing::TempDir dir_;
  std::string path_;
};

TEST_F(HostileRecordTable, AnOffsetPastTheChunkIsRefusedNamingItsByte) {
  const std::string s = ErrorAfter([](uint64_t* t) { t[3] = uint64_t{1} << 40; });
  EXPECT_NE(s.find("runs past"), std::string::npos) << s;
}

TEST_F(HostileRecordTable, AZeroSizeRecordIsRefused) {
  const std::string s = ErrorAfter([](uint64_t* t) { t[2] = t[1]; });
  EXPECT_NE(s.find("is empty"), std::string::npos) << s;
}

TEST_F(HostileRecordTable, DecreasingOffsetsAreRefused) {
  const std::string s = ErrorAfter([](uint64_t* t) { t[2] = t[1] - 2; });
  EXPECT_NE(s.find("negative size"), std::string::npos) << s;
}

TEST_F(HostileRecordTable, AHalfTokenIsRefused) {
  const std::string s = ErrorAfter([](uint64_t* t) { t[1] += 1; });
  EXPECT_NE(s.find("2-byte elements"), std::string::npos) << s;
}

TEST_F(HostileRecordTable, ATableNotStartingAtZeroIsRefused) {
  const std::string s = ErrorAfter([](uint64_t* t) { t[0] = 2; });
  EXPECT_NE(s.find("starts at 2"), std::string::npos) << s;
}

TEST_F(HostileRecordTable, ATableEndingElsewhereThanTheIndexSaysIsRefused) {
  // Two bytes more in the index than the table holds: the data size stays the same.
  testing::ForgeIndex(path_, [](std::vector<format::ChunkEntry>* e) { (*e)[0].record_bytes += 2; });
  const std::string s = ErrorAfter([](uint64_t*) {});
  EXPECT_NE(s.find("not at the index's"), std::string::npos) << s;
}

TEST(HostileRecordHeader, RecordBytesThatDisagreeWithTheDataSizeAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  for (const uint64_t bad : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 40}) {
    ASSERT_TRUE(WriteDocuments(path, Documents(200, 500)).ok());
    testing::ForgeIndex(path,
                        [&](std::vector<format::ChunkEntry>* e) { (*e)[1].record_bytes = bad; });
    const Status st = Dataset::Open(path).status();
    EXPECT_TRUE(st.IsCorruption());
    EXPECT_NE(st.ToString().find("bad chunk index entry: record bytes " + std::to_string(bad)),
              std::string::npos)
        << st.ToString();
    EXPECT_NE(st.ToString().find("chunk 1"), std::string::npos) << st.ToString();
  }
}

TEST(HostileRecordHeader, ARecordCountNoChunkCouldHoldIsRefusedBeforeAnythingIsSized) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  ASSERT_TRUE(WriteDocuments(path, Documents(50, 100)).ok());
  // 2^31 records a chunk: a table of 16 GiB, more than any chunk holds.
  testing::ForgeHeader(path, [](format::Header* h) { h->chunk_samples = 1u << 31; });
  const Status st = Dataset::Open(path).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.ToString().find("more than the format's"), std::string::npos) << st.ToString();
}

TEST(HostileRecordHeader, AnIndexClaimingMoreRecordsThanItsDataHoldsIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  ASSERT_TRUE(WriteDocuments(path, Documents(50, 100), {}, 1 << 20).ok());
  testing::ForgeIndex(path, [](std::vector<format::ChunkEntry>* e) {
    ASSERT_EQ(e->size(), 1u);
    (*e)[0].sample_count = 100000;  // 800 KB of table in a chunk of a few KB of data
  });
  testing::ForgeHeader(path, [](format::Header* h) {
    h->chunk_samples = 100000;
    h->total_samples = h->shard_samples = 100000;
  });
  const Status st = Dataset::Open(path).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.ToString().find("data size"), std::string::npos) << st.ToString();
}

TEST(HostileRecordHeader, RecordsOfAnImageDtypeAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  ASSERT_TRUE(WriteDocuments(path, Documents(20, 10)).ok());
  testing::ForgeHeader(path, [](format::Header* h) { h->sample_dtype = DType::kFloat32; });
  const Status st = Dataset::Open(path).status();
  EXPECT_NE(st.ToString().find("token ids are"), std::string::npos) << st.ToString();
}

TEST(HostileRecordHeader, AMediaTypeOnTokensIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  ASSERT_TRUE(WriteDocuments(path, Documents(20, 10)).ok());
  testing::ForgeHeader(path, [](format::Header* h) { h->media_type = "image/png"; });
  const Status st = Dataset::Open(path).status();
  EXPECT_NE(st.ToString().find("only bytes records"), std::string::npos) << st.ToString();
}

TEST(HostileRecordHeader, AnUnknownRecordKindIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  ASSERT_TRUE(WriteDocuments(path, Documents(20, 10)).ok());
  testing::ForgeHeader(path,
                       [](format::Header* h) { h->record_kind = static_cast<RecordKind>(4); });
  const Status st = Dataset::Open(path).status();
  EXPECT_NE(st.ToString().find("unknown record kind 4"), std::string::npos) << st.ToString();
}

// The origin (io/format.h): written, read back, kept apart from the media type, and refused where
// it holds what no writer writes.
TEST(Records, TokensKeepTheirOrigin) {
  testing::TempDir dir;
  DatasetSpec spec;
  spec.record_kind = RecordKind::kTokens;
  spec.sample_dtype = DType::kUInt16;
  spec.has_labels = false;
  spec.origin = "megatron;dtype=int32;documents=sequences";
  auto w = DatasetWriter::Create(dir.File("t.rfd"), spec, WriterOptions{});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const uint16_t ids[3] = {7, 8, 9};
  const uint64_t offsets[3] = {0, 1, 3};
  ASSERT_TRUE((*w)->AppendRecords(ids, offsets, nullptr, 2).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  Result<Dataset> d = Dataset::Open(dir.File("t.rfd"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header().origin, "megatron;dtype=int32;documents=sequences");
  EXPECT_EQ(d->header().media_type, "");

  spec.origin = "with space";
  EXPECT_NE(DatasetWriter::Create(dir.File("u.rfd"), spec, {})
                .status()
                .message()
                .find("origin 'with space': printable ASCII without spaces"),
            std::string::npos);
  spec.origin = std::string(64, 'x');
  EXPECT_FALSE(DatasetWriter::Create(dir.File("u.rfd"), spec, {}).ok());
}

TEST(HostileRecordHeader, AnOriginOfUnprintableBytesIsRefusedNamingTheByte) {
  testing::TempDir dir;
  const std::string path = dir.File("docs.rfd");
  ASSERT_TRUE(WriteDocuments(path, Documents(20, 10)).ok());
  testing::ForgeHeader(path, [](format::Header* h) { h->origin = "ab\tc"; });
  const Status st = Dataset::Open(path).status();
  EXPECT_NE(st.ToString().find("at byte 738: bad header: origin holds a byte that is not "
                               "printable ASCII"),
            std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace rf
