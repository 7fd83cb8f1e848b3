// Samples of several fields (io/fields.h): the field table's text and rules, the header's table,
// what the writer lays out and the readers take back, and the lying tables and samples refused.
#include "io/fields.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "io/checksum.h"
#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/format.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using format::FieldKind;
using format::FieldSpec;

constexpr const char* kPairs = "jpg=image/jpeg,txt=tokens:int32,emb=tensor:float32:2x3,cls=label";

std::vector<FieldSpec> Pairs() { return format::ParseFields(kPairs).value(); }

// Sample i: a JPEG-like run of 5 + i % 9 bytes, i % 4 caption ids (some empty), a 2x3 tensor.
struct Sample {
  std::vector<uint8_t> jpg;
  std::vector<int32_t> txt;
  std::vector<float> emb;
  int64_t label;
};
Sample MakeSample(uint64_t i) {
  Sample s;
  for (uint64_t k = 0; k < 5 + i % 9; ++k) s.jpg.push_back(static_cast<uint8_t>(i * 3 + k));
  for (uint64_t k = 0; k < i % 4; ++k) s.txt.push_back(static_cast<int32_t>(1000 * i + k));
  for (int k = 0; k < 6; ++k) s.emb.push_back(static_cast<float>(i) + 0.5f * k);
  s.label = static_cast<int64_t>(i % 3);
  return s;
}

std::vector<uint8_t> Record(const Sample& s) {
  const uint8_t* parts[3] = {s.jpg.data(), reinterpret_cast<const uint8_t*>(s.txt.data()),
                             reinterpret_cast<const uint8_t*>(s.emb.data())};
  const uint64_t sizes[3] = {s.jpg.size(), s.txt.size() * 4, s.emb.size() * 4};
  std::vector<uint8_t> r;
  format::EncodeSample(Pairs(), parts, sizes, &r);
  return r;
}

Status WritePairs(const std::string& path, uint64_t n, CodecSpec codec = {}) {
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kFields;
  spec.fields = Pairs();
  spec.num_classes = 3;
  WriterOptions o;
  o.chunk_bytes = 4096;
  o.codec = codec;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> w, DatasetWriter::Create(path, spec, o));
  for (uint64_t i = 0; i < n; ++i) {
    const Sample s = MakeSample(i);
    const std::vector<uint8_t> r = Record(s);
    const uint64_t offsets[2] = {0, r.size()};
    const uint8_t label = static_cast<uint8_t>(s.label);
    RF_RETURN_IF_ERROR(w->AppendRecords(r.data(), offsets, &label, 1));
  }
  return w->Finish();
}

TEST(Fields, TheTextReadsEachKindAndWritesItBack) {
  const std::vector<FieldSpec> f = Pairs();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].kind, FieldKind::kBytes);
  EXPECT_EQ(f[0].media_type, "image/jpeg");
  EXPECT_TRUE(f[0].image());
  EXPECT_EQ(f[1].kind, FieldKind::kTokens);
  EXPECT_EQ(f[1].dtype, DType::kInt32);
  EXPECT_EQ(f[2].kind, FieldKind::kTensor);
  EXPECT_EQ(f[2].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(f[2].TensorBytes(), 24u);
  EXPECT_EQ(f[3].kind, FieldKind::kLabel);
  EXPECT_EQ(format::FieldsText(f), kPairs);
  EXPECT_EQ(format::FieldsText(format::ParseFields("a=bytes,b=bytes:text/plain").value()),
            "a=bytes,b=text/plain");
}

TEST(Fields, TheRulesRefuseEachBadTableNamingTheField) {
  auto refusal = [](const std::string& text, bool labels = false) {
    Result<std::vector<FieldSpec>> f = format::ParseFields(text);
    if (!f.ok()) return f.status().message();
    for (FieldSpec& s : *f) {
      if (s.kind == FieldKind::kLabel) s.dtype = DType::kUInt8;
    }
    return format::CheckFields(*f, labels, DType::kUInt8).message();
  };
  EXPECT_NE(refusal("a=image/jpeg,a=bytes").find("field 'a': named twice"), std::string::npos);
  EXPECT_NE(refusal(".a=bytes").find("field '.a': a name is"), std::string::npos);
  EXPECT_NE(refusal("a b=bytes").find("field 'a b'"), std::string::npos);
  EXPECT_NE(refusal("t=tokens:float32").find("field 't': token ids of float32"), std::string::npos);
  EXPECT_NE(refusal("t=tokens:nope").find("unknown dtype 'nope'"), std::string::npos);
  EXPECT_NE(refusal("e=tensor:uint8:0x3").find("field 'e'"), std::string::npos);
  EXPECT_NE(refusal("e=tensor:uint8:3y3").find("field 'e': shape"), std::string::npos);
  EXPECT_NE(refusal("c=label").find("a label field in a dataset without labels"),
            std::string::npos);
  EXPECT_NE(refusal("c=label,d=label,x=bytes", true).find("a second label field"),
            std::string::npos);
  EXPECT_NE(refusal("x=bytes", true).find("no field is the label"), std::string::npos);
  EXPECT_NE(refusal("c=label", true).find("a field besides its label"), std::string::npos);
  EXPECT_NE(refusal("x=what").find("field 'x': type 'what' is none of"), std::string::npos);
  EXPECT_NE(refusal("x").find("'x' is not NAME=TYPE"), std::string::npos);
  std::string many;
  for (int i = 0; i <= 16; ++i) many += (i ? ",f" : "f") + std::to_string(i) + "=bytes";
  EXPECT_NE(refusal(many).find("17 given; a sample has 1 to 16"), std::string::npos);
  EXPECT_EQ(refusal("x=bytes,y=tokens:uint16"), "");
}

