// Issue 40, M1: the sizes an index declares, forged with every checksum recomputed, against what
// the header and the file allow. A 12 KiB file whose entry declared 1 GiB of data made a reader
// size 16 ring slots of 1 GiB (16.9 GB resident) before refusing it. Each test plants one such
// size and asserts the refusal at open, naming the file, the chunk and the entry's byte, before
// any buffer is sized from it; and that the bounds do not refuse what a writer really makes.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/codec.h"
#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/format.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

using testing::TempDir;

constexpr uint64_t kGiB = uint64_t{1} << 30;

// Three token records of 5,000 uint16 ids (10,000 bytes) each, in one chunk: the file of the
// issue's reproduction (12 KiB stored where compressed). Format `version` 2 or 3.
std::string WriteThreeRecords(const std::string& path, uint32_t version, CodecSpec codec = {}) {
  std::vector<uint16_t> ids(5000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(i % 16);
  const Status st = testing::WriteDocuments(path, {ids, ids, ids}, codec, 4 << 20,
                                            /*labels=*/false, 1, version);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return path;
}

// Forges the header's largest record to 2^31 - 1 ids and chunk 0's data size to data(frame) (its
// record bytes to match), as a careful forger would; returns the chunk's frame size.
uint64_t ForgeDataFromFrame(const std::string& path,
                            const std::function<uint64_t(uint64_t frame)>& data) {
  testing::ForgeHeader(path, [](format::Header* h) {
    ASSERT_TRUE(format::SetSampleShape({(uint64_t{1} << 31) - 1}, h).ok());
  });
  uint64_t frame = 0;
  testing::ForgeIndex(path, [&](std::vector<format::ChunkEntry>* e) {
    ASSERT_TRUE((*e)[0].compressed());
    frame = (*e)[0].frame_bytes;
    (*e)[0].data_bytes = data(frame);
    (*e)[0].record_bytes = (*e)[0].data_bytes - format::RecordLayoutFor(3, 1).records_offset;
  });
  return frame;
}

std::string OpenError(const std::string& path) {
  Result<Dataset> d = Dataset::Open(path);
  return d.ok() ? "opened" : d.status().ToString();
}

// Where entry 0 of the file's index lies (its header's index offset).
uint64_t EntryAt(const std::string& path) {
  Result<Dataset> d = Dataset::Open(path);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? d->header().index_offset : 0;
}

TEST(HostileSizes, AVersionThreeEntryDeclaringAGibibyteOfRecordsIsRefusedAtOpen) {
  TempDir t;
  const std::string p = WriteThreeRecords(t.File("v3.rfd"), 3);
  const uint64_t at = EntryAt(p);
  // The data and record bytes agree with each other (a forger's care), not with the header's
  // largest record: 3 records of at most 10,000 bytes cannot take 1 GiB.
  testing::ForgeIndex(p, [](std::vector<format::ChunkEntry>* e) {
    (*e)[0].data_bytes = kGiB;
    (*e)[0].record_bytes = kGiB - format::RecordLayoutFor(3, 1).records_offset;
  });
  EXPECT_EQ(OpenError(p), p + ": chunk 0 at byte " + std::to_string(at) +
                              ": bad chunk index entry: data size 1073741824 for 3 records of at "
                              "most 10000 bytes each (a multiple of 4096 from 4096 to 32768)");
}

TEST(HostileSizes, AVersionTwoEntryWithOnlyItsDataSizeForgedIsRefusedAtOpen) {
  TempDir t;
  const std::string p = WriteThreeRecords(t.File("v2.rfd"), 2);
  const uint64_t at = EntryAt(p);
  testing::ForgeIndex(p, [](std::vector<format::ChunkEntry>* e) { (*e)[0].data_bytes = kGiB; });
  EXPECT_EQ(OpenError(p), p + ": chunk 0 at byte " + std::to_string(at) +
                              ": bad chunk index entry: data size 1073741824 for 3 records of at "
                              "most 10000 bytes each (a multiple of 4096 from 4096 to 32768)");
}

// With the header's largest record forged too (2^31 - 1 ids), 3 records may take 1 GiB; a raw
// chunk's data is then its stored extent (the file bounds it), and a compressed chunk's is what
// its frame can make: a frame of a few KiB cannot make 1 GiB.
TEST(HostileSizes, AForgedLargestRecordCannotLetATinyFrameDeclareAGibibyte) {
  TempDir t;
  const std::string p = WriteThreeRecords(t.File("z.rfd"), 3, CodecSpec{Codec::kZstd, 3});
  const uint64_t at = EntryAt(p);
  const uint64_t frame = ForgeDataFromFrame(p, [](uint64_t) { return kGiB; });
  ASSERT_LT(frame, 4096u);
  EXPECT_EQ(OpenError(p), p + ": chunk 0 at byte " + std::to_string(at) +
                              ": bad chunk index entry: data size 1073741824 from a zstd frame "
                              "of " +
                              std::to_string(frame) + " bytes, more than zstd can make of it (" +
                              std::to_string(frame * kZstdMaxExpansion) + ")");
}

TEST(HostileSizes, AnLz4FrameDeclaringMoreThan255TimesItsSizeIsRefused) {
  TempDir t;
  const std::string p = WriteThreeRecords(t.File("l.rfd"), 3, CodecSpec{Codec::kLz4, 0});
  const uint64_t frame = ForgeDataFromFrame(
      p, [](uint64_t f) { return format::RoundUp(f * kLz4MaxExpansion + 1, format::kAlign); });
  const std::string error = OpenError(p);
  EXPECT_NE(error.find("bad chunk index entry: data size "), std::string::npos) << error;
  EXPECT_NE(error.find(" from a lz4 frame of " + std::to_string(frame) +
                       " bytes, more than lz4 can make of it (" +
                       std::to_string(frame * kLz4MaxExpansion) + ")"),
            std::string::npos)
      << error;
}

// The bounds are the codecs' own, not a guess: 64 MiB of zeros, zstd's best case (a frame of
// about 2 KiB: 31,000 bytes a byte, near the 32,768 of its format), opens and reads back.
TEST(HostileSizes, ZstdsMostCompressibleChunkIsStillAccepted) {
  TempDir t;
  const std::string p = t.File("zeros.rfd");
  DatasetSpec spec;
  spec.shape = {1024, 1024};
  spec.sample_dtype = DType::kUInt8;
  spec.has_labels = false;
  WriterOptions o;
  o.codec = CodecSpec{Codec::kZstd, 19};
  o.chunk_bytes = 64 << 20;
  o.threads = 1;
  auto w = DatasetWriter::Create(p, spec, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::vector<uint8_t> zeros(64 << 20, 0);
  ASSERT_TRUE((*w)->Append(zeros.data(), nullptr, 63).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  Result<Dataset> d = Dataset::Open(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->chunk_count(), 1u);
  const format::ChunkEntry& e = d->chunk(0).entry;
  ASSERT_TRUE(e.compressed());
  EXPECT_GT(e.data_bytes, e.frame_bytes * 20000);  // near the bound: the test means something
  EXPECT_LE(e.data_bytes, MaxDecompressedBytes(Codec::kZstd, e.frame_bytes));
  std::vector<uint8_t> data(d->max_chunk_bytes(), 1);
  const Status st = d->ReadChunk(0, data.data());
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(data[12345], 0);
}

// What a reader sizes its buffers from: the largest raw chunk (read into a ring slot) and the
// largest compressed chunk's stored extent (read into a stored buffer), each from its own
// chunks: a raw chunk no longer sizes the stored buffers, nor a frame the registered slots.
TEST(HostileSizes, RawAndCompressedChunksSizeTheirOwnBuffers) {
  TempDir t;
  const std::string raw = WriteThreeRecords(t.File("raw.rfd"), 3);
  Result<Dataset> r = Dataset::Open(raw);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_raw_bytes(), r->chunk(0).entry.stored_bytes);
  EXPECT_EQ(r->max_stored_bytes(), 0u);
  const std::string z = WriteThreeRecords(t.File("z.rfd"), 3, CodecSpec{Codec::kZstd, 3});
  Result<Dataset> c = Dataset::Open(z);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->chunk(0).entry.compressed());
  EXPECT_EQ(c->max_raw_bytes(), 0u);
  EXPECT_EQ(c->max_stored_bytes(), c->chunk(0).entry.stored_bytes);
  EXPECT_EQ(c->max_chunk_bytes(), c->chunk(0).entry.data_bytes);
}

}  // namespace
}  // namespace rf
