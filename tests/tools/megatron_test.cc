// ringfeed-convert megatron and export --format megatron: Megatron-LM's indexed dataset in, one
// tokens record a sequence, and back out byte for byte (every dtype code, documents of one
// sequence and of several, empty documents, compressed and sharded datasets, recompressed ones);
// and every malformed pair refused with one line naming the file and the byte, nothing written.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tests/testing/megatron_files.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::FailsWith;
using testing::FilesIn;
using testing::MegatronBytes;
using testing::MegatronFiles;
using testing::OneSequenceDocuments;
using testing::PositionalSequences;
using testing::ReadAll;
using testing::TempDir;
using testing::TokenRecords;
using testing::WriteAll;
using testing::WriteMegatron;


class Megatron : public ::testing::Test {
 protected:
  // Writes the pair as PREFIX "in", converts it with `extra` flags to d.rfd.
  Status ConvertPair(const MegatronFiles& f, const std::vector<std::string>& extra = {}) {
    WriteMegatron(t_.File("in"), f);
    std::vector<std::string> args = {"megatron", t_.File("in"),  "-o",  t_.File("d.rfd"),
                                     "-q",       "--chunk-size", "4KiB"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Convert(args);
  }
  // Exports `dataset` as PREFIX "out" and says whether both files are the input's bytes.
  ::testing::AssertionResult ExportsTheInput(const MegatronFiles& f,
                                             const std::string& dataset = "d.rfd") {
    const Status st =
        Convert({"export", t_.File(dataset), "--format", "megatron", "-o", t_.File("out"), "-q"});
    if (!st.ok()) return ::testing::AssertionFailure() << st.ToString();
    if (ReadAll(t_.File("out.bin")) != f.bin)
      return ::testing::AssertionFailure() << ".bin differs";
    if (ReadAll(t_.File("out.idx")) != f.idx)
      return ::testing::AssertionFailure() << ".idx differs";
    return ::testing::AssertionSuccess();
  }
  // The conversion failed naming `fragment`, and left nothing but the input pair.
  ::testing::AssertionResult Refused(const MegatronFiles& f, const std::string& fragment,
                                     const std::vector<std::string>& extra = {}) {
    ::testing::AssertionResult r = FailsWith(ConvertPair(f, extra), fragment);
    if (!r) return r;
    if (FilesIn(t_.path()) != std::vector<std::string>{"in.bin", "in.idx"})
      return ::testing::AssertionFailure() << "files were left behind";
    return r;
  }
  std::string Bin() { return t_.File("in.bin"); }
  std::string Idx() { return t_.File("in.idx"); }
  TempDir t_;
};

TEST_F(Megatron, OneSequenceDocumentsMakeRecordsWithoutLabelsAndExportByteExact) {
  const auto seqs = PositionalSequences(500, 40, 50000);
  const MegatronFiles f = MegatronBytes(8, seqs, OneSequenceDocuments(seqs.size()));
  for (const char* codec : {"none", "lz4", "zstd:1"}) {
    for (const char* shards : {"1", "3"}) {
      SCOPED_TRACE(std::string(codec) + ", " + shards + " shards");
      ASSERT_TRUE(ConvertPair(f, {"--compress", codec, "--shards", shards}).ok());
      Result<Dataset> d = Dataset::Open(t_.File("d.rfd"));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->header().record_kind, format::RecordKind::kTokens);
      EXPECT_EQ(d->header().sample_dtype, DType::kUInt16);
      EXPECT_FALSE(d->header().HasLabels());
      EXPECT_EQ(d->header().origin, "megatron;dtype=uint16;documents=sequences");
      EXPECT_GT(d->chunk_count(), 3u);
      EXPECT_EQ(TokenRecords(t_.File("d.rfd"), nullptr), seqs);
      EXPECT_TRUE(ExportsTheInput(f));
    }
  }
}