TEST(Fields, SplitSampleTakesTheLayoutAndRefusesEachBreakOfIt) {
  const std::vector<FieldSpec> f = Pairs();
  const Sample s = MakeSample(7);
  std::vector<uint8_t> r = Record(s);
  format::FieldSpan spans[3];
  std::string why;
  ASSERT_TRUE(format::SplitSample(f, r.data(), r.size(), spans, &why)) << why;
  EXPECT_EQ(spans[0].offset, 12u);
  EXPECT_EQ(spans[0].size, s.jpg.size());
  EXPECT_EQ(std::memcmp(r.data() + spans[1].offset, s.txt.data(), spans[1].size), 0);
  EXPECT_EQ(spans[2].size, 24u);
  EXPECT_FALSE(format::SplitSample(f, r.data(), 8, spans, &why));
  EXPECT_NE(why.find("shorter than its 3 field lengths"), std::string::npos);
  std::vector<uint8_t> bad = r;
  bad[0] = 0xff;  // the image's length past the sample
  EXPECT_FALSE(format::SplitSample(f, bad.data(), bad.size(), spans, &why));
  EXPECT_NE(why.find("field 'jpg' of "), std::string::npos) << why;
  bad = r;
  bad[4] += 1;  // a caption of 13 bytes: no whole number of int32 ids
  bad[0] -= 1;
  EXPECT_FALSE(format::SplitSample(f, bad.data(), bad.size(), spans, &why));
  EXPECT_NE(why.find("tokens field 'txt' of 13 bytes, no whole number of int32 ids"),
            std::string::npos)
      << why;
  bad = r;
  bad[8] = 20;  // a tensor of 20 bytes, not 24
  EXPECT_FALSE(format::SplitSample(f, bad.data(), bad.size(), spans, &why));
  EXPECT_NE(why.find("tensor field 'emb' of 20 bytes, not its shape's 24"), std::string::npos);
  bad = r;
  bad.push_back(0);  // a byte past the fields
  EXPECT_FALSE(format::SplitSample(f, bad.data(), bad.size(), spans, &why));
  EXPECT_NE(why.find("add up to"), std::string::npos);
}

TEST(Fields, SamplesComeBackFieldByFieldWithTheirLabels) {
  testing::TempDir dir;
  for (CodecSpec codec : {CodecSpec{}, CodecSpec{Codec::kZstd, 3}}) {
    const std::string path = dir.File("pairs.rfd");
    ASSERT_TRUE(WritePairs(path, 300, codec).ok());
    Result<Dataset> d = Dataset::Open(path);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const format::Header& h = d->header();
    EXPECT_EQ(h.version, 3u);
    EXPECT_EQ(h.record_kind, format::RecordKind::kFields);
    EXPECT_EQ(format::FieldsText(h.fields), kPairs);
    EXPECT_EQ(h.num_classes, 3u);
    EXPECT_GT(d->chunk_count(), 3u);
    std::vector<uint8_t> buf(d->max_chunk_bytes());
    uint64_t i = 0;
    for (size_t g = 0; g < d->chunk_count(); ++g) {
      ASSERT_TRUE(d->ReadChunk(g, buf.data()).ok());
      const auto* table = reinterpret_cast<const uint64_t*>(buf.data());
      const uint8_t* records = buf.data() + d->RecordsOffset(g);
      for (uint32_t k = 0; k < d->chunk(g).entry.sample_count; ++k, ++i) {
        const Sample want = MakeSample(i);
        EXPECT_EQ(std::vector<uint8_t>(records + table[k], records + table[k + 1]), Record(want));
        EXPECT_EQ(d->Label(g, buf.data(), k), want.label);
      }
    }
    EXPECT_EQ(i, 300u);
  }
}

TEST(Fields, TheWriterRefusesASampleThatBreaksTheLayoutAndWritesNothingOfIt) {
  testing::TempDir dir;
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kFields;
  spec.fields = Pairs();
  spec.num_classes = 3;
  auto w = DatasetWriter::Create(dir.File("x.rfd"), spec, WriterOptions{});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<uint8_t> r = Record(MakeSample(2));
  r[8] = 20;  // the tensor's length
  const uint64_t offsets[2] = {0, r.size()};
  const uint8_t label = 1;
  const Status st = (*w)->AppendRecords(r.data(), offsets, &label, 1);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("sample 0: tensor field 'emb' of 20 bytes"), std::string::npos)
      << st.ToString();
  EXPECT_EQ((*w)->samples_written(), 0u);
  // A spec whose table breaks the rules is refused at Create.
  spec.num_classes = 0;
  spec.has_labels = false;
  EXPECT_NE(DatasetWriter::Create(dir.File("y.rfd"), spec, WriterOptions{})
                .status()
                .message()
                .find("a label field in a dataset without labels"),
            std::string::npos);
}

