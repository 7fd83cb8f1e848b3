#include "io/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <regex>

namespace rf::format {
namespace {

// Fixed byte offsets of the header fields. Append new fields; never move old ones.
enum HeaderOffset : size_t {
  kOffMagic = 0,
  kOffVersion = 8,
  kOffHeaderBytes = 12,
  kOffDatasetId = 16,
  kOffShardIndex = 24,
  kOffShardCount = 28,
  kOffSampleDType = 32,
  kOffLabelDType = 36,
  kOffChannels = 40,
  kOffHeight = 44,
  kOffWidth = 48,
  kOffNumClasses = 52,
  kOffTotalSamples = 56,
  kOffTotalChunks = 64,
  kOffChunkSamples = 72,
  kOffShardChunks = 76,
  kOffShardSamples = 80,
  kOffIndexOffset = 88,
  kOffFileSize = 96,
  kOffMean = 128,
  kOffStd = kOffMean + 4 * kMaxChannels,
  kOffNdim = kOffStd + 4 * kMaxChannels,  // 640; 0 in files written before it
  kOffDims = kOffNdim + 4,                // 644: kMaxDims uint32s, 0 past ndim
  // Version 2.
  kOffCodec = kOffDims + 4 * kMaxDims,             // 660
  kOffCodecLevel = kOffCodec + 4,                  // 664 (int32)
  kOffRecordKind = kOffCodecLevel + 4,             // 668
  kOffMediaType = kOffRecordKind + 4,              // 672: kMaxMediaType + 1 bytes, NUL-padded
  kOffOrigin = kOffMediaType + kMaxMediaType + 1,  // 736: kMaxOrigin + 1 bytes, NUL-padded
  // Any version (zero in every file written before them, which builds before them ignore).
  kOffNamesOffset = kOffOrigin + kMaxOrigin + 1,  // 800: u64, the class names block's offset
  kOffNamesBytes = kOffNamesOffset + 8,           // 808: u64, its size
  kOffNamesChecksum = kOffNamesBytes + 8,         // 816: u64, XXH3-64 of its bytes
  kOffChecksum = kHeaderBytes - 8,
};

template <typename T>
void Put(uint8_t* base, size_t off, T v) {
  std::memcpy(base + off, &v, sizeof v);  // the format is little-endian, as is every target
}
template <typename T>
T Get(const uint8_t* base, size_t off) {
  T v;
  std::memcpy(&v, base + off, sizeof v);
  return v;
}

Status Bad(const std::string& path, const std::string& what) {
  return Status::Corruption(path, what);
}

}  // namespace

const char* RecordKindName(RecordKind k) {
  switch (k) {
    case RecordKind::kTensor:
      return "tensor";
    case RecordKind::kTokens:
      return "tokens";
    case RecordKind::kBytes:
      return "bytes";
  }
  return "unknown";
}

bool IsHeaderText(const std::string& text, size_t max) {
  return text.size() <= max &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

bool ParseRecordKind(const std::string& name, RecordKind* out) {
  for (RecordKind k : {RecordKind::kTensor, RecordKind::kTokens, RecordKind::kBytes}) {
    if (name == RecordKindName(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

RecordLayout RecordLayoutFor(uint64_t n, size_t label_bytes) {
  RecordLayout l;
  l.labels_offset = RoundUp((n + 1) * sizeof(uint64_t), kLabelAlign);
  l.records_offset = RoundUp(l.labels_offset + n * label_bytes, kLabelAlign);
  return l;
}

std::vector<uint64_t> Header::Shape() const {
  if (ndim == 0) return {channels, height, width};
  return std::vector<uint64_t>(dims.begin(), dims.begin() + std::min(ndim, kMaxDims));
}

std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string s;
  for (uint64_t d : shape) {
    if (!s.empty())
      s += 'x';  // appended apart: GCC 12's -Wrestrict misfires on "x" + string at -O3
    s += std::to_string(d);
  }
  return s;
}

Status CheckSampleShape(const std::vector<uint64_t>& shape, DType sample_dtype) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("sample shape " + ShapeText(shape) + ": " + why);
  };
  if (shape.empty() || shape.size() > kMaxDims) {
    return bad(std::to_string(shape.size()) + " dimensions; a sample has 1 to " +
               std::to_string(kMaxDims));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return bad("dimension " + std::to_string(i) + " is 0");
    if (shape[i] > UINT32_MAX) return bad("dimension " + std::to_string(i) + " is 2^32 or more");
  }
  if (shape.size() == 3 && shape[0] > kMaxChannels) {
    return bad(std::to_string(shape[0]) + " channels; a C,H,W sample has at most " +
               std::to_string(kMaxChannels));
  }
  // Dims below 2^32 and at most 4 of them: the product is checked factor by factor, so a shape
  // whose size wraps 64 bits cannot pass for a small one.
  uint64_t bytes = DTypeSize(sample_dtype);
  for (uint64_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxSampleBytes) {
      return bad("samples larger than " + std::to_string(kMaxSampleBytes >> 30) +
                 " GiB (a chunk holds at least one)");
    }
  }
  // The image view's height folds the leading dims; it must fit its uint32.
  if (shape.size() != 3 && bytes / DTypeSize(sample_dtype) / shape.back() > UINT32_MAX) {
    return bad("more than 2^32-1 rows of " + std::to_string(shape.back()));
  }
  return Status::Ok();
}

Status SetSampleShape(const std::vector<uint64_t>& shape, Header* h) {
  RF_RETURN_IF_ERROR(CheckSampleShape(shape, h->sample_dtype));
  h->ndim = static_cast<uint32_t>(shape.size());
  h->dims.fill(0);
  for (size_t i = 0; i < shape.size(); ++i) h->dims[i] = static_cast<uint32_t>(shape[i]);
  if (shape.size() == 3) {
    h->channels = h->dims[0];
    h->height = h->dims[1];
    h->width = h->dims[2];
  } else {
    uint64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    h->channels = 1;
    h->height = static_cast<uint32_t>(rows);
    h->width = h->dims[shape.size() - 1];
  }
  return Status::Ok();
}

ChunkLayout LayoutFor(uint64_t n, uint64_t sample_bytes, size_t label_bytes) {
  ChunkLayout l;
  l.labels_offset = RoundUp(n * sample_bytes, kLabelAlign);
  l.payload_bytes = l.labels_offset + n * label_bytes;
  l.stored_bytes = RoundUp(l.payload_bytes, kAlign);
  return l;
}

bool CheckedLayoutFor(uint64_t n, uint64_t sample_bytes, size_t label_bytes, ChunkLayout* out) {
  uint64_t samples = 0, labels = 0;
  if (__builtin_mul_overflow(n, sample_bytes, &samples) ||
      __builtin_mul_overflow(n, uint64_t{label_bytes}, &labels)) {
    return false;
  }
  // Each rounding adds less than kAlign; keeping every sum below 2^63 leaves room for them.
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  if (samples > kLimit || labels > kLimit) return false;
  *out = LayoutFor(n, sample_bytes, label_bytes);
  return true;
}

uint64_t MaxClassesFor(DType label_dtype) {
  switch (label_dtype) {
    case DType::kUInt8:
      return uint64_t{1} << 8;
    case DType::kUInt16:
      return uint64_t{1} << 16;
    case DType::kInt32:
      return uint64_t{1} << 31;
    default:
      return 0;  // not a label dtype
  }
}

size_t IndexEntryBytes(uint32_t version) {
  return version >= 3 ? kIndexEntryBytesV3 : version == 2 ? kIndexEntryBytesV2 : kIndexEntryBytes;
}

uint64_t IndexStoredBytes(uint64_t chunks, uint32_t version) {
  return RoundUp(chunks * IndexEntryBytes(version) + 8, kAlign);
}

bool HoldsJpegRecords(const Header& h) {
  return h.record_kind == RecordKind::kBytes && h.media_type == "image/jpeg";
}

uint64_t MaxChunkDataBytes(const Header& h) {
  const uint64_t one = h.variable() ? RecordChunkBytes(1, h.LabelBytes(), h.SampleBytes())
                                    : LayoutFor(1, h.SampleBytes(), h.LabelBytes()).stored_bytes;
  return std::max(kMaxChunkTarget, one);
}

uint64_t MaxRecordChunkBytes(const Header& h, uint64_t n) {
  const uint64_t format_most = MaxChunkDataBytes(h);
  // n x the largest record, compared by division: the product could pass 2^64.
  if (n != 0 && h.SampleBytes() > format_most / n) return format_most;
  return std::min(format_most, RecordChunkBytes(n, h.LabelBytes(), n * h.SampleBytes()));
}

void EncodeHeader(const Header& h, uint8_t out[kHeaderBytes]) {
  std::memset(out, 0, kHeaderBytes);
  std::memcpy(out + kOffMagic, kMagic, sizeof kMagic);
  Put<uint32_t>(out, kOffVersion, h.version);
  Put<uint32_t>(out, kOffHeaderBytes, kHeaderBytes);
  Put<uint64_t>(out, kOffDatasetId, h.dataset_id);
  Put<uint32_t>(out, kOffShardIndex, h.shard_index);
  Put<uint32_t>(out, kOffShardCount, h.shard_count);
  Put<uint32_t>(out, kOffSampleDType, static_cast<uint32_t>(h.sample_dtype));
  Put<uint32_t>(out, kOffLabelDType, static_cast<uint32_t>(h.label_dtype));
  Put<uint32_t>(out, kOffChannels, h.channels);
  Put<uint32_t>(out, kOffHeight, h.height);
  Put<uint32_t>(out, kOffWidth, h.width);
  Put<uint32_t>(out, kOffNumClasses, h.num_classes);
  Put<uint64_t>(out, kOffTotalSamples, h.total_samples);
  Put<uint64_t>(out, kOffTotalChunks, h.total_chunks);
  Put<uint32_t>(out, kOffChunkSamples, h.chunk_samples);
  Put<uint32_t>(out, kOffShardChunks, h.shard_chunks);
  Put<uint64_t>(out, kOffShardSamples, h.shard_samples);
  Put<uint64_t>(out, kOffIndexOffset, h.index_offset);
  Put<uint64_t>(out, kOffFileSize, h.file_size);
  for (uint32_t c = 0; c < kMaxChannels; ++c) {
    Put<float>(out, kOffMean + 4 * c, h.mean[c]);
    Put<float>(out, kOffStd + 4 * c, h.stddev[c]);
  }
  const std::vector<uint64_t> shape = h.Shape();
  Put<uint32_t>(out, kOffNdim, static_cast<uint32_t>(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i)
    Put<uint32_t>(out, kOffDims + 4 * i, static_cast<uint32_t>(shape[i]));
  if (h.version >= 2) {
    Put<uint32_t>(out, kOffCodec, static_cast<uint32_t>(h.codec.codec));
    Put<int32_t>(out, kOffCodecLevel, h.codec.level);
    Put<uint32_t>(out, kOffRecordKind, static_cast<uint32_t>(h.record_kind));
    std::memcpy(out + kOffMediaType, h.media_type.data(),
                std::min(h.media_type.size(), kMaxMediaType));
    std::memcpy(out + kOffOrigin, h.origin.data(), std::min(h.origin.size(), kMaxOrigin));
  }
  Put<uint64_t>(out, kOffNamesOffset, h.names_offset);
  Put<uint64_t>(out, kOffNamesBytes, h.names_bytes);
  Put<uint64_t>(out, kOffNamesChecksum, h.names_checksum);
  Put<uint64_t>(out, kOffChecksum, Checksum(out, kOffChecksum));
}

Result<Header> DecodeHeader(const uint8_t* in, size_t n, const std::string& path) {
  if (n < kHeaderBytes) {
    return Bad(path, "file is " + std::to_string(n) + " bytes, shorter than the " +
                         std::to_string(kHeaderBytes) + "-byte header (truncated?)");
  }
  if (std::memcmp(in, kMagic, sizeof kMagic) != 0)
    return std::move(Bad(path, "not a ringfeed dataset (wrong magic)").WithOffset(0));
  Header h;
  h.version = Get<uint32_t>(in, kOffVersion);
  if (h.version < kOldestVersion || h.version > kVersion) {
    return std::move(Bad(path, "unknown format version " + std::to_string(h.version) +
                                   " (this build reads versions " + std::to_string(kOldestVersion) +
                                   " to " + std::to_string(kVersion) + ")")
                         .WithOffset(kOffVersion));
  }
  const uint64_t stored = Get<uint64_t>(in, kOffChecksum);
  if (stored != Checksum(in, kOffChecksum))
    return std::move(Bad(path, "header checksum mismatch (header corrupted)").WithOffset(0));
  if (Get<uint32_t>(in, kOffHeaderBytes) != kHeaderBytes)
    return std::move(Bad(path, "unexpected header size").WithOffset(kOffHeaderBytes));

  h.dataset_id = Get<uint64_t>(in, kOffDatasetId);
  h.shard_index = Get<uint32_t>(in, kOffShardIndex);
  h.shard_count = Get<uint32_t>(in, kOffShardCount);
  h.sample_dtype = static_cast<DType>(Get<uint32_t>(in, kOffSampleDType));
  h.label_dtype = static_cast<DType>(Get<uint32_t>(in, kOffLabelDType));
  h.channels = Get<uint32_t>(in, kOffChannels);
  h.height = Get<uint32_t>(in, kOffHeight);
  h.width = Get<uint32_t>(in, kOffWidth);
  h.num_classes = Get<uint32_t>(in, kOffNumClasses);
  h.total_samples = Get<uint64_t>(in, kOffTotalSamples);
  h.total_chunks = Get<uint64_t>(in, kOffTotalChunks);
  h.chunk_samples = Get<uint32_t>(in, kOffChunkSamples);
  h.shard_chunks = Get<uint32_t>(in, kOffShardChunks);
  h.shard_samples = Get<uint64_t>(in, kOffShardSamples);
  h.index_offset = Get<uint64_t>(in, kOffIndexOffset);
  h.file_size = Get<uint64_t>(in, kOffFileSize);
  for (uint32_t c = 0; c < kMaxChannels; ++c) {
    h.mean[c] = Get<float>(in, kOffMean + 4 * c);
    h.stddev[c] = Get<float>(in, kOffStd + 4 * c);
  }
  h.ndim = Get<uint32_t>(in, kOffNdim);
  for (uint32_t i = 0; i < kMaxDims; ++i) h.dims[i] = Get<uint32_t>(in, kOffDims + 4 * i);

  auto field = [&](size_t off, const std::string& what) {
    return std::move(Bad(path, "bad header: " + what).WithOffset(off));
  };
  if (h.version >= 2) {
    const uint32_t codec = Get<uint32_t>(in, kOffCodec);
    const int32_t level = Get<int32_t>(in, kOffCodecLevel);
    const uint32_t kind = Get<uint32_t>(in, kOffRecordKind);
    if (!IsCodec(codec)) return field(kOffCodec, "unknown codec id " + std::to_string(codec));
    h.codec.codec = static_cast<Codec>(codec);
    const bool zstd = h.codec.codec == Codec::kZstd;
    if (zstd ? (level < 1 || level > MaxZstdLevel()) : level != 0)
      return field(kOffCodecLevel,
                   "codec level " + std::to_string(level) + " for " + CodecName(h.codec.codec));
    h.codec.level = level;
    if (kind > static_cast<uint32_t>(RecordKind::kBytes))
      return field(kOffRecordKind, "unknown record kind " + std::to_string(kind) +
                                       " (this build reads tensor, tokens and bytes records)");
    h.record_kind = static_cast<RecordKind>(kind);
    // The two text fields: printable ASCII, then NUL padding to the field's end.
    const auto text = [&](size_t off, size_t max, const char* name, std::string* out) -> Status {
      const char* t = reinterpret_cast<const char*>(in + off);
      const size_t len = strnlen(t, max + 1);
      if (len > max) return field(off, std::string(name) + " not NUL-terminated");
      for (size_t i = 0; i < len; ++i) {
        if (t[i] < 0x21 || t[i] > 0x7e)
          return field(off + i, std::string(name) + " holds a byte that is not printable ASCII");
      }
      for (size_t i = len; i <= max; ++i) {
        if (t[i] != 0) return field(off + i, std::string(name) + "'s padding is not zero");
      }
      out->assign(t, len);
      return Status::Ok();
    };
    RF_RETURN_IF_ERROR(text(kOffMediaType, kMaxMediaType, "media type", &h.media_type));
    RF_RETURN_IF_ERROR(text(kOffOrigin, kMaxOrigin, "origin", &h.origin));
    if (!h.media_type.empty() && h.record_kind != RecordKind::kBytes)
      return field(kOffMediaType, "a media type on " + std::string(RecordKindName(h.record_kind)) +
                                      " records (only bytes records have one)");
  }
  if (h.shard_count == 0 || h.shard_index >= h.shard_count)
    return field(kOffShardIndex,
                 "shard " + std::to_string(h.shard_index) + " of " + std::to_string(h.shard_count));
  if (!IsSampleDType(h.sample_dtype))
    return field(kOffSampleDType,
                 "unknown sample dtype " + std::to_string(static_cast<uint32_t>(h.sample_dtype)));
  if (!IsLabelDType(h.label_dtype))
    return field(kOffLabelDType,
                 "unknown label dtype " + std::to_string(static_cast<uint32_t>(h.label_dtype)));
  if (h.record_kind == RecordKind::kTokens && IsImageDType(h.sample_dtype))
    return field(kOffSampleDType, "tokens records of " + std::string(DTypeName(h.sample_dtype)) +
                                      " (token ids are uint16, int32 or int64)");
  if (h.record_kind == RecordKind::kBytes && h.sample_dtype != DType::kUInt8)
    return field(kOffSampleDType, "bytes records of " + std::string(DTypeName(h.sample_dtype)));
  if (h.variable() && h.ndim != 1)
    return field(kOffNdim, "records of any size have a 1-dim shape (the largest record), not " +
                               std::to_string(h.ndim) + " dims");
  // The shape, before anything is sized from it (SampleBytes() below and every reader's).
  if (h.ndim > kMaxDims) {
    return field(kOffNdim, "sample shape of " + std::to_string(h.ndim) +
                               " dimensions; a sample has 1 to " + std::to_string(kMaxDims));
  }
  for (uint32_t i = h.ndim; i < kMaxDims; ++i) {
    if (h.dims[i] != 0) {
      return field(kOffDims + 4 * i, "dimension " + std::to_string(i) + " is set in a shape of " +
                                         std::to_string(h.ndim) + " dimensions");
    }
  }
  if (h.ndim == 0) {
    // Written before the shape was recorded: the image view is the 3-dim shape.
    if (Status st = CheckSampleShape(h.Shape(), h.sample_dtype); !st.ok())
      return field(kOffChannels, st.message());
    h.ndim = 3;
    h.dims = {h.channels, h.height, h.width, 0};
  } else {
    const std::vector<uint64_t> shape = h.Shape();
    for (uint32_t i = 0; i < h.ndim; ++i) {
      if (h.dims[i] == 0)
        return field(kOffDims + 4 * i, "sample shape " + ShapeText(shape) + ": dimension " +
                                           std::to_string(i) + " is 0");
    }
    Header view;
    view.sample_dtype = h.sample_dtype;
    if (Status st = SetSampleShape(shape, &view); !st.ok()) return field(kOffDims, st.message());
    if (view.channels != h.channels || view.height != h.height || view.width != h.width) {
      return field(kOffChannels, "image view " + ShapeText({h.channels, h.height, h.width}) +
                                     " does not match the sample shape " + ShapeText(shape) +
                                     " (expected " +
                                     ShapeText({view.channels, view.height, view.width}) + ")");
    }
  }
  if (h.num_classes == 0 && h.label_dtype != DType::kUInt8) {
    return field(kOffLabelDType, "a dataset without labels (0 classes) stores uint8 labels, not " +
                                     std::string(DTypeName(h.label_dtype)));
  }
  // Readers size per-class buffers (the model's last layer) from num_classes.
  if (h.num_classes > MaxClassesFor(h.label_dtype)) {
    return field(kOffNumClasses, std::to_string(h.num_classes) + " classes; " +
                                     std::string(DTypeName(h.label_dtype)) +
                                     " labels name at most " +
                                     std::to_string(MaxClassesFor(h.label_dtype)));
  }
  if (h.total_samples == 0)
    return field(kOffTotalSamples, "no samples (the writer never writes an empty dataset)");
  if (h.chunk_samples == 0) return field(kOffChunkSamples, "zero samples per chunk");
  // A chunk of chunk_samples samples must have a size: with a forged chunk_samples x sample size
  // it could wrap 64 bits to a small one. Checked for the full chunk even where the dataset holds
  // fewer samples (no writer's chunk comes near 2^62 bytes), so every size a header names can be
  // computed (the fuzzers found a header whose full chunk overflowed behind a small dataset).
  ChunkLayout full;
  if (h.variable()) {
    // A chunk's table and labels alone, with one element a record, must fit the format's chunk.
    const uint64_t least = RecordChunkBytes(h.chunk_samples, h.LabelBytes(),
                                            uint64_t{h.chunk_samples} * DTypeSize(h.sample_dtype));
    if (least > MaxChunkDataBytes(h))
      return field(kOffChunkSamples, "chunks of " + std::to_string(h.chunk_samples) +
                                         " records take at least " + std::to_string(least) +
                                         " bytes, more than the format's " +
                                         std::to_string(MaxChunkDataBytes(h)));
    // Chunks end by bytes: between one per chunk_samples records and one per record.
    const uint64_t fewest =
        h.total_samples / h.chunk_samples + (h.total_samples % h.chunk_samples != 0 ? 1 : 0);
    if (h.total_chunks < fewest || h.total_chunks > h.total_samples)
      return field(kOffTotalChunks, std::to_string(h.total_chunks) + " chunks for " +
                                        std::to_string(h.total_samples) + " records of at most " +
                                        std::to_string(h.chunk_samples) + " a chunk");
  } else if (!CheckedLayoutFor(h.chunk_samples, h.SampleBytes(), h.LabelBytes(), &full)) {
    return field(kOffChunkSamples, "chunks of " + std::to_string(h.chunk_samples) + " samples of " +
                                       std::to_string(h.SampleBytes()) + " bytes overflow 64 bits");
  }
  // A version 2 chunk may be compressed, so its file does not bound its data: the format does,
  // before any reader sizes a ring slot from it.
  if (!h.variable() && h.version >= 2 && full.stored_bytes > MaxChunkDataBytes(h)) {
    return field(kOffChunkSamples, "chunks of " + std::to_string(h.chunk_samples) + " samples of " +
                                       std::to_string(h.SampleBytes()) + " bytes are " +
                                       std::to_string(full.stored_bytes) +
                                       " bytes, more than the format's " +
                                       std::to_string(MaxChunkDataBytes(h)));
  }
  // Rounded up without overflow (total_samples + chunk_samples - 1 could wrap).
  const uint64_t want_chunks =
      h.total_samples / h.chunk_samples + (h.total_samples % h.chunk_samples != 0 ? 1 : 0);
  if (!h.variable() && h.total_chunks != want_chunks)
    return field(kOffTotalChunks, std::to_string(h.total_samples) + " samples in chunks of " +
                                      std::to_string(h.chunk_samples) + " make " +
                                      std::to_string(want_chunks) + " chunks, not " +
                                      std::to_string(h.total_chunks));
  const uint64_t mine =
      h.total_chunks / h.shard_count + (h.shard_index < h.total_chunks % h.shard_count ? 1 : 0);
  if (h.shard_chunks != mine)
    return field(kOffShardChunks, "shard holds " + std::to_string(h.shard_chunks) +
                                      " chunks, expected " + std::to_string(mine));
  if (h.shard_samples > h.total_samples)
    return field(kOffShardSamples, "more samples in the shard than in the dataset");
  if (h.index_offset % kAlign != 0 || h.index_offset < kHeaderBytes)
    return field(kOffIndexOffset, "index offset " + std::to_string(h.index_offset));
  // The index ends the file: compared by subtraction, as index_offset + its size could wrap.
  if (h.index_offset > h.file_size ||
      h.file_size - h.index_offset != IndexStoredBytes(h.shard_chunks, h.version))
    return field(kOffFileSize, "file size " + std::to_string(h.file_size) +
                                   " does not match the index at " +
                                   std::to_string(h.index_offset));
  for (uint32_t c = 0; c < h.channels; ++c) {
    if (!std::isfinite(h.mean[c]) || !std::isfinite(h.stddev[c]) || h.stddev[c] < 0)
      return field(kOffMean + 4 * c, "channel statistics are not finite");
  }
  // The class names block: none (all three 0), or one of names for labels that lies after the
  // header and ends at or before the index (DecodeIndex: after every chunk).
  h.names_offset = Get<uint64_t>(in, kOffNamesOffset);
  h.names_bytes = Get<uint64_t>(in, kOffNamesBytes);
  h.names_checksum = Get<uint64_t>(in, kOffNamesChecksum);
  if (h.names_bytes == 0) {
    if (h.names_offset != 0 || h.names_checksum != 0)
      return field(kOffNamesOffset, "a class names block of 0 bytes");
  } else {
    if (!h.HasLabels()) return field(kOffNamesOffset, "class names for a dataset without labels");
    if (h.names_bytes > kMaxClassNamesBytes || h.names_bytes < uint64_t{2} * h.num_classes)
      return field(kOffNamesBytes, "class names block of " + std::to_string(h.names_bytes) +
                                       " bytes for " + std::to_string(h.num_classes) +
                                       " classes (" + std::to_string(uint64_t{2} * h.num_classes) +
                                       " to " + std::to_string(kMaxClassNamesBytes) +
                                       ": one byte and a newline a class at least)");
    if (h.names_offset % kAlign != 0 || h.names_offset < kHeaderBytes ||
        h.names_offset > h.index_offset || h.names_bytes > h.index_offset - h.names_offset)
      return field(kOffNamesOffset, "class names block at byte " + std::to_string(h.names_offset) +
                                        " of " + std::to_string(h.names_bytes) +
                                        " bytes is not between the header and the index at " +
                                        std::to_string(h.index_offset));
  }
  return h;
}

Status CheckFileSize(const Header& h, uint64_t actual, const std::string& path) {
  if (actual < h.file_size) {
    return std::move(Bad(path, "file is truncated: header says " + std::to_string(h.file_size) +
                                   " bytes, file has " + std::to_string(actual))
                         .WithOffset(actual));
  }
  if (actual > h.file_size) {
    return std::move(Bad(path, "file is longer than its header says: " + std::to_string(actual) +
                                   " bytes, header says " + std::to_string(h.file_size))
                         .WithOffset(h.file_size));
  }
  return Status::Ok();
}

// An index entry's fields. Version 2 appends to version 1's 48 bytes and puts the codec in its
// spare bytes (zero in version 1).
enum EntryOffset : size_t {
  kEntIndex = 0,
  kEntFirstSample = 8,
  kEntOffset = 16,
  kEntStoredBytes = 24,
  kEntSampleCount = 32,
  kEntCodec = 36,  // u8, then 3 zero bytes
  kEntChecksum = 40,
  kEntFrameBytes = 48,
  kEntDataBytes = 56,
  kEntRecordBytes = 64,  // version 3
};

std::vector<uint8_t> EncodeIndex(const std::vector<ChunkEntry>& entries, uint32_t version) {
  const size_t entry_bytes = IndexEntryBytes(version);
  std::vector<uint8_t> out(IndexStoredBytes(entries.size(), version), 0);
  uint8_t* p = out.data();
  for (const ChunkEntry& e : entries) {
    Put<uint64_t>(p, kEntIndex, e.index);
    Put<uint64_t>(p, kEntFirstSample, e.first_sample);
    Put<uint64_t>(p, kEntOffset, e.offset);
    Put<uint64_t>(p, kEntStoredBytes, e.stored_bytes);
    Put<uint32_t>(p, kEntSampleCount, e.sample_count);
    Put<uint32_t>(p, kEntCodec, version >= 2 ? static_cast<uint32_t>(e.codec) : 0);
    Put<uint64_t>(p, kEntChecksum, e.checksum);
    if (version >= 2) {
      Put<uint64_t>(p, kEntFrameBytes, e.frame_bytes);
      Put<uint64_t>(p, kEntDataBytes, e.data_bytes);
    }
    if (version >= 3) Put<uint64_t>(p, kEntRecordBytes, e.record_bytes);
    p += entry_bytes;
  }
  const size_t body = entries.size() * entry_bytes;
  Put<uint64_t>(out.data(), body, Checksum(out.data(), body));
  return out;
}

Result<std::vector<ChunkEntry>> DecodeIndex(const Header& h, const uint8_t* in, size_t n,
                                            const std::string& path) {
  const size_t entry_bytes = IndexEntryBytes(h.version);
  const size_t body = size_t{h.shard_chunks} * entry_bytes;
  if (n < body + 8)
    return std::move(Bad(path, "chunk index is truncated").WithOffset(h.index_offset));
  if (Get<uint64_t>(in, body) != Checksum(in, body))
    return std::move(
        Bad(path, "chunk index checksum mismatch (index corrupted)").WithOffset(h.index_offset));
  std::vector<ChunkEntry> entries(h.shard_chunks);
  uint64_t next_offset = kHeaderBytes;
  uint64_t samples = 0;
  uint64_t samples_before = 0;  // records: where this file's next chunk may start
  for (uint32_t i = 0; i < h.shard_chunks; ++i) {
    const uint8_t* p = in + size_t{i} * entry_bytes;
    ChunkEntry& e = entries[i];
    e.index = Get<uint64_t>(p, kEntIndex);
    e.first_sample = Get<uint64_t>(p, kEntFirstSample);
    e.offset = Get<uint64_t>(p, kEntOffset);
    e.stored_bytes = Get<uint64_t>(p, kEntStoredBytes);
    e.sample_count = Get<uint32_t>(p, kEntSampleCount);
    e.checksum = Get<uint64_t>(p, kEntChecksum);
    const uint32_t codec = Get<uint32_t>(p, kEntCodec);
    const uint64_t entry_offset = h.index_offset + uint64_t{i} * entry_bytes;
    auto bad = [&](const std::string& what) {
      return std::move(
          Bad(path, "bad chunk index entry: " + what).WithChunk(e.index).WithOffset(entry_offset));
    };
    if (e.index != uint64_t{i} * h.shard_count + h.shard_index)
      return bad("chunk number " + std::to_string(e.index) + " out of sequence");
    if (h.variable()) {
      // Chunks end by bytes: any count up to chunk_samples, each first sample after the last
      // chunk's of this file (Dataset::Open checks that the shards' chunks join up).
      if (e.sample_count == 0 || e.sample_count > h.chunk_samples)
        return bad(std::to_string(e.sample_count) + " records, expected 1 to " +
                   std::to_string(h.chunk_samples));
      if (e.first_sample < samples_before || e.first_sample >= h.total_samples ||
          e.sample_count > h.total_samples - e.first_sample)
        return bad("first record " + std::to_string(e.first_sample) + " of " +
                   std::to_string(e.sample_count) + " out of place");
      samples_before = e.first_sample + e.sample_count;
    } else {
      const bool last = e.index + 1 == h.total_chunks;
      const uint64_t want_count =
          last ? h.total_samples - e.index * uint64_t{h.chunk_samples} : h.chunk_samples;
      if (e.sample_count != want_count || e.sample_count == 0)
        return bad(std::to_string(e.sample_count) + " samples, expected " +
                   std::to_string(want_count));
      if (e.first_sample != e.index * h.chunk_samples) return bad("wrong first sample");
    }
    if (e.offset % kAlign != 0 || e.offset < next_offset) {
      return bad("misplaced chunk offset " + std::to_string(e.offset) +
                 " (a multiple of 4096 at or after byte " + std::to_string(next_offset) +
                 ", where the one before it ends)");
    }
    ChunkLayout layout{};
    if (h.variable()) {
      // Version 2 only (DecodeHeader). The data holds the table, the labels and one element a
      // record at least, and no more than its records at the header's largest record each, nor
      // than the format's chunk.
      const uint64_t least = RecordChunkBytes(e.sample_count, h.LabelBytes(),
                                              uint64_t{e.sample_count} * DTypeSize(h.sample_dtype));
      const uint64_t most = MaxRecordChunkBytes(h, e.sample_count);
      const uint64_t data = Get<uint64_t>(p, kEntDataBytes);
      if (data < least || data > most || data % kAlign != 0)
        return bad("data size " + std::to_string(data) + " for " + std::to_string(e.sample_count) +
                   " records of at most " + std::to_string(h.SampleBytes()) +
                   " bytes each (a multiple of 4096 from " + std::to_string(least) + " to " +
                   std::to_string(most) + ")");
      layout.stored_bytes = data;
      if (h.version >= 3) {
        // The records' bytes: one element a record at least, whole elements, and exactly the
        // data size's chunk (so a reader sizes nothing from it that the data does not hold).
        e.record_bytes = Get<uint64_t>(p, kEntRecordBytes);
        const uint64_t elem = DTypeSize(h.sample_dtype);
        const uint64_t fewest = uint64_t{e.sample_count} * elem;
        const uint64_t room = data - RecordLayoutFor(e.sample_count, h.LabelBytes()).records_offset;
        if (e.record_bytes < fewest || e.record_bytes > room || e.record_bytes % elem != 0 ||
            RecordChunkBytes(e.sample_count, h.LabelBytes(), e.record_bytes) != data)
          return bad("record bytes " + std::to_string(e.record_bytes) + " for " +
                     std::to_string(e.sample_count) + " records in a chunk of " +
                     std::to_string(data) + " data bytes");
      }
    } else if (!CheckedLayoutFor(e.sample_count, h.SampleBytes(), h.LabelBytes(), &layout)) {
      return bad("the chunk's size overflows 64 bits");
    } else {
      e.record_bytes = uint64_t{e.sample_count} * h.SampleBytes();  // below the layout's size
      if (h.version >= 3 && Get<uint64_t>(p, kEntRecordBytes) != e.record_bytes)
        return bad("record bytes " + std::to_string(Get<uint64_t>(p, kEntRecordBytes)) +
                   ", not the samples' " + std::to_string(e.record_bytes));
    }
    if (h.version < 2) {
      if (codec != 0) return bad("spare bytes at entry byte 36 are not zero");
      if (e.stored_bytes != layout.stored_bytes)
        return bad("stored size does not match its sample count");
      e.frame_bytes = e.data_bytes = e.stored_bytes;
    } else {
      if (!IsCodec(codec)) return bad("unknown codec id " + std::to_string(codec));
      e.codec = static_cast<Codec>(codec);
      e.frame_bytes = Get<uint64_t>(p, kEntFrameBytes);
      e.data_bytes = Get<uint64_t>(p, kEntDataBytes);
      if (e.data_bytes != layout.stored_bytes)
        return bad("data size " + std::to_string(e.data_bytes) + " does not match its " +
                   std::to_string(e.sample_count) + " samples (" +
                   std::to_string(layout.stored_bytes) + " bytes)");
      if (!e.compressed()) {
        if (e.frame_bytes != e.data_bytes || e.stored_bytes != e.data_bytes)
          return bad("a raw chunk's frame, data and stored sizes differ");
      } else if (e.frame_bytes == 0 || e.frame_bytes > e.stored_bytes ||
                 e.stored_bytes != RoundUp(e.frame_bytes, kAlign)) {
        return bad(std::string(CodecName(e.codec)) + " frame of " + std::to_string(e.frame_bytes) +
                   " bytes in a stored extent of " + std::to_string(e.stored_bytes));
      } else if (e.data_bytes > MaxDecompressedBytes(e.codec, e.frame_bytes)) {
        // The codec's own limit (io/codec.h): a ring slot is sized from the data size, so a
        // frame cannot make a reader allocate more than its stored bytes could ever give.
        return bad("data size " + std::to_string(e.data_bytes) + " from a " + CodecName(e.codec) +
                   " frame of " + std::to_string(e.frame_bytes) + " bytes, more than " +
                   CodecName(e.codec) + " can make of it (" +
                   std::to_string(MaxDecompressedBytes(e.codec, e.frame_bytes)) + ")");
      }
    }
    // Compared by subtraction: offset + stored_bytes could wrap past 2^64 to a small number.
    // The chunks end before the class names block where there is one, else before the index.
    const uint64_t limit = h.names_bytes != 0 ? h.names_offset : h.index_offset;
    if (e.offset > limit || e.stored_bytes > limit - e.offset) {
      return bad("chunk at byte " + std::to_string(e.offset) + " of " +
                 std::to_string(e.stored_bytes) + " bytes runs past the " +
                 (h.names_bytes != 0 ? "class names block" : "index") + " at byte " +
                 std::to_string(limit));
    }
    next_offset = e.offset + e.stored_bytes;
    samples += e.sample_count;
  }
  if (samples != h.shard_samples)
    return std::move(Bad(path, "chunk index holds " + std::to_string(samples) +
                                   " samples, header says " + std::to_string(h.shard_samples))
                         .WithOffset(h.index_offset));
  return entries;
}

Result<std::vector<uint8_t>> EncodeClassNames(const std::vector<std::string>& names) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.empty())
      return Status::InvalidArgument("class " + std::to_string(i) + "'s name is empty");
    for (char c : n) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return Status::InvalidArgument("class " + std::to_string(i) +
                                       "'s name holds a control character: '" + n + "'");
    }
    out.insert(out.end(), n.begin(), n.end());
    out.push_back('\n');
  }
  if (out.size() > kMaxClassNamesBytes)
    return Status::InvalidArgument("the class names take " + std::to_string(out.size()) +
                                   " bytes, more than the format's " +
                                   std::to_string(kMaxClassNamesBytes));
  return out;
}