// Documents of several sequences, empty ones first, between and last: each record's label is its
// document number, and the document indices come back exactly.
TEST_F(Megatron, DocumentsOfSeveralSequencesAreLabelsAndExportByteExact) {
  const auto seqs = PositionalSequences(40, 30, 1000);
  const std::vector<int64_t> docs = {0, 0, 3, 3, 10, 11, 39, 40, 40};
  const MegatronFiles f = MegatronBytes(4, seqs, docs);
  ASSERT_TRUE(ConvertPair(f, {"--compress", "zstd"}).ok());
  std::vector<int64_t> labels;
  EXPECT_EQ(TokenRecords(t_.File("d.rfd"), &labels), seqs);
  std::vector<int64_t> want;
  for (size_t i = 0; i < seqs.size(); ++i) {
    int64_t k = 0;
    while (docs[k + 1] <= static_cast<int64_t>(i)) ++k;
    want.push_back(k);
  }
  EXPECT_EQ(labels, want);  // 1, 1, 1, 3 x 7, 4, 5 x 28, 6
  Result<Dataset> d = Dataset::Open(t_.File("d.rfd"));
  EXPECT_EQ(d->header().num_classes, docs.size() - 1);
  EXPECT_EQ(d->header().label_dtype, DType::kUInt8);
  EXPECT_EQ(d->header().sample_dtype, DType::kUInt16);  // int32 ids that all fit
  EXPECT_EQ(d->header().origin, "megatron;dtype=int32;documents=labels");
  EXPECT_TRUE(ExportsTheInput(f));
}

TEST_F(Megatron, MoreDocumentsThanUint8NamesTakeUint16Labels) {
  const auto seqs = PositionalSequences(600, 5, 300);
  std::vector<int64_t> docs;
  for (int64_t i = 0; i <= 600; i += 2) docs.push_back(i);  // 300 documents of two sequences
  const MegatronFiles f = MegatronBytes(8, seqs, docs);
  ASSERT_TRUE(ConvertPair(f).ok());
  EXPECT_EQ(Dataset::Open(t_.File("d.rfd"))->header().label_dtype, DType::kUInt16);
  EXPECT_TRUE(ExportsTheInput(f));
}

// Every integer dtype code: ids that fit are stored as uint16, wider ones as int32 (int64 only on
// request), and the export writes the input's own code back.
TEST_F(Megatron, EveryIntegerDtypeCodeExportsByteExact) {
  struct Case {
    uint8_t code;
    int64_t modulus, offset;
    std::vector<std::string> flags;
    DType stored;
  };
  const std::vector<Case> cases = {
      {1, 256, 0, {}, DType::kUInt16},
      {2, 128, 0, {}, DType::kUInt16},
      {3, 30000, 0, {}, DType::kUInt16},
      {8, 65536, 0, {}, DType::kUInt16},
      {4, 1000, 70000, {}, DType::kInt32},
      {5, 1000, 0, {}, DType::kUInt16},
      {5, 1000, 70000, {}, DType::kInt32},
      {5, 1000, int64_t{1} << 40, {"--dtype", "int64"}, DType::kInt64},
      {8, 65536, 0, {"--dtype", "int32"}, DType::kInt32},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("code " + std::to_string(c.code) + ", offset " + std::to_string(c.offset));
    const auto seqs = PositionalSequences(300, 20, c.modulus, c.offset);
    const MegatronFiles f = MegatronBytes(c.code, seqs, OneSequenceDocuments(seqs.size()));
    ASSERT_TRUE(ConvertPair(f, c.flags).ok());
    EXPECT_EQ(Dataset::Open(t_.File("d.rfd"))->header().sample_dtype, c.stored);
    EXPECT_EQ(TokenRecords(t_.File("d.rfd"), nullptr), seqs);
    EXPECT_TRUE(ExportsTheInput(f));
  }
}

TEST_F(Megatron, RecompressKeepsTheOriginSoTheExportStaysByteExact) {
  const auto seqs = PositionalSequences(200, 30, 1000);
  const MegatronFiles f = MegatronBytes(4, seqs, {0, 5, 5, 120, 200});
  ASSERT_TRUE(ConvertPair(f).ok());
  ASSERT_TRUE(
      Convert({"recompress", t_.File("d.rfd"), "-o", t_.File("z.rfd"), "--compress", "zstd", "-q"})
          .ok());
  EXPECT_EQ(Dataset::Open(t_.File("z.rfd"))->header().origin,
            "megatron;dtype=int32;documents=labels");
  EXPECT_TRUE(ExportsTheInput(f, "z.rfd"));
  std::string out;
  ASSERT_TRUE(Convert({"inspect", t_.File("z.rfd")}, &out).ok());
  EXPECT_NE(out.find("origin:       megatron;dtype=int32;documents=labels\n"), std::string::npos)
      << out;
}

