#include "io/writer_options.h"

#include <cstdint>
#include <limits>
#include <string>

#include "io/codec.h"
#include "io/format.h"
#include "options/dtype_words.h"

namespace rf {
namespace {

// The converter's subcommands that make a dataset of their own records (recompress copies its
// input's chunks: it takes the codec and version alone).
constexpr uint32_t kMakers = kConvertSamples | kConvertTokens | kConvertImages;
constexpr uint32_t kRecordMakers = kConvertTokens | kConvertImages;

OptionTable<WriterConfig> MakeTable() {
  OptionTable<WriterConfig> t;
  t.Field(
       "shape", OptionType::kCounts, [](auto& c) -> auto& { return c.spec.shape; })
      .Range(1, std::numeric_limits<uint32_t>::max())
      .Items(1, format::kMaxDims)
      .For(kWriterApi)
      .OnlyWith("record-kind", {"tensor"}, "records of any size have no fixed shape")
      .Unset("none: records of any size; fixed-shape samples must give theirs")
      .Help("the shape of every sample, 1 to 4 dims, outermost first (an int: one dim)");
  t.Word(
       "dtype", [](auto& c) -> auto& { return c.spec.sample_dtype; },
       DTypeWords({DType::kUInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                   DType::kUInt16, DType::kInt32, DType::kInt64}))
      .For(kWriterApi)
      .Help(
          "the samples' stored dtype: uint8, float16, bfloat16, float32 (intensities) or uint16, "
          "int32, int64 (ids such as tokens); bfloat16 arrays as their raw uint16 bits or "
          "ml_dtypes.bfloat16");
  // Python's labels= and records= are named apart from the converter's --labels FILE and --records
  // FILE: the conditions below name them, and the converter's table holds those.
  t.Field(
       "labeled", OptionType::kSwitch, [](auto& c) -> auto& { return c.spec.has_labels; })
      .PythonName("labels")
      .For(kWriterApi)
      .Help("whether samples have labels (then every write gives them)");
  t.Word(
       "label-dtype", [](auto& c) -> auto& { return c.spec.label_dtype; },
       DTypeWords({DType::kUInt8, DType::kUInt16, DType::kInt32}))
      .For(kWriterApi | kConvertRaw)
      .OnlyWith("labeled", {"true"}, "a dataset without labels stores none")
      .Help("the labels' stored dtype (raw: the records' labels' type too)");
  t.Field(
       "classes", OptionType::kCount, [](auto& c) -> auto& { return c.spec.num_classes; })
      .For(kWriterApi | (kConvertSamples & ~kConvertSynthetic))
      .OnlyWith("labeled", {"true"}, "a dataset without labels has no classes")
      .Help(
          "number of classes; every label must be below it (0: one more than the largest label "
          "written; the converter's inputs: known from the format where it says)");
  t.Field(
       "shards", OptionType::kCount, [](auto& c) -> auto& { return c.options.shards; })
      .Range(1, 99999)
      .For(kWriterApi | kMakers)
      .Help("number of shard files (NAME-0000K-of-0000N.rfd), the chunks dealt to them in turn");
  t.Field(
       "chunk-size", OptionType::kByteSize, [](auto& c) -> auto& { return c.options.chunk_bytes; })
      .Range(format::kAlign, format::kMaxChunkTarget)
      .For(kWriterApi | kMakers)
      .Help(
          "target size of a chunk's data: at least 4KiB (chunks are stored in 4096-byte blocks) "
          "and at most 1GiB (a chunk is read whole into one ring slot); a chunk ends where the "
          "next sample, document or image would pass it, and holds one at least. The converter's "
          "fixed-shape samples: given, it must hold one sample with its label; by default a "
          "sample larger than 4MiB makes chunks of one sample");
  t.Custom(
       OptionSpec::Of("compress", OptionType::kText)
           .TextRule(
               "none, lz4, zstd or zstd:LEVEL with LEVEL 1 to " + std::to_string(MaxZstdLevel()),
               [](std::string_view text) { return ParseCodec(std::string(text)).ok(); })
           .Metavar("CODEC"),
       [](WriterConfig& c, const OptionValue& v) -> Status {
         RF_ASSIGN_OR_RETURN(c.options.codec, ParseCodec(std::get<std::string>(v)));
         return Status::Ok();
       },
       [](const WriterConfig& c) { return OptionValue(CodecText(c.options.codec)); })
      .For(kWriterApi | kConvertWriters)
      .Help(
          "each chunk's codec: none, lz4, zstd (level 3) or zstd:LEVEL (1 to 22); a chunk that "
          "does not shrink is stored raw. Any codec writes format version 2 (3 for records of "
          "any size)");
  t.Field(
       "compress-threads", OptionType::kCount, [](auto& c) -> auto& { return c.options.threads; })
      .Range(0, 1024)
      .PythonName("threads")
      .For(kWriterApi | kConvertWriters)
      .Help("threads that compress (0: one per core, at most 16)");
  t.Field(
       "format-version", OptionType::kCount, [](auto& c) -> auto& { return c.options.version; })
      .Range(0, format::kVersion)
      .For(kWriterApi | kConvertWriters)
      .Help(
          "1, 2 or 3 (0: 1 without a codec, so any ringfeed reads it; 2 with one; 3 for records "
          "of any size, whose index gives each chunk's record bytes, which packed sequences "
          "need)");
  t.Field(
       "keep", OptionType::kTexts, [](auto& c) -> auto& { return c.options.keep; })
      .For(kWriterApi)
      .Help("files an older dataset of this name may share (inputs) that must not be removed");
  t.Word("record-kind", [](auto& c) -> auto& { return c.spec.record_kind; },
         {{"tensor", format::RecordKind::kTensor},
          {"tokens", format::RecordKind::kTokens},
          {"bytes", format::RecordKind::kBytes},
          {"fields", format::RecordKind::kFields}})
      .PythonName("records")
      .For(kWriterApi)
      .Help(
          "what a sample is: tensor (every sample of shape), or records of any size: tokens "
          "(1-D runs of uint16, int32 or int64 ids), bytes (uint8, such as encoded images) or "
          "fields (samples of several named fields: give fields); records write format 2 or 3");
  t.Custom(
       OptionSpec::Of("fields", OptionType::kText)
           .TextRule(
               "NAME=TYPE,... with TYPE MEDIA/TYPE, bytes[:MEDIA/TYPE], tokens:DTYPE, "
               "tensor:DTYPE:SHAPE or label",
               [](std::string_view text) { return format::ParseFields(std::string(text)).ok(); })
           .Metavar("FIELDS"),
       [](WriterConfig& c, const OptionValue& v) -> Status {
         RF_ASSIGN_OR_RETURN(c.spec.fields, format::ParseFields(std::get<std::string>(v)));
         // Samples of these fields: uint8 records, labelled where a field is the label.
         c.spec.record_kind = format::RecordKind::kFields;
         c.spec.sample_dtype = DType::kUInt8;
         c.spec.has_labels = false;
         for (const format::FieldSpec& f : c.spec.fields)
           c.spec.has_labels = c.spec.has_labels || f.kind == format::FieldKind::kLabel;
         return Status::Ok();
       },
       [](const WriterConfig& c) { return OptionValue(format::FieldsText(c.spec.fields)); })
      .For(kWriterApi)
      .Help(
          "samples of several fields (io/fields.h), NAME=TYPE each: an image's bytes "
          "(jpg=image/jpeg), other bytes (json=bytes:application/json), token ids "
          "(txt=tokens:int32), a fixed-shape tensor (emb=tensor:float32:512), the label "
          "(cls=label)");
  t.Field(
       "media-type", OptionType::kText, [](auto& c) -> auto& { return c.spec.media_type; })
      .For(kWriterApi)
      .OnlyWith("record-kind", {"bytes"}, "a media type says what bytes records are")
      .Help("what bytes records are, such as image/jpeg");
  t.Field(
       "max-record-size", OptionType::kByteSize,
       [](auto& c) -> auto& { return c.options.max_record_bytes; })
      .Range(1, format::kMaxChunkTarget)
      .For(kWriterApi | kRecordMakers)
      .OnlyWith("record-kind", {"tokens", "bytes", "fields"},
                "a fixed-shape sample is its shape's size")
      .Help(
          "records of any size: the largest record taken, in stored bytes (a chunk holds one at "
          "least); a larger one is refused (the converter's token corpora: the longest document, "
          "8 bytes at least, and jsonl's with its memory budget, the smaller, 64KiB at least, "
          "also a line's longest string; images: the largest image file)");
  return t;
}

const OptionSpec& Spec(const char* name) { return WriterOptionTable().FindByName(name)->spec; }

}  // namespace

const OptionTable<WriterConfig>& WriterOptionTable() {
  static const OptionTable<WriterConfig> table = MakeTable();
  return table;
}

Status CheckWriterVersion(const WriterConfig& c, OptionFace face) {
  if (c.options.version != 1) return Status::Ok();
  const std::string version = OptionSettingText(Spec("format-version"), uint64_t{1}, face);
  if (c.options.codec.codec != Codec::kNone) {
    return Status::Usage(version + " has no compression: " +
                         OptionSettingText(Spec("compress"), CodecText(c.options.codec), face) +
                         " needs version 2");
  }
  if (c.spec.record_kind != format::RecordKind::kTensor) {
    return Status::Usage(
        version + " holds fixed-shape samples only: " + format::RecordKindName(c.spec.record_kind) +
        " records need version 2 or 3");
  }
  return Status::Ok();
}

Status CheckWriterSpec(const WriterConfig& c, OptionFace face) {
  if ((c.spec.record_kind == format::RecordKind::kFields) == c.spec.fields.empty()) {
    return Status::Usage(OptionName(Spec("fields"), face) + " and " +
                         OptionSettingText(Spec("record-kind"), std::string("fields"), face) +
                         " go together: samples of several fields are named by their fields");
  }
  if (c.spec.record_kind == format::RecordKind::kTensor && c.spec.shape.empty()) {
    return Status::Usage(OptionName(Spec("shape"), face) +
                         ": give the shape of every sample (fixed-shape samples, " +
                         OptionSettingText(Spec("record-kind"), std::string("tensor"), face) + ")");
  }
  const uint64_t most = format::MaxClassesFor(c.spec.label_dtype);
  if (c.spec.has_labels && c.spec.num_classes > most) {
    return Status::Usage(OptionSettingText(Spec("classes"), uint64_t{c.spec.num_classes}, face) +
                         ": " + std::string(DTypeName(c.spec.label_dtype)) +
                         " labels name at most " + std::to_string(most) + " classes (" +
                         OptionName(Spec("label-dtype"), face) + ")");
  }
  return CheckWriterVersion(c, face);
}

}  // namespace rf
