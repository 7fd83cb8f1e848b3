// io/format.h's blocks after the chunks: the chunk index (EncodeIndex, DecodeIndex: every entry
// checked against the header and the entry before it) and the class names block
// (EncodeClassNames, DecodeClassNames). An entry's byte offsets are here alone.
#include <string>

#include "io/format.h"
#include "io/format_fields.h"

namespace rf::format {
namespace {

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

}  // namespace

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

}  // namespace rf::format