// A tokens dataset made otherwise exports as one document a record in its stored dtype.
TEST_F(Megatron, AnyTokensDatasetExportsAsOneDocumentARecord) {
  const auto seqs = PositionalSequences(50, 10, 1000);
  std::string lines;
  for (const auto& s : seqs) {
    lines += "[";
    for (size_t j = 0; j < s.size(); ++j) {
      if (j != 0) lines += ',';  // apart: GCC 12's -Wrestrict misfires on "," + string
      lines += std::to_string(s[j]);
    }
    lines += "]\n";
  }
  WriteAll(t_.File("x.jsonl"), lines.data(), lines.size());
  ASSERT_TRUE(Convert({"jsonl", t_.File("x.jsonl"), "-o", t_.File("d.rfd"), "-q"}).ok());
  EXPECT_TRUE(ExportsTheInput(MegatronBytes(8, seqs, OneSequenceDocuments(seqs.size()))));
}

TEST_F(Megatron, ExportRefusesFixedShapeSamples) {
  ASSERT_TRUE(
      Convert({"synthetic", "--samples", "10", "--shape", "1,4,4", "-o", t_.File("s.rfd"), "-q"})
          .ok());
  EXPECT_TRUE(FailsWith(
      Convert({"export", t_.File("s.rfd"), "--format", "megatron", "-o", t_.File("e"), "-q"}),
      "--format megatron writes token ids; " + t_.File("s.rfd") + " holds fixed-shape samples"));
}

// The bad pairs. Offsets: the header is 34 bytes, sizes from 34 (4 each), pointers from 34 + 4N.
constexpr size_t kN = 6;
MegatronFiles Good(uint8_t code = 4) {
  return MegatronBytes(code, PositionalSequences(kN, 5, 100), OneSequenceDocuments(kN));
}
template <typename T>
void Put(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}
constexpr size_t kSizes = 34, kPointers = 34 + 4 * kN, kDocs = 34 + 12 * kN;

TEST_F(Megatron, AWrongMagicVersionOrDtypeCodeIsRefusedNamingTheByte) {
  MegatronFiles f = Good();
  f.idx[3] = 'X';
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 0: not a Megatron index"));
  f = Good();
  Put<uint64_t>(f.idx, 9, 2);
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 9: index version 2 (this reads 1)"));
  f = Good();
  f.idx[17] = 7;
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 17: dtype code 7 (float32): token ids are integers"));
  f.idx[17] = 9;
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 17: dtype code 9: Megatron's codes are 1 to 8"));
  f = Good();
  f.idx.resize(20);
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 20: file is 20 bytes, shorter than the 34-byte"));
}

TEST_F(Megatron, AnIndexOfTheWrongSizeIsRefused) {
  MegatronFiles f = Good();
  f.idx.resize(f.idx.size() + kN);  // a multimodal index's sequence modes
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 18: 6 sequences and 7 document indices make an index "
                                 "of 162 bytes; the file is 168 bytes"));
  f = Good();
  Put<uint64_t>(f.idx, 18, uint64_t{1} << 60);
  EXPECT_TRUE(Refused(f, "document indices do not fit it"));
}

TEST_F(Megatron, PointersThatDisagreeWithTheBinAreRefused) {
  MegatronFiles f = Good();
  int64_t p2;
  std::memcpy(&p2, f.idx.data() + kPointers + 8 * 2, 8);
  Put<int64_t>(f.idx, kPointers + 8 * 2, p2 - 4);  // overlaps sequence 1
  EXPECT_TRUE(Refused(f, Idx() + ": at byte " + std::to_string(kPointers + 16) +
                             ": sequence 2's pointer is " + std::to_string(p2 - 4) + ", not " +
                             std::to_string(p2) + ": it overlaps the sequence before it"));
  f = Good();
  Put<int64_t>(f.idx, kPointers + 8 * 5, int64_t{1} << 40);  // past the end
  EXPECT_TRUE(Refused(f, Idx() + ": at byte " + std::to_string(kPointers + 40) +
                             ": sequence 5's pointer is 1099511627776"));
  f = Good();
  Put<int32_t>(f.idx, kSizes + 4 * 5, 1000);  // sizes times the dtype run past the .bin
  EXPECT_TRUE(
      Refused(f, Idx() + ": at byte " + std::to_string(kSizes + 20) + ": sequence 5 of 1000 ids"));
  f = Good();
  f.bin.resize(f.bin.size() + 4);  // a .bin longer than the sequences
  EXPECT_TRUE(Refused(f, Bin() + ": at byte " + std::to_string(f.bin.size() - 4) +
                             ": the .idx's 6 sequences end here, but the file holds"));
}

