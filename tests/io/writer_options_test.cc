// The writer's options (io/writer_options.h): one declaration each, named as each face names it,
// the converter's subcommands taking theirs, and the checks across options refusing with the names
// of the face that gave them.
#include "io/writer_options.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rf {
namespace {

WriterConfig Set(std::initializer_list<std::pair<const char*, OptionValue>> values,
                 OptionFace face = OptionFace::kPython) {
  const OptionTable<WriterConfig>& t = WriterOptionTable();
  WriterConfig c;
  for (const auto& [name, value] : values) {
    const Status st = t.Set(&c, *t.FindByName(name), value, face);
    EXPECT_TRUE(st.ok()) << name << ": " << st.ToString();
  }
  return c;
}

TEST(WriterOptions, PythonsKeywordsAreTheDeclarationsInTheSignaturesOrder) {
  std::vector<std::string> names;
  for (const OptionSpec& s : WriterOptionTable().Specs(kWriterApi)) {
    names.push_back(OptionName(s, OptionFace::kPython));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"shape", "dtype", "labels", "label_dtype", "classes",
                                             "shards", "chunk_size", "compress", "threads",
                                             "format_version", "keep", "records", "fields",
                                             "media_type", "max_record_size"}));
  // The converter's writing subcommands take the writer's flags; recompress the codec's alone.
  std::set<std::string> raw, recompress;
  for (const OptionSpec& s : WriterOptionTable().Specs(kConvertRaw)) raw.insert(s.name);
  for (const OptionSpec& s : WriterOptionTable().Specs(kConvertRecompress)) {
    recompress.insert(s.name);
  }
  EXPECT_EQ(raw, (std::set<std::string>{"label-dtype", "classes", "shards", "chunk-size",
                                        "compress", "compress-threads", "format-version"}));
  EXPECT_EQ(recompress, (std::set<std::string>{"compress", "compress-threads", "format-version"}));
}

TEST(WriterOptions, EachValueIsHeldToItsDeclarationAndNamedByTheFace) {
  const OptionTable<WriterConfig>& t = WriterOptionTable();
  WriterConfig c;
  const auto refusal = [&](const char* name, const OptionValue& v, OptionFace face) {
    const Status st = t.Set(&c, *t.FindByName(name), v, face);
    EXPECT_TRUE(st.IsUsage()) << name;
    return st.message();
  };
  EXPECT_EQ(refusal("compress", std::string("gzip"), OptionFace::kPython),
            "compress must be none, lz4, zstd or zstd:LEVEL with LEVEL 1 to 22, got 'gzip'");
  EXPECT_EQ(refusal("compress", std::string("zstd:23"), OptionFace::kCommandLine),
            "--compress must be none, lz4, zstd or zstd:LEVEL with LEVEL 1 to 22, got 'zstd:23'");
  EXPECT_EQ(refusal("compress-threads", uint64_t{1025}, OptionFace::kPython),
            "threads must be a whole number from 0 to 1024, got 1025");
  EXPECT_EQ(refusal("compress-threads", uint64_t{1025}, OptionFace::kCommandLine),
            "--compress-threads must be a whole number from 0 to 1024, got 1025");
  EXPECT_EQ(refusal("chunk-size", uint64_t{3072}, OptionFace::kPython),
            "chunk_size must be a byte size from 4KiB to 1GiB, got 3KiB");
  EXPECT_EQ(refusal("dtype", std::string("float64"), OptionFace::kPython),
            "dtype must be uint8, float16, bfloat16, float32, uint16, int32 or int64, got "
            "\"float64\"");
  EXPECT_EQ(refusal("shape", std::vector<uint64_t>{3, 0}, OptionFace::kPython),
            "shape must be 1 to 4 comma-separated whole numbers from 1 to 4294967295, got 3,0");
  // Another spelling of a dtype is that dtype (ParseDType's).
  EXPECT_EQ(Set({{"dtype", std::string("bf16")}}).spec.sample_dtype, DType::kBFloat16);
  EXPECT_EQ(Set({{"compress", std::string("zstd")}}).options.codec.level, 3);
}

TEST(WriterOptions, OptionsGivenTogetherAreCheckedNamingEachAsTheFaceDoes) {
  WriterConfig c = Set({{"format-version", uint64_t{1}}, {"compress", std::string("zstd:3")}});
  EXPECT_EQ(CheckWriterVersion(c, OptionFace::kCommandLine).message(),
            "--format-version 1 has no compression: --compress zstd:3 needs version 2");
  EXPECT_EQ(CheckWriterVersion(c, OptionFace::kPython).message(),
            "format_version=1 has no compression: compress='zstd:3' needs version 2");
  c = Set({{"format-version", uint64_t{1}}, {"record-kind", std::string("tokens")}});
  EXPECT_EQ(CheckWriterVersion(c, OptionFace::kPython).message(),
            "format_version=1 holds fixed-shape samples only: tokens records need version 2 or 3");
  EXPECT_EQ(CheckWriterSpec(WriterConfig{}, OptionFace::kPython).message(),
            "shape: give the shape of every sample (fixed-shape samples, records='tensor')");
  c = Set({{"shape", std::vector<uint64_t>{4}}, {"classes", uint64_t{300}}});
  EXPECT_EQ(CheckWriterSpec(c, OptionFace::kPython).message(),
            "classes=300: uint8 labels name at most 256 classes (label_dtype)");
  c = Set({{"shape", std::vector<uint64_t>{4}},
           {"classes", uint64_t{300}},
           {"label-dtype", std::string("uint16")}});
  EXPECT_TRUE(CheckWriterSpec(c, OptionFace::kPython).ok());
  // An option that does nothing with the others is refused, naming both.
  const std::set<std::string> given = {"shape", "record-kind"};
  c = Set({{"shape", std::vector<uint64_t>{4}}, {"record-kind", std::string("bytes")}});
  EXPECT_EQ(WriterOptionTable().RefuseIdle(c, given, OptionFace::kPython).message(),
            "shape does nothing with records='bytes' (records of any size have no fixed shape); "
            "leave it out");
}

}  // namespace
}  // namespace rf
