// Whole datasets a hostile user (or a careless one) hands Dataset::Open: forged fields with every
// checksum recomputed (tests/testing/forged_dataset.h), shards renamed or swapped, a directory,
// labels the header's class count does not allow. Each is refused naming the file, and the chunk
// and byte offset where they apply, before anything is allocated from the forged value.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf {
namespace {

using testing::TempDir;

// 400 positional samples of 2x3x5 uint8, labels i % 7, in chunks of 130 (4 KiB stored).
std::vector<std::string> WriteDataset(const std::string& path, uint32_t shards = 1) {
  std::vector<std::string> files;
  testing::WritePositionalDataset(
      path, 400,
      {.channels = 2, .height = 3, .width = 5, .classes = 7, .shards = shards, .chunk_bytes = 4096},
      &files);
  return files;
}

std::string OpenError(const std::string& path) {
  Result<Dataset> d = Dataset::Open(path);
  return d.ok() ? "opened" : d.status().ToString();
}

TEST(HostileDataset, AChunkOffsetPastTheFileIsRefusedNamingFileChunkAndEntry) {
  TempDir t;
  const std::string p = WriteDataset(t.File("o.rfd"))[0];
  testing::ForgeIndex(p, [](std::vector<format::ChunkEntry>* e) {
    (*e)[2].offset = ~uint64_t{0} - format::kAlign + 1;  // + stored_bytes wraps to 0
  });
  EXPECT_EQ(OpenError(p), p + ": chunk 2 at byte 20576: bad chunk index entry: chunk at byte "
                              "18446744073709547520 of 4096 bytes runs past the index at byte "
                              "20480");
}

// A file of nothing but a header whose index "wraps" to end at byte 4096: it passed the file
// size check and was read at offset 2^64-4096.
TEST(HostileDataset, AHeaderOnlyFileWithAWrappingIndexIsRefused) {
  TempDir t;
  format::Header h;
  h.channels = h.height = h.width = 1;
  h.num_classes = 2;
  h.total_samples = h.shard_samples = 100;
  h.chunk_samples = 1;
  h.total_chunks = h.shard_chunks = 100;
  h.index_offset = ~uint64_t{0} - format::kAlign + 1;
  h.file_size = h.index_offset + format::IndexStoredBytes(100);  // 4096
  std::vector<uint8_t> file(format::kHeaderBytes);
  format::EncodeHeader(h, file.data());
  testing::WriteAll(t.File("w.rfd"), file);
  EXPECT_EQ(OpenError(t.File("w.rfd")),
            t.File("w.rfd") +
                ": at byte 96: bad header: file size 4096 does not match the "
                "index at 18446744073709547520");
}

TEST(HostileDataset, ForgedClassCountIsRefusedBeforeTheIndexIsRead) {
  TempDir t;
  const std::string p = WriteDataset(t.File("c.rfd"))[0];
  testing::ForgeHeader(p, [](format::Header* h) { h->num_classes = 0xffffffffu; });
  EXPECT_EQ(OpenError(p), p + ": at byte 52: bad header: 4294967295 classes; uint8 labels name at "
                              "most 256");
}

// Issue 15, defect 12: swapped shards named the same file twice ("x-00000...: shard does not
// belong to the dataset of x-00000...").
TEST(HostileDataset, SwappedShardsAreNamedAsSwapped) {
  TempDir t;
  const std::vector<std::string> f = WriteDataset(t.File("s.rfd"), 2);
  ASSERT_EQ(f.size(), 2u);
  std::filesystem::rename(f[0], t.File("tmp"));
  std::filesystem::rename(f[1], f[0]);
  std::filesystem::rename(t.File("tmp"), f[1]);
  for (const std::string& open : {t.File("s.rfd"), f[0], f[1]}) {
    const std::string err = OpenError(open);
    EXPECT_TRUE(err == f[0] +
                           ": at byte 24: header says shard 1 of 2, the file name shard 0 of 2 "
                           "(shards renamed or swapped?)" ||
                err == f[1] +
                           ": at byte 24: header says shard 0 of 2, the file name shard 1 of 2 "
                           "(shards renamed or swapped?)")
        << "opening " << open << ": " << err;
  }
}

// A shard count that does not match the files present: the shards of a 2-shard dataset renamed
// as 3 shards, and a single-file dataset given a shard's name.
TEST(HostileDataset, AShardCountThatDoesNotMatchTheFileNamesIsRefused) {
  TempDir t;
  const std::vector<std::string> f = WriteDataset(t.File("n.rfd"), 2);
  std::filesystem::rename(f[0], t.File("n-00000-of-00003.rfd"));
  std::filesystem::rename(f[1], t.File("n-00001-of-00003.rfd"));
  EXPECT_EQ(OpenError(t.File("n.rfd")),
            t.File("n-00000-of-00003.rfd") +
                ": at byte 24: header says shard 0 of 2, the file name shard 0 of 3 (shards "
                "renamed or swapped?)");

  const std::string one = WriteDataset(t.File("one.rfd"))[0];
  std::filesystem::rename(one, t.File("one-00000-of-00002.rfd"));
  EXPECT_EQ(OpenError(t.File("one-00000-of-00002.rfd")),
            t.File("one-00000-of-00002.rfd") +
                ": at byte 24: header says shard 0 of 1, the file name shard 0 of 2 (shards "
                "renamed or swapped?)");
}

// Issue 15, defect 12: a directory as the dataset said "No such file". A directory is a
// dataset now (its datasets read as one); one without any says so, and a directory named as a
// part is named as a directory.
TEST(HostileDataset, ADirectoryWithoutADatasetIsNamedAsADirectory) {
  TempDir t;
  EXPECT_EQ(OpenError(t.path()), t.path() +
                                     ": no dataset in this directory (a directory is read as "
                                     "the datasets in it: .rfd files, or complete shard sets)");
  std::filesystem::create_directory(t.File("d.rfd"));
  EXPECT_EQ(OpenError(t.path()), t.File("d.rfd") +
                                     ": a directory, not a dataset (a .rfd file, or the "
                                     "base name of its shards)");
}

// Issue 15, defect 10: labels at or beyond the class count in a file whose checksums hold.
TEST(HostileDataset, ALabelOutsideTheClassCountIsRefusedNamingFileChunkSampleAndOffset) {
  TempDir t;
  const std::string p = WriteDataset(t.File("l.rfd"))[0];
  testing::ForgeLabel(p, 2, 3, 200);
  auto d = Dataset::Open(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->chunk(2).entry.first_sample, 260u);
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  EXPECT_TRUE(d->ReadChunk(0, buf.data()).ok());
  const Status st = d->ReadChunk(2, buf.data());
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  const uint64_t at = d->chunk(2).entry.offset + d->LabelsOffset(2) + 3;
  EXPECT_EQ(st.ToString(), p + ": chunk 2 at byte " + std::to_string(at) +
                               ": label 200 of sample 263 is outside [0, 7), the header's class "
                               "count");
  EXPECT_EQ(d->CheckLabels(2, buf.data()).ToString(), st.ToString());
}

TEST(HostileDataset, ANegativeInt32LabelIsRefused) {
  TempDir t;
  const std::string p = testing::WritePositionalDataset(
      t.File("n.rfd"), 50, {.classes = 5, .label_dtype = DType::kInt32, .chunk_bytes = 4096});
  testing::ForgeLabel(p, 0, 7, -1);
  auto d = Dataset::Open(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  const Status st = d->ReadChunk(0, buf.data());
  EXPECT_NE(st.ToString().find(": label -1 of sample 7 is outside [0, 5)"), std::string::npos)
      << st.ToString();
}

// Issue 40 (noticed with M2): a FIFO in a shard's place made Dataset::Open wait for a writer
// forever (ringfeed train, ringfeed read, the Loader); refused at once, naming it.
TEST(HostileDataset, AFifoInAShardsPlaceIsRefusedAtOnce) {
  TempDir t;
  const std::vector<std::string> f = WriteDataset(t.File("f.rfd"), 2);
  ASSERT_EQ(std::remove(f[1].c_str()), 0);
  ASSERT_EQ(::mkfifo(f[1].c_str(), 0600), 0);
  EXPECT_EQ(OpenError(t.File("f.rfd")),
            f[1] + ": a FIFO, not a dataset file (a dataset's files are regular files)");
  EXPECT_EQ(OpenError(f[1]),
            f[1] + ": a FIFO, not a dataset (a .rfd file, or the base name of its shards)");
}

// Issue 40, A1: a dataset without labels stores every label as a uint8 0, and the readers hand
// them out; one forged to 9 (checksums recomputed) passed `verify`, and a loader handed out
// labels [0 0 9 0]. Refused as a label past the class count is, for tensors and for records.
TEST(HostileDataset, ALabelOtherThanZeroInADatasetWithoutLabelsIsRefused) {
  TempDir t;
  const std::string tensors = t.File("t.rfd");
  {
    DatasetSpec spec;
    spec.shape = {16};
    spec.has_labels = false;
    auto w = DatasetWriter::Create(tensors, spec, WriterOptions{});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    const std::vector<uint8_t> samples = testing::PositionalSamples(4, 16);
    ASSERT_TRUE((*w)->Append(samples.data(), nullptr, 4).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  const std::string records = t.File("r.rfd");
  ASSERT_TRUE(
      testing::WriteDocuments(records, testing::Documents(20, 30), {}, 16 << 10, false).ok());
  for (const std::string& p : {tensors, records}) {
    testing::ForgeLabel(p, 0, 2, 9);
    auto d = Dataset::Open(p);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(d->header().num_classes, 0u);
    std::vector<uint8_t> buf(d->max_chunk_bytes());
    const Status st = d->ReadChunk(0, buf.data());
    ASSERT_TRUE(st.IsCorruption()) << st.ToString();
    const uint64_t at = d->chunk(0).entry.offset + d->LabelsOffset(0) + 2;
    EXPECT_EQ(st.ToString(), p + ": chunk 0 at byte " + std::to_string(at) +
                                 ": label 9 of sample 2 is not 0: the header says the dataset has "
                                 "no labels (0 classes)");
    EXPECT_EQ(d->CheckLabels(0, buf.data()).ToString(), st.ToString());
  }
}

// Version 2: 400 positional samples of 1x32x32 in chunks of 16 KiB (15 samples), zstd.
std::string WriteCompressed(const std::string& path) {
  return testing::WritePositionalDataset(
      path, 400,
      {.channels = 1, .height = 32, .width = 32, .chunk_bytes = 16384, .codec = {Codec::kZstd, 3}});
}

// The format bounds a compressed chunk's data, and a header naming larger chunks is refused
// before the index is read or a buffer sized.
TEST(HostileDataset, AVersionTwoChunkPastTheFormatsBoundIsRefusedBeforeTheIndexIsRead) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("b.rfd"));
  testing::ForgeHeader(p, [](format::Header* h) {
    h->chunk_samples = 1u << 20;  // 1 GiB of samples and 1 MiB of labels
    h->total_chunks = 1;
  });
  EXPECT_EQ(OpenError(p), p + ": at byte 72: bad header: chunks of 1048576 samples of 1024 bytes "
                              "are 1074790400 bytes, more than the format's 1073741824");
}

// A forged entry of a version 2 index (64-byte entries), refused naming the chunk and its entry.
TEST(HostileDataset, AForgedVersionTwoEntryIsRefusedNamingFileChunkAndEntry) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("e.rfd"));
  auto d = Dataset::Open(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const uint64_t entry5 = d->header().index_offset + 5 * format::kIndexEntryBytesV2;
  testing::ForgeIndex(p, [](std::vector<format::ChunkEntry>* e) {
    (*e)[5].data_bytes = uint64_t{1} << 40;  // a bomb's declaration
  });
  EXPECT_EQ(OpenError(p), p + ": chunk 5 at byte " + std::to_string(entry5) +
                              ": bad chunk index entry: data size 1099511627776 does not match "
                              "its 15 samples (16384 bytes)");
  WriteCompressed(p);
  testing::ForgeIndex(
      p, [](std::vector<format::ChunkEntry>* e) { (*e)[5].codec = static_cast<Codec>(7); });
  EXPECT_EQ(OpenError(p), p + ": chunk 5 at byte " + std::to_string(entry5) +
                              ": bad chunk index entry: unknown codec id 7");
  WriteCompressed(p);
  testing::ForgeIndex(p, [](std::vector<format::ChunkEntry>* e) { (*e)[5].frame_bytes += 4096; });
  EXPECT_NE(OpenError(p).find(p + ": chunk 5 at byte " + std::to_string(entry5) +
                              ": bad chunk index entry: zstd frame of "),
            std::string::npos);
}

// A label beyond the class count inside a compressed chunk (decompressed, changed, compressed
// again, the checksum recomputed): refused naming the chunk, at the chunk's offset (the label
// lies at no byte of the file: only in the chunk's data, whose byte the message gives).
TEST(HostileDataset, ALabelOutsideTheClassCountInACompressedChunkIsRefusedNamingItsDataByte) {
  TempDir t;
  const std::string p = WriteCompressed(t.File("l.rfd"));
  auto d = Dataset::Open(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const format::ChunkEntry e = d->chunk(3).entry;
  ASSERT_TRUE(e.compressed());
  std::vector<uint8_t> data(e.data_bytes);
  ASSERT_TRUE(d->ReadChunk(3, data.data()).ok());
  data[d->LabelsOffset(3) + 4] = 200;
  Compressor c({Codec::kZstd, 3});
  std::vector<uint8_t> frame(CompressBound(Codec::kZstd, data.size()));
  auto n = c.Compress(data.data(), data.size(), frame.data(), frame.size());
  ASSERT_TRUE(n.ok());
  frame.resize(*n);
  testing::ForgeFrame(p, 3, Codec::kZstd, frame);
  d = Dataset::Open(p);  // the forged index
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const Status st = d->ReadChunk(3, data.data());
  EXPECT_EQ(st.ToString(), p + ": chunk 3 at byte " + std::to_string(e.offset) +
                               ": label 200 of sample 49 (byte " +
                               std::to_string(d->LabelsOffset(3) + 4) +
                               " of the chunk's data) is outside [0, 10), the header's class "
                               "count");
}

}  // namespace
}  // namespace rf
