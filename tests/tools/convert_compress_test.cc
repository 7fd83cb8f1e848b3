// ringfeed-convert --compress (format version 2, issue 27): every input kind with every codec
// reads back the chunks of the uncompressed conversion, export gives the input's bytes back,
// inspect and verify on compressed datasets, and the usage errors of the codec flags.
//
// The inputs are positional (tests/testing/positional_data.h): each sample a ramp of bytes
// starting at its own index, which lz4 and zstd shrink, so the chunks are really stored
// compressed (synthetic noise does not shrink and would be stored raw).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/checksum.h"
#include "io/codec.h"
#include "io/dataset.h"
#include "tests/testing/forged_dataset.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::RunCommand;
using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

constexpr uint64_t kSamples = 600;

// One conversion's input files, written into a directory, and the arguments that convert them
// (everything but -o and the codec flags).
struct Input {
  std::string kind;
  std::vector<std::string> args;
  bool compressible = true;  // synthetic noise is not
};

std::vector<uint8_t> Uint8Labels() { return testing::PositionalLabels(kSamples); }

std::vector<Input> WriteInputs(const TempDir& t) {
  std::vector<Input> in;
  const std::vector<uint8_t> pixels = testing::PositionalSamples(kSamples, 28 * 28);
  const std::vector<uint8_t> labels = Uint8Labels();
  testing::WriteAll(t.File("images.idx"), testing::IdxBytes(0x08, {kSamples, 28, 28}, pixels));
  testing::WriteAll(t.File("labels.idx"), testing::IdxBytes(0x08, {kSamples}, labels));
  in.push_back(
      {"idx", {"idx", "--images", t.File("images.idx"), "--labels", t.File("labels.idx")}});

  std::vector<uint8_t> cifar;
  const std::vector<uint8_t> rgb = testing::PositionalSamples(kSamples, 3 * 32 * 32);
  for (uint64_t i = 0; i < kSamples; ++i) {
    cifar.push_back(labels[i]);
    cifar.insert(cifar.end(), rgb.begin() + i * 3072, rgb.begin() + (i + 1) * 3072);
  }
  testing::WriteAll(t.File("batch.bin"), cifar);
  in.push_back({"cifar", {"cifar", t.File("batch.bin")}});

  testing::WriteAll(t.File("x.npy"),
                    testing::NpyBytes("|u1", {kSamples, 28, 28}, pixels.data(), pixels.size()));
  testing::WriteAll(t.File("y.npy"),
                    testing::NpyBytes("|u1", {kSamples}, labels.data(), labels.size()));
  in.push_back({"npy", {"npy", "--images", t.File("x.npy"), "--labels", t.File("y.npy")}});

  std::vector<uint8_t> records;
  for (uint64_t i = 0; i < kSamples; ++i) {
    records.push_back(labels[i]);
    records.insert(records.end(), pixels.begin() + i * 784, pixels.begin() + (i + 1) * 784);
  }
  testing::WriteAll(t.File("r.records"), records);
  in.push_back({"raw", {"raw", "--records", t.File("r.records"), "--shape", "1,28,28"}});

  // Feature-major float32: feature f of sample s at f * N + s; small integers, exact.
  const std::vector<uint8_t> small = testing::PositionalSamples(kSamples, 3 * 8 * 8);
  std::vector<float> features(small.size());
  for (uint64_t s = 0; s < kSamples; ++s) {
    for (uint64_t f = 0; f < 192; ++f) features[f * kSamples + s] = small[s * 192 + f];
  }
  std::vector<int32_t> int_labels(labels.begin(), labels.end());
  testing::WriteAll(t.File("p_images.bin"), features.data(), features.size() * 4);
  testing::WriteAll(t.File("p_labels.bin"), int_labels.data(), int_labels.size() * 4);
  in.push_back({"predecessor",
                {"predecessor", "--images", t.File("p_images.bin"), "--labels",
                 t.File("p_labels.bin"), "--shape", "3,8,8"}});

  in.push_back({"synthetic",
                {"synthetic", "--samples", std::to_string(kSamples), "--shape", "1,28,28", "--seed",
                 "3", "--threads", "1"},
                false});
  return in;
}