// The header's bytes, edited and sealed with a valid checksum (a forger's header).
void ForgeHeaderBytes(const std::string& path, size_t at, const std::vector<uint8_t>& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::vector<uint8_t> h(format::kHeaderBytes);
  f.read(reinterpret_cast<char*>(h.data()), h.size());
  std::memcpy(h.data() + at, bytes.data(), bytes.size());
  const uint64_t sum = Checksum(h.data(), format::kHeaderBytes - 8);
  std::memcpy(h.data() + format::kHeaderBytes - 8, &sum, 8);
  f.seekp(0);
  f.write(reinterpret_cast<const char*>(h.data()), h.size());
}

std::vector<uint8_t> U32(uint32_t v) {
  std::vector<uint8_t> b(4);
  std::memcpy(b.data(), &v, 4);
  return b;
}

TEST(Fields, AFieldTableThatLiesIsRefusedNamingItsByte) {
  testing::TempDir dir;
  const std::string path = dir.File("pairs.rfd");
  struct Lie {
    size_t at;
    std::vector<uint8_t> bytes;
    std::string says;
  };
  const size_t e0 = format::kFieldEntriesOffset, e1 = e0 + format::kFieldEntryBytes;
  const std::vector<Lie> lies = {
      {format::kFieldTableOffset, U32(17), "17 fields; a sample has 1 to 16"},
      {format::kFieldTableOffset, U32(0), "0 fields"},
      {e0 + 32, U32(9), "field 0 of unknown kind 9"},
      {e1 + 36, U32(99), "field 1 of unknown dtype 99"},
      {e1 + 36, U32(static_cast<uint32_t>(DType::kFloat32)), "token ids of float32"},
      {e0 + 40, U32(2), "field 0 of 2 dims"},
      {e0 + 2 * format::kFieldEntryBytes + 44, U32(0), "dim 0 is 0"},
      {e0 + 60, U32(1), "reserved bytes are not zero"},
      {e1, {'j', 'p', 'g', 0}, "field 'jpg': named twice"},
      {e0 + 64 + 63, {'x'}, "media type is not NUL-padded"},
      {e0 + 4 * format::kFieldEntryBytes, {1}, "bytes after the field table are not zero"},
  };
  for (const Lie& lie : lies) {
    ASSERT_TRUE(WritePairs(path, 40).ok());
    ForgeHeaderBytes(path, lie.at, lie.bytes);
    const Status st = Dataset::Open(path).status();
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << lie.says;
    EXPECT_NE(st.message().find(lie.says), std::string::npos) << st.ToString();
    EXPECT_NE(st.ToString().find("pairs.rfd"), std::string::npos) << st.ToString();
  }
  // A table in a dataset of another record kind.
  DatasetSpec bytes;
  bytes.record_kind = format::RecordKind::kBytes;
  bytes.has_labels = false;
  auto w = DatasetWriter::Create(dir.File("b.rfd"), bytes, WriterOptions{});
  ASSERT_TRUE(w.ok());
  const uint8_t one = 7;
  const uint64_t offsets[2] = {0, 1};
  ASSERT_TRUE((*w)->AppendRecords(&one, offsets, nullptr, 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  ForgeHeaderBytes(dir.File("b.rfd"), format::kFieldTableOffset, U32(1));
  EXPECT_NE(Dataset::Open(dir.File("b.rfd"))
                .status()
                .message()
                .find("a field table in a dataset of bytes records"),
            std::string::npos);
}

TEST(Fields, ASampleWhoseLengthsLieIsRefusedWhenItsChunkIsRead) {
  testing::TempDir dir;
  const std::string path = dir.File("pairs.rfd");
  ASSERT_TRUE(WritePairs(path, 40).ok());
  Result<Dataset> clean = Dataset::Open(path);
  ASSERT_TRUE(clean.ok());
  const uint64_t records_at = clean->RecordsOffset(0);
  // Sample 0's tensor length (the third u32 of its record) says 20 bytes, not 24.
  testing::ForgeChunk(path, 0, [&](uint8_t* stored, uint64_t) { stored[records_at + 8] = 20; });
  Result<Dataset> d = Dataset::Open(path);
  ASSERT_TRUE(d.ok());
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  const Status st = d->ReadChunk(0, buf.data());
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("sample 0: tensor field 'emb' of 20 bytes, not its shape's 24"),
            std::string::npos)
      << st.ToString();
  EXPECT_EQ(st.chunk(), std::optional<uint64_t>(0));
  EXPECT_EQ(st.offset(), std::optional<uint64_t>(d->chunk(0).entry.offset + records_at));
}

}  // namespace
}  // namespace rf
