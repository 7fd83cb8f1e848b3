// What every header DecodeHeader accepts must satisfy (its contract in io/format.h), versions 1
// and 2: the fuzz targets check it of each header they get accepted, so an accepted hostile
// header stops the fuzzer as a crash would.
#pragma once

#include "io/format.h"
#include "tools/fuzz/fuzz_common.h"

namespace rf::fuzz {

inline void CheckAcceptedHeader(const format::Header& h) {
  RF_FUZZ_CHECK(h.ndim >= 1 && h.ndim <= format::kMaxDims);
  RF_FUZZ_CHECK(h.SampleElems() >= 1);
  RF_FUZZ_CHECK(h.SampleBytes() >= 1 && h.SampleBytes() <= format::kMaxSampleBytes);
  uint64_t elems = 1;
  for (uint64_t d : h.Shape()) {
    RF_FUZZ_CHECK(d >= 1 && !__builtin_mul_overflow(elems, d, &elems));
  }
  RF_FUZZ_CHECK(elems == h.SampleElems());
  RF_FUZZ_CHECK(IsSampleDType(h.sample_dtype) && IsLabelDType(h.label_dtype));
  RF_FUZZ_CHECK(h.num_classes <= format::MaxClassesFor(h.label_dtype));
  RF_FUZZ_CHECK(h.shard_count >= 1 && h.shard_index < h.shard_count);
  RF_FUZZ_CHECK(h.total_samples >= 1 && h.chunk_samples >= 1);
  const uint64_t fewest_chunks =
      h.total_samples / h.chunk_samples + (h.total_samples % h.chunk_samples != 0 ? 1 : 0);
  RF_FUZZ_CHECK(h.variable() ? h.total_chunks >= fewest_chunks && h.total_chunks <= h.total_samples
                             : h.total_chunks == fewest_chunks);
  RF_FUZZ_CHECK(h.shard_samples <= h.total_samples);
  format::ChunkLayout full{};
  if (h.variable()) {
    // Records of any size: version 2, a 1-dim shape (the largest record), ids or bytes, and a
    // chunk of chunk_samples one-element records within the format's chunk.
    RF_FUZZ_CHECK(h.version >= 2 && h.ndim == 1);
    RF_FUZZ_CHECK(h.record_kind == format::RecordKind::kTokens ? !IsImageDType(h.sample_dtype)
                                                               : h.sample_dtype == DType::kUInt8);
    RF_FUZZ_CHECK(format::RecordChunkBytes(h.chunk_samples, h.LabelBytes(),
                                           uint64_t{h.chunk_samples} * DTypeSize(h.sample_dtype)) <=
                  format::MaxChunkDataBytes(h));
  } else {
    RF_FUZZ_CHECK(
        format::CheckedLayoutFor(h.chunk_samples, h.SampleBytes(), h.LabelBytes(), &full));
    RF_FUZZ_CHECK(full.stored_bytes % format::kAlign == 0 && full.stored_bytes >= format::kAlign);
  }
  // Samples of several fields: a field table the rules accept, only there (io/fields.h).
  RF_FUZZ_CHECK((h.record_kind == format::RecordKind::kFields) != h.fields.empty());
  if (!h.fields.empty()) {
    RF_FUZZ_CHECK(h.version >= 3 &&
                  format::CheckFields(h.fields, h.HasLabels(), h.label_dtype).ok());
  }
  RF_FUZZ_CHECK(h.media_type.size() <= format::kMaxMediaType &&
                (h.media_type.empty() || h.record_kind == format::RecordKind::kBytes));
  RF_FUZZ_CHECK(h.origin.size() <= format::kMaxOrigin && (h.origin.empty() || h.version >= 2));
  for (char c : h.origin) RF_FUZZ_CHECK(c > ' ' && c <= '~');
  RF_FUZZ_CHECK(h.index_offset >= format::kHeaderBytes && h.index_offset % format::kAlign == 0);
  RF_FUZZ_CHECK(h.index_offset <= h.file_size);
  RF_FUZZ_CHECK(h.file_size - h.index_offset ==
                format::IndexStoredBytes(h.shard_chunks, h.version));
  RF_FUZZ_CHECK(h.version >= format::kOldestVersion && h.version <= format::kVersion);
  // The class names block (any version): none (all three fields 0), or a block of 2 to
  // kMaxClassNamesBytes bytes for labelled samples, two bytes a class at least, at a multiple of
  // 4096 between the header and the index.
  if (h.names_bytes == 0) {
    RF_FUZZ_CHECK(h.names_offset == 0 && h.names_checksum == 0);
  } else {
    RF_FUZZ_CHECK(h.HasLabels());
    RF_FUZZ_CHECK(h.names_bytes <= format::kMaxClassNamesBytes &&
                  h.names_bytes >= uint64_t{2} * h.num_classes);
    RF_FUZZ_CHECK(h.names_offset % format::kAlign == 0 && h.names_offset >= format::kHeaderBytes);
    RF_FUZZ_CHECK(h.names_offset <= h.index_offset &&
                  h.names_bytes <= h.index_offset - h.names_offset);
  }
  if (h.version < 2) {
    RF_FUZZ_CHECK(h.record_kind == format::RecordKind::kTensor);
    RF_FUZZ_CHECK(h.codec == CodecSpec{});
    return;
  }
  // Version 2: a codec this build knows, at a level it takes, and chunks whose data the format
  // bounds (a compressed chunk's file does not).
  RF_FUZZ_CHECK(IsCodec(static_cast<uint32_t>(h.codec.codec)));
  RF_FUZZ_CHECK(h.codec.codec == Codec::kZstd
                    ? h.codec.level >= 1 && h.codec.level <= MaxZstdLevel()
                    : h.codec.level == 0);
  RF_FUZZ_CHECK(full.stored_bytes <= format::MaxChunkDataBytes(h));
}

}  // namespace rf::fuzz