Status ConvertTo(const Input& in, const std::string& out, const std::vector<std::string>& more) {
  std::vector<std::string> args = in.args;
  args.insert(args.end(), {"-o", out, "-q", "--chunk-size", "64KiB", "--compress-threads", "2"});
  args.insert(args.end(), more.begin(), more.end());
  return Convert(args);
}

TEST(ConvertCompress, EveryInputKindReadsBackTheSameChunksWithEveryCodec) {
  TempDir t;
  for (const Input& in : WriteInputs(t)) {
    SCOPED_TRACE(in.kind);
    const std::string plain = t.File(in.kind + ".rfd");
    ASSERT_TRUE(ConvertTo(in, plain, {}).ok());
    for (const char* codec : {"none", "lz4", "zstd", "zstd:1", "zstd:19"}) {
      SCOPED_TRACE(codec);
      const std::string out = t.File(in.kind + "-" + codec + ".rfd");
      const Status st = ConvertTo(in, out, {"--compress", codec});
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_TRUE(testing::SameChunks(plain, out));
      const Result<Dataset> d = Dataset::Open(out);
      ASSERT_TRUE(d.ok());
      EXPECT_TRUE(d->header().codec == ParseCodec(codec).value()) << CodecText(d->header().codec);
      if (std::string(codec) == "none") {
        EXPECT_EQ(d->header().version, 1u);  // without a codec any ringfeed reads it
        EXPECT_EQ(testing::ReadAll(out).size(), testing::ReadAll(plain).size());
      } else {
        EXPECT_EQ(d->header().version, 2u);
        if (in.compressible) {
          EXPECT_EQ(d->compressed_chunks(), d->chunk_count());
          EXPECT_LT(d->total_bytes(), Dataset::Open(plain)->total_bytes());
        }
      }
    }
  }
}

