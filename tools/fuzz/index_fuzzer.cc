// DecodeIndex on forged chunk indices: the fuzzer's bytes set fields of a valid index (chunk
// numbers, offsets near 2^64, overlapping or unaligned extents, sizes, sample counts; version 2's
// codec, frame and data sizes) and of its header; the harness recomputes both checksums. Whatever
// is accepted lies inside the file, in order, without overlap, aligned, accounts for the shard's
// samples, and has each chunk's data the size of its samples (records of any size: room for its
// table, labels and one id a record, and no more than its records at the header's largest record)
// and its frame inside its extent, its data no more than the frame can make.
#include <cstdint>
#include <vector>

#include "io/format.h"
#include "tools/fuzz/fuzz_common.h"
#include "tools/fuzz/header_checks.h"

using namespace rf;
using namespace rf::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::vector<DatasetFiles>& sets = ValidDatasets();
  const DatasetFiles& set = sets[in.ConsumeIntegralInRange<size_t>(0, sets.size() - 1)];
  std::vector<uint8_t> file = set.bytes[in.ConsumeIntegralInRange<size_t>(0, set.bytes.size() - 1)];
  const uint8_t flags = in.ConsumeIntegral<uint8_t>();
  std::vector<Field> fields = IndexFields(file);
  if (flags & 1) {  // the header's size fields too
    for (const Field& f : HeaderFields()) fields.push_back(f);
  }
  ApplyEdits(in, fields, 6, &file);
  if ((flags & 2) == 0) FixIndexChecksum(&file);
  FixHeaderChecksum(&file);
  Result<format::Header> h = format::DecodeHeader(file.data(), file.size(), "fuzz.rfd");
  if (!h.ok()) return 0;
  CheckAcceptedHeader(*h);
  // As Dataset::Open calls it: the bytes from index_offset on, where the file holds them.
  if (h->index_offset > file.size()) return 0;
  auto entries = format::DecodeIndex(*h, file.data() + h->index_offset,
                                     file.size() - h->index_offset, "fuzz.rfd");
  if (!entries.ok()) return 0;
  RF_FUZZ_CHECK(entries->size() == h->shard_chunks);
  uint64_t next = format::kHeaderBytes, samples = 0;
  for (const format::ChunkEntry& e : *entries) {
    RF_FUZZ_CHECK(e.offset % format::kAlign == 0 && e.offset >= next);
    RF_FUZZ_CHECK(e.offset <= h->index_offset && e.stored_bytes <= h->index_offset - e.offset);
    RF_FUZZ_CHECK(e.stored_bytes % format::kAlign == 0 && e.stored_bytes > 0);
    RF_FUZZ_CHECK(e.sample_count >= 1 && e.sample_count <= h->chunk_samples);
    RF_FUZZ_CHECK(e.index < h->total_chunks && e.index % h->shard_count == h->shard_index);
    if (h->variable()) {
      // Records of any size: the data holds the table, the labels and one id a record at least,
      // in whole 4096-byte blocks, within the format's chunk.
      RF_FUZZ_CHECK(e.data_bytes % format::kAlign == 0 &&
                    e.data_bytes >= format::RecordChunkBytes(
                                        e.sample_count, h->LabelBytes(),
                                        uint64_t{e.sample_count} * DTypeSize(h->sample_dtype)) &&
                    e.data_bytes <= format::MaxRecordChunkBytes(*h, e.sample_count));
    } else {
      const format::ChunkLayout l =
          format::LayoutFor(e.sample_count, h->SampleBytes(), h->LabelBytes());
      // The data is the sample count's chunk; a raw chunk stores it as it is, a compressed one
      // stores a frame that fits its extent exactly (rounded up to 4096).
      RF_FUZZ_CHECK(l.stored_bytes == e.data_bytes && l.payload_bytes <= e.data_bytes);
    }
    RF_FUZZ_CHECK(IsCodec(static_cast<uint32_t>(e.codec)));
    if (h->version < 2) RF_FUZZ_CHECK(!e.compressed());
    if (!e.compressed()) {
      RF_FUZZ_CHECK(e.frame_bytes == e.data_bytes && e.stored_bytes == e.data_bytes);
    } else {
      RF_FUZZ_CHECK(e.frame_bytes >= 1 && e.frame_bytes <= e.stored_bytes &&
                    e.stored_bytes == format::RoundUp(e.frame_bytes, format::kAlign));
      RF_FUZZ_CHECK(e.data_bytes <= format::MaxChunkDataBytes(*h));
      // Issue 40, M1: no more than the frame can make, so nothing sized from it outgrows the file.
      RF_FUZZ_CHECK(e.data_bytes <= MaxDecompressedBytes(e.codec, e.frame_bytes));
    }
    next = e.offset + e.stored_bytes;
    samples += e.sample_count;
  }
  RF_FUZZ_CHECK(samples == h->shard_samples);
  return 0;
}