TEST_F(Megatron, AnEmptySequenceIsRefusedNotSkipped) {
  const MegatronFiles f = MegatronBytes(4, {{1, 2}, {}, {3}}, OneSequenceDocuments(3));
  EXPECT_TRUE(Refused(f, Idx() + ": at byte 38: sequence 1 has size 0 (a record holds one id at "
                                 "least: an empty sequence is refused, not skipped"));
  MegatronFiles g = Good();
  Put<int32_t>(g.idx, kSizes, -1);
  EXPECT_TRUE(Refused(g, Idx() + ": at byte 34: sequence 0 has size -1"));
}

TEST_F(Megatron, DocumentIndicesOutOfOrderAreRefused) {
  MegatronFiles f = Good();
  Put<int64_t>(f.idx, kDocs + 8 * 6, 5);
  EXPECT_TRUE(Refused(f, Idx() + ": at byte " + std::to_string(kDocs + 48) +
                             ": document index 6 is 5, the last; the last is the sequence count"));
  f = Good();
  Put<int64_t>(f.idx, kDocs + 8 * 3, 1);
  EXPECT_TRUE(Refused(f, Idx() + ": at byte " + std::to_string(kDocs + 24) +
                             ": document index 3 is 1, below the one before it (2)"));
  f = Good();
  Put<int64_t>(f.idx, kDocs, 1);
  EXPECT_TRUE(Refused(f, ": document index 0 is 1, not 0"));
}

TEST_F(Megatron, BadIdsAreRefusedNamingTheirByteInTheBin) {
  // Sequence 3 holds (21 + j) % 100 for j < 1 + 39 % 5 = 5 ids; it starts after 2 + 4 + 1 ids.
  const uint64_t seq3 = (2 + 4 + 1) * 4;
  MegatronFiles f = Good();
  EXPECT_TRUE(Refused(f,
                      Bin() + ": at byte " + std::to_string(seq3 + 4 * 2) +
                          ": id 23 (id 2 of document 3) is not below --vocab-size 23",
                      {"--vocab-size", "23"}));
  Put<int32_t>(f.bin, seq3 + 4, -7);
  EXPECT_TRUE(Refused(f, Bin() + ": at byte " + std::to_string(seq3 + 4) +
                             ": id -7 (id 1 of document 3) is negative"));
  f = MegatronBytes(5, {{1}, {2, int64_t{1} << 31}}, OneSequenceDocuments(2));
  EXPECT_TRUE(Refused(f, Bin() + ": at byte 16: id 2147483648 (id 1 of document 1) does not fit "
                                 "int32 (ids of 2^31 or more are stored only as int64"));
  f = Good(8);
  EXPECT_TRUE(Refused(f, "--vocab-size 70000 names ids up to 69999, more than --dtype uint16 holds",
                      {"--vocab-size", "70000", "--dtype", "uint16"}));
}

TEST_F(Megatron, ADocumentLongerThanARecordIsRefused) {
  const MegatronFiles f =
      MegatronBytes(8, {{1, 2}, std::vector<int64_t>(5000, 3)}, OneSequenceDocuments(2));
  EXPECT_TRUE(Refused(f,
                      Bin() + ": at byte 4: document 1 holds 5000 ids, more than the 4096 a "
                              "record holds (--max-record-size",
                      {"--max-record-size", "8KiB"}));
}

TEST_F(Megatron, AnOutputThatIsAnInputIsRefused) {
  WriteMegatron(t_.File("in"), Good());
  EXPECT_TRUE(FailsWith(Convert({"megatron", t_.File("in"), "-o", t_.File("in.idx"), "-q"}),
                        t_.File("in.idx")));
  EXPECT_EQ(ReadAll(t_.File("in.idx")), Good().idx);
  EXPECT_EQ(FilesIn(t_.path()), (std::vector<std::string>{"in.bin", "in.idx"}));
}

TEST_F(Megatron, TheBinaryExitsOneWithOneLineAndWritesNothing) {
  MegatronFiles f = Good();
  f.idx[17] = 6;
  WriteMegatron(t_.File("in"), f);
  std::string out;
  const int rc = testing::RunCommand(testing::ProgramPath("ringfeed-convert") + " megatron " +
                                         t_.File("in") + " -o " + t_.File("d.rfd"),
                                     &out);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "ringfeed-convert: " + Idx() +
                     ": at byte 17: dtype code 6 (float64): token ids are integers\n");
  EXPECT_EQ(FilesIn(t_.path()), (std::vector<std::string>{"in.bin", "in.idx"}));
}

}  // namespace
}  // namespace rf