// Version 2 without a codec: the same chunks, raw, behind 64-byte index entries.
TEST(ConvertCompress, FormatVersionTwoWithoutACodecStoresEveryChunkRaw) {
  TempDir t;
  const Input in = WriteInputs(t).front();
  ASSERT_TRUE(ConvertTo(in, t.File("v1.rfd"), {}).ok());
  ASSERT_TRUE(ConvertTo(in, t.File("v2.rfd"), {"--format-version", "2"}).ok());
  EXPECT_TRUE(testing::SameChunks(t.File("v1.rfd"), t.File("v2.rfd")));
  const Result<Dataset> d = Dataset::Open(t.File("v2.rfd"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header().version, 2u);
  EXPECT_EQ(d->compressed_chunks(), 0u);
}

TEST(ConvertCompress, ExportOfACompressedDatasetGivesTheInputBytesBack) {
  TempDir t;
  const std::vector<uint8_t> pixels = testing::PositionalSamples(kSamples, 28 * 28);
  const std::vector<uint8_t> labels = Uint8Labels();
  testing::WriteAll(t.File("in.records"), pixels);
  testing::WriteAll(t.File("in.labels"), labels);
  const std::vector<Input> inputs = WriteInputs(t);
  for (const char* codec : {"zstd", "lz4"}) {
    SCOPED_TRACE(codec);
    Status st = Convert({"raw", "--records", t.File("in.records"), "--shape", "1,28,28", "--label",
                         "file:" + t.File("in.labels"), "--chunk-size", "64KiB", "-q", "--compress",
                         codec, "-o", t.File("raw.rfd")});
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(Dataset::Open(t.File("raw.rfd"))->compressed());
    st = Convert({"export", t.File("raw.rfd"), "--format", "raw", "-q", "-o", t.File("raw-out")});
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(testing::ReadAll(t.File("raw-out.records")) == pixels);
    EXPECT_TRUE(testing::ReadAll(t.File("raw-out.labels")) == labels);

    for (const Input& in : inputs) {
      if (in.kind != "npy" && in.kind != "idx") continue;
      SCOPED_TRACE(in.kind);
      ASSERT_TRUE(ConvertTo(in, t.File("d.rfd"), {"--compress", codec}).ok());
      ASSERT_TRUE(Dataset::Open(t.File("d.rfd"))->compressed());
      st = Convert({"export", t.File("d.rfd"), "--format", in.kind, "-q", "-o", t.File("out")});
      ASSERT_TRUE(st.ok()) << st.ToString();
      if (in.kind == "npy") {
        EXPECT_TRUE(testing::ReadAll(t.File("out-images.npy")) ==
                    testing::ReadAll(t.File("x.npy")));
        EXPECT_TRUE(testing::ReadAll(t.File("out-labels.npy")) ==
                    testing::ReadAll(t.File("y.npy")));
      } else {
        EXPECT_TRUE(testing::ReadAll(t.File("out-images.idx")) ==
                    testing::ReadAll(t.File("images.idx")));
        EXPECT_TRUE(testing::ReadAll(t.File("out-labels.idx")) ==
                    testing::ReadAll(t.File("labels.idx")));
      }
    }
  }
}

// Issue 27, bad input: "--compress zstd:99 is a usage error naming the valid levels". Every
// codec flag that cannot be run is one line naming every valid value, exit 2, and nothing is
// written; the same for recompress.
TEST(ConvertCompress, UnknownCodecsAndLevelsAreUsageErrorsNamingTheValidValues) {
  TempDir t;
  std::string out;
  ASSERT_EQ(
      RunCommand(Program() + " synthetic --samples 8 --shape 1,4,4 -q -o " + t.File("s.rfd"), &out),
      0)
      << out;
  const std::string valid = "--compress must be none, lz4, zstd or zstd:LEVEL with LEVEL 1 to " +
                            std::to_string(MaxZstdLevel());
  for (const char* bad : {"zstd:99", "gzip", "lz4:3", "zstd:0", "zstd:", "ZSTD", "zstd:-1"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(RunCommand(Program() + " synthetic --samples 8 --shape 1,4,4 -q -o " +
                             t.File("d.rfd") + " --compress " + bad,
                         &out),
              2);
    EXPECT_EQ(out, "ringfeed-convert: synthetic: " + valid + ", got '" + bad + "'\n");
    EXPECT_EQ(RunCommand(Program() + " recompress " + t.File("s.rfd") + " -o " + t.File("d.rfd") +
                             " --compress " + bad,
                         &out),
              2);
    EXPECT_EQ(out, "ringfeed-convert: recompress: " + valid + ", got '" + bad + "'\n");
  }
  // Control bytes in the text are escaped: still one line.
  EXPECT_TRUE(testing::FailsWithUsage(Convert({"synthetic", "--samples", "8", "-q", "-o",
                                               t.File("d.rfd"), "--compress", "zstd\n3"}),
                                      "synthetic: " + valid + ", got 'zstd\\x0a3'"));
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"s.rfd"});
}

TEST(ConvertCompress, FormatVersionOneWithACodecIsAUsageError) {
  TempDir t;
  std::string out;
  for (const std::string command : {"synthetic", "recompress"}) {
    const std::string cmd = command == "synthetic"
                                ? " synthetic --samples 8 --shape 1,4,4 -q -o " + t.File("d.rfd")
                                : " recompress " + t.File("d.rfd") + " -o " + t.File("e.rfd");
    EXPECT_EQ(RunCommand(Program() + cmd + " --format-version 1 --compress zstd", &out), 2);
    EXPECT_EQ(out,
              "ringfeed-convert: --format-version 1 has no compression: --compress zstd:3 needs "
              "version 2\n");
    EXPECT_EQ(RunCommand(Program() + cmd + " --format-version 4", &out), 2);
    EXPECT_EQ(out, "ringfeed-convert: " + command +
                       ": --format-version must be a whole number from 0 to 3, got 4\n");
  }
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

// The lines of `inspect` that say how the chunks are stored.
std::vector<std::string> StorageLines(const std::string& inspect) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < inspect.size()) {
    const size_t end = inspect.find('\n', at);
    const std::string line = inspect.substr(at, end - at);
    for (const char* key : {"format:", "records:", "codec:", "chunk bytes:"}) {
      if (line.rfind(key, 0) == 0) lines.push_back(line);
    }
    at = end + 1;
  }
  return lines;
}

