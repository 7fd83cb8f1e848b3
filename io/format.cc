// io/format.h's rules that need no bytes of a file: record kinds, the sample shape, a chunk's
// layout and the format's size bounds; a chunk's checksum and data (VerifyChunk, DecodeChunkData);
// shard file names. The header's encoding is in io/format_header.cc; the index's and the class
// names block's in io/format_index.cc.
#include "io/format.h"

#include <algorithm>
#include <cstdio>
#include <regex>

namespace rf::format {

const char* RecordKindName(RecordKind k) {
  switch (k) {
    case RecordKind::kTensor:
      return "tensor";
    case RecordKind::kTokens:
      return "tokens";
    case RecordKind::kBytes:
      return "bytes";
    case RecordKind::kFields:
      return "fields";
  }
  return "unknown";
}

bool IsHeaderText(const std::string& text, size_t max) {
  return text.size() <= max &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

bool ParseRecordKind(const std::string& name, RecordKind* out) {
  for (RecordKind k :
       {RecordKind::kTensor, RecordKind::kTokens, RecordKind::kBytes, RecordKind::kFields}) {
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

bool IsImageMediaType(const std::string& t) {
  return t == "image/jpeg" || t == "image/png" || t == "image/webp" || t == "image/*";
}

bool MayHoldJpeg(const std::string& t) { return t == "image/jpeg" || t == "image/*"; }

bool HoldsImageRecords(const Header& h) {
  return h.record_kind == RecordKind::kBytes && IsImageMediaType(h.media_type);
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
