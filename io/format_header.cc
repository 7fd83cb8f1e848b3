// io/format.h's header: EncodeHeader, DecodeHeader (every field checked against the others) and
// CheckFileSize. The fields' byte offsets are here alone.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/format.h"
#include "io/format_fields.h"

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
// Record kind fields' table (io/fields.h) lies between the class names' fields and the checksum.
static_assert(kOffNamesChecksum + 8 <= kFieldTableOffset &&
              kFieldEntriesOffset + kMaxFields * kFieldEntryBytes <= kOffChecksum);

}  // namespace

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
  if (h.record_kind == RecordKind::kFields) EncodeFieldTable(h.fields, out);
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
    if (kind > static_cast<uint32_t>(RecordKind::kFields))
      return field(kOffRecordKind, "unknown record kind " + std::to_string(kind) +
                                       " (this build reads tensor, tokens, bytes and fields "
                                       "records)");
    if (kind == static_cast<uint32_t>(RecordKind::kFields) && h.version < 3)
      return field(kOffRecordKind, "fields records in a version " + std::to_string(h.version) +
                                       " file (they are version 3)");
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
  if ((h.record_kind == RecordKind::kBytes || h.record_kind == RecordKind::kFields) &&
      h.sample_dtype != DType::kUInt8)
    return field(kOffSampleDType, std::string(RecordKindName(h.record_kind)) + " records of " +
                                      std::string(DTypeName(h.sample_dtype)));
  // The field table (io/fields.h): the fields' own, zero in any other dataset.
  if (h.record_kind == RecordKind::kFields) {
    size_t at = 0;
    std::string why;
    if (!DecodeFieldTable(in, h.num_classes != 0, h.label_dtype, &h.fields, &at, &why).ok())
      return field(at, why);
  } else {
    for (size_t b = kFieldTableOffset; b < kFieldEntriesOffset + kMaxFields * kFieldEntryBytes;
         ++b) {
      if (in[b] != 0)
        return field(b, "a field table in a dataset of " +
                            std::string(RecordKindName(h.record_kind)) + " records");
    }
  }
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
  // Every chunk takes one 4096-byte block at least, between the header and the index, so an
  // index names no more chunks than fit there: nothing is sized from a chunk count that the
  // bytes before the index cannot hold (a remote object's size is only what its server says).
  if (h.shard_chunks > (h.index_offset - kHeaderBytes) / kAlign)
    return field(kOffShardChunks, "shard holds " + std::to_string(h.shard_chunks) +
                                      " chunks, more than the " +
                                      std::to_string(h.index_offset - kHeaderBytes) +
                                      " bytes before its index hold (4096 bytes a chunk at least)");
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

}  // namespace rf::format