std::string DatasetIdText(const Dataset& d) {
  char id[32];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(d.header().dataset_id));
  return id;
}

TEST(ConvertCompress, InspectShowsTheVersionRecordKindCodecAndRatio) {
  TempDir t;
  const Input idx = WriteInputs(t).front();
  ASSERT_TRUE(ConvertTo(idx, t.File("v1.rfd"), {}).ok());
  ASSERT_TRUE(ConvertTo(idx, t.File("z.rfd"), {"--compress", "zstd:5"}).ok());
  // Noise: no chunk shrinks, so each is stored raw though the header names lz4.
  std::vector<uint8_t> noise(kSamples * 784);
  uint64_t x = 1;
  for (uint8_t& b : noise) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<uint8_t>(x >> 56);
  }
  testing::WriteAll(t.File("noise.bin"), noise);
  ASSERT_TRUE(Convert({"raw", "--records", t.File("noise.bin"), "--shape", "784", "--label", "none",
                       "--chunk-size", "64KiB", "-q", "--compress", "lz4", "-o", t.File("n.rfd")})
                  .ok());

  std::string out;
  const Result<Dataset> v1 = Dataset::Open(t.File("v1.rfd"));
  ASSERT_TRUE(v1.ok());
  ASSERT_TRUE(Convert({"inspect", t.File("v1.rfd")}, &out).ok());
  const std::string raw_bytes = std::to_string(v1->data_bytes());
  EXPECT_EQ(StorageLines(out),
            (std::vector<std::string>{
                "format:       version 1, dataset id " + DatasetIdText(v1.value()),
                "records:      tensor",
                "codec:        none (format version 1 stores every chunk raw)",
                "chunk bytes:  " + raw_bytes + " of data, " + raw_bytes + " stored (ratio 1.00)",
            }))
      << out;

  const Result<Dataset> z = Dataset::Open(t.File("z.rfd"));
  ASSERT_TRUE(z.ok());
  const testing::StoredSize stored = testing::StoredSizeOf(t.File("z.rfd"));
  ASSERT_GT(std::stod(stored.ratio), 2.0) << "positional data compresses";
  EXPECT_EQ(z->data_bytes(), v1->data_bytes());
  ASSERT_TRUE(Convert({"inspect", t.File("z.rfd")}, &out).ok());
  const std::string chunks = std::to_string(z->chunk_count());
  EXPECT_EQ(StorageLines(out),
            (std::vector<std::string>{
                "format:       version 2, dataset id " + DatasetIdText(z.value()),
                "records:      tensor",
                "codec:        zstd:5, " + chunks + " of " + chunks + " chunks stored compressed",
                "chunk bytes:  " + raw_bytes + " of data, " + std::to_string(stored.bytes) +
                    " stored (ratio " + stored.ratio + ")",
            }))
      << out;

  const Result<Dataset> n = Dataset::Open(t.File("n.rfd"));
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE(Convert({"inspect", t.File("n.rfd")}, &out).ok());
  const std::vector<std::string> lines = StorageLines(out);
  ASSERT_EQ(lines.size(), 4u) << out;
  EXPECT_EQ(lines[2], "codec:        lz4, 0 of " + std::to_string(n->chunk_count()) +
                          " chunks stored compressed (a chunk that does not shrink is stored raw)");
  EXPECT_NE(lines[3].find("(ratio 1.00)"), std::string::npos) << lines[3];
}