Result<std::vector<std::string>> DecodeClassNames(const Header& h, const uint8_t* in, size_t n,
                                                  const std::string& path) {
  auto bad = [&](uint64_t at, const std::string& what) {
    return std::move(Bad(path, "bad class names block: " + what).WithOffset(h.names_offset + at));
  };
  if (n != h.names_bytes) return bad(0, "truncated");
  if (Checksum(in, n) != h.names_checksum)
    return bad(0, "checksum mismatch (class names corrupted)");
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = in[i];
    if (c == '\n') {
      if (i == start) return bad(i, "an empty class name");
      names.emplace_back(reinterpret_cast<const char*>(in) + start, i - start);
      start = i + 1;
    } else if (c < 0x20 || c == 0x7f) {
      return bad(i, "a control character in a class name");
    }
  }
  if (start != n) return bad(start, "the last class name has no newline");
  if (names.size() != h.num_classes)
    return bad(0, std::to_string(names.size()) + " class names for " +
                      std::to_string(h.num_classes) + " classes");
  return names;
}

Status VerifyChunk(const ChunkEntry& e, const void* data, const std::string& path) {
  const uint64_t got = Checksum(data, e.stored_bytes);
  if (got == e.checksum) return Status::Ok();
  char msg[96];
  std::snprintf(msg, sizeof msg, "checksum mismatch (stored %016llx, computed %016llx)",
                static_cast<unsigned long long>(e.checksum), static_cast<unsigned long long>(got));
  return std::move(Status::Corruption(path, msg).WithChunk(e.index).WithOffset(e.offset));
}

Status DecodeChunkData(const ChunkEntry& e, const void* stored, void* out, Decompressor& d,
                       const std::string& path) {
  Status st = d.Decompress(e.codec, stored, e.frame_bytes, out, e.data_bytes);
  if (st.ok()) return st;
  return std::move(Status::Corruption(path, st.message()).WithChunk(e.index).WithOffset(e.offset));
}

std::string ShardPath(const std::string& base, uint32_t index, uint32_t count) {
  if (count <= 1) return base;
  std::string stem = base;
  const std::string ext = kExtension;
  bool has_ext =
      stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0;
  if (has_ext) stem.resize(stem.size() - ext.size());
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u", index, count);
  return stem + suffix + (has_ext ? ext : "");
}

bool ParseShardName(const std::string& shard_path, std::string* base, uint32_t* index,
                    uint32_t* count) {
  static const std::regex re(R"(^(.*)-(\d{5})-of-(\d{5})(\.rfd)?$)");
  std::smatch m;
  if (!std::regex_match(shard_path, m, re)) return false;
  *base = m[1].str() + m[4].str();
  *index = static_cast<uint32_t>(std::stoul(m[2].str()));
  *count = static_cast<uint32_t>(std::stoul(m[3].str()));
  return true;
}

std::string ShardBase(const std::string& shard_path) {
  std::string base;
  uint32_t index = 0, count = 0;
  return ParseShardName(shard_path, &base, &index, &count) ? base : "";
}

}  // namespace rf::format