// Issue 27, bad input: a corrupted compressed chunk, a truncated frame, a damaged frame whose
// checksum was forged to match, a wrong declared size and an unknown codec id are each one line
// naming file, chunk and offset, exit 1; `verify` checks every chunk of a good one.
TEST(ConvertCompress, VerifyChecksEveryFrameAndNamesFileChunkAndOffsetOfABadOne) {
  TempDir t;
  const Input idx = WriteInputs(t).front();
  ASSERT_TRUE(ConvertTo(idx, t.File("good.rfd"), {"--compress", "zstd"}).ok());
  const Result<Dataset> d = Dataset::Open(t.File("good.rfd"));
  ASSERT_TRUE(d.ok());
  ASSERT_GE(d->chunk_count(), 3u);
  ASSERT_EQ(d->compressed_chunks(), d->chunk_count());
  const std::string n = std::to_string(d->chunk_count());
  std::string out;
  ASSERT_EQ(RunCommand(Program() + " verify -q " + t.File("good.rfd"), &out), 0) << out;
  EXPECT_EQ(out, "OK: " + n + " chunks, " + std::to_string(kSamples) + " samples verified (" + n +
                     " chunks decompressed, each to the size its index declares)\n");
  const format::ChunkEntry e = d->chunk(1).entry;
  const std::string at = ": chunk 1 at byte " + std::to_string(e.offset) + ": ";

  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
    std::string message;  // after "ringfeed-convert: FILE"
  };
  const std::vector<Case> cases = {
      {"a flipped bit in the frame",
       [&](const std::string& f) { testing::FlipBit(f, e.offset + 40); }, at + "checksum mismatch"},
      {"a damaged frame whose checksum was forged to match",
       [&](const std::string& f) {
         testing::FlipBit(f, e.offset, 3);  // the frame's magic number
         testing::ForgeIndex(f, [&](std::vector<format::ChunkEntry>* entries) {
           const std::vector<uint8_t> bytes = testing::ReadAll(f);
           (*entries)[1].checksum = Checksum(bytes.data() + e.offset, e.stored_bytes);
         });
       },
       at + "zstd frame of " + std::to_string(e.frame_bytes) + " bytes is not a zstd frame"},
      {"a truncated frame",
       [&](const std::string& f) {
         testing::ForgeIndex(
             f, [&](std::vector<format::ChunkEntry>* entries) { (*entries)[1].frame_bytes -= 1; });
       },
       at + "zstd frame of " + std::to_string(e.frame_bytes - 1) + " bytes "},
      {"a wrong declared size",
       [&](const std::string& f) {
         testing::ForgeIndex(f, [&](std::vector<format::ChunkEntry>* entries) {
           (*entries)[1].data_bytes += 4096;
         });
       },
       ": chunk 1 at byte " + std::to_string(d->header().index_offset + 64) +
           ": bad chunk index entry: data size "},
      {"an unknown codec id",
       [&](const std::string& f) {
         testing::ForgeIndex(f, [&](std::vector<format::ChunkEntry>* entries) {
           (*entries)[1].codec = static_cast<Codec>(7);
         });
       },
       ": chunk 1 at byte " + std::to_string(d->header().index_offset + 64) +
           ": bad chunk index entry: unknown codec id 7"},
  };
  const std::vector<uint8_t> good = testing::ReadAll(t.File("good.rfd"));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string f = t.File("bad.rfd");
    testing::WriteAll(f, good);
    c.damage(f);
    ASSERT_NE(testing::ReadAll(f), good);
    EXPECT_EQ(RunCommand(Program() + " verify -q " + f, &out), 1);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_EQ(out.rfind("ringfeed-convert: " + f + c.message, 0), 0u) << out;
  }
}

}  // namespace
}  // namespace rf
