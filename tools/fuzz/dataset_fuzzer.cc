// Dataset::Open on forged files, one dataset or its shards: the fuzzer's bytes edit the header
// and index fields of a valid dataset's files (versions 1 and 2) and the codec frames of its
// chunks (or replace a file whole: the raw mode), can swap or drop shard files, and the harness
// recomputes the checksums it is asked to (chunks, index, header), so the forgery reaches the
// checks behind them and the decompression (the class names block's checksum too, unless the
// input leaves it). An opened dataset is then read whole, as
// `ringfeed-convert verify` reads it. What opens must describe chunks that lie inside their
// files, with data the format bounds; nothing may be allocated from a size the files or the
// format do not bound (run.sh's -malloc_limit_mb).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tools/fuzz/fuzz_common.h"
#include "tools/fuzz/header_checks.h"

using namespace rf;
using namespace rf::fuzz;

// Chunks whose data is larger are not read: a version 2 header may declare chunks of up to
// format::MaxChunkDataBytes (1 GiB) in a file of a few KiB (a compressed chunk's file does not
// bound its data; the format does, and the header check enforces it), and run.sh's
// -malloc_limit_mb stops any single allocation above 256 MiB.
constexpr uint64_t kMaxReadBytes = uint64_t{64} << 20;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // mode: 0x80 raw; else 0x01 edit the codec frames, 0x02 edit them again after the fields,
  // 0x04 / 0x08 / 0x10 leave the chunk / index / header checksums as the edits left them; 0x20
  // swap two shards' names, 0x40 drop the last shard.
  const uint8_t mode = in.ConsumeIntegral<uint8_t>();
  const std::vector<DatasetFiles>& sets = ValidDatasets();
  const DatasetFiles& set = sets[in.ConsumeIntegralInRange<size_t>(0, sets.size() - 1)];
  std::vector<std::vector<uint8_t>> files = set.bytes;
  std::vector<std::string> names = set.names;
  const bool by_base = in.ConsumeBool();
  if (mode & 0x80) {
    files[0] = in.ConsumeRemainingBytes<uint8_t>();  // raw: a file of the fuzzer's bytes
  } else {
    // Whether the class names block's checksum (header byte 816) is left as the edits left it.
    const bool keep_names_checksum = in.ConsumeBool();
    if (mode & 0x01) {
      EditFrames(in, 4, &files[in.ConsumeIntegralInRange<size_t>(0, files.size() - 1)]);
    }
    for (int round = 0; round < 3 && in.remaining_bytes() > 0; ++round) {
      std::vector<uint8_t>& f = files[in.ConsumeIntegralInRange<size_t>(0, files.size() - 1)];
      std::vector<Field> fields = HeaderFields();
      for (const Field& x : IndexFields(f)) fields.push_back(x);
      ApplyEdits(in, fields, 4, &f);
    }
    if (mode & 0x02) {
      EditFrames(in, 4, &files[in.ConsumeIntegralInRange<size_t>(0, files.size() - 1)]);
    }
    for (std::vector<uint8_t>& f : files) {
      if ((mode & 0x04) == 0) FixChunkChecksums(&f);
      if ((mode & 0x08) == 0) FixIndexChecksum(&f);
      if (!keep_names_checksum) FixNamesChecksum(&f);
      if ((mode & 0x10) == 0) FixHeaderChecksum(&f);
    }
  }
  if ((mode & 0x20) && files.size() == 2) std::swap(names[0], names[1]);
  if ((mode & 0x40) && files.size() == 2) files.pop_back();

  const std::string& dir = ScratchDir();
  for (const std::string& n : set.names) std::filesystem::remove(dir + "/" + n);
  for (size_t i = 0; i < files.size(); ++i) WriteFile(dir + "/" + names[i], files[i]);
  const std::string path = by_base ? set.base : dir + "/" + names[0];

  Result<Dataset> d = Dataset::Open(path);
  if (!d.ok()) return 0;
  const format::Header& h = d->header();
  CheckAcceptedHeader(h);
  RF_FUZZ_CHECK(d->chunk_count() == h.total_chunks);
  RF_FUZZ_CHECK(d->shard_count() == h.shard_count && d->shard_count() <= files.size());
  uint64_t largest_file = 0, samples = 0;
  for (size_t s = 0; s < d->shard_count(); ++s)
    largest_file = std::max(largest_file, d->shard_bytes(s));
  // What a ring slot and a stored buffer are sized from: a raw chunk's file holds it; a
  // compressed chunk's data is what its frame (in its file) can make, and within the format's.
  RF_FUZZ_CHECK(d->max_stored_bytes() <= largest_file && d->max_raw_bytes() <= largest_file);
  RF_FUZZ_CHECK(d->max_chunk_bytes() <=
                (h.version < 2 ? largest_file : format::MaxChunkDataBytes(h)));
  for (size_t g = 0; g < d->chunk_count(); ++g) {
    const ChunkLocation& c = d->chunk(g);
    RF_FUZZ_CHECK(c.entry.index == g && c.entry.first_sample == samples);
    RF_FUZZ_CHECK(c.entry.offset <= d->shard_bytes(c.shard) &&
                  c.entry.stored_bytes <= d->shard_bytes(c.shard) - c.entry.offset);
    RF_FUZZ_CHECK(c.entry.frame_bytes <= c.entry.stored_bytes);
    RF_FUZZ_CHECK(c.entry.data_bytes <= MaxDecompressedBytes(c.entry.codec, c.entry.frame_bytes));
    if (h.variable())
      RF_FUZZ_CHECK(c.entry.data_bytes <= format::MaxRecordChunkBytes(h, c.entry.sample_count));
    samples += c.entry.sample_count;
  }
  RF_FUZZ_CHECK(samples == h.total_samples);
  // The class names (header byte 800): none where the header has no block; else one name a
  // class, each non-empty and without a control character (a newline would split it), from a
  // block that lies after every chunk and before the index in each file (CheckAcceptedHeader
  // holds the first shard's fields; every shard's must agree with them).
  const std::vector<std::string>& class_names = d->class_names();
  if (h.names_bytes == 0) {
    RF_FUZZ_CHECK(class_names.empty());
  } else {
    RF_FUZZ_CHECK(class_names.size() == h.num_classes);
    uint64_t bytes = 0;
    for (const std::string& n : class_names) {
      RF_FUZZ_CHECK(!n.empty());
      for (char c : n) RF_FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
      bytes += n.size() + 1;
    }
    RF_FUZZ_CHECK(bytes == h.names_bytes);
    for (size_t s = 0; s < d->shard_count(); ++s)
      RF_FUZZ_CHECK(h.names_offset + h.names_bytes <= d->shard_bytes(s));
    for (size_t g = 0; g < d->chunk_count(); ++g) {
      const format::ChunkEntry& e = d->chunk(g).entry;
      RF_FUZZ_CHECK(e.offset + e.stored_bytes <= h.names_offset);
    }
  }
  // Read it whole, as verify does, each chunk into a buffer of exactly its data (so ASan sees a
  // write past it): every chunk that passes has every label in range.
  for (size_t g = 0; g < d->chunk_count(); ++g) {
    const format::ChunkEntry& e = d->chunk(g).entry;
    if (e.data_bytes > kMaxReadBytes) continue;
    std::vector<uint8_t> buf(e.data_bytes);
    if (!d->ReadChunk(g, buf.data()).ok()) continue;
    RF_FUZZ_CHECK(d->LabelsOffset(g) + uint64_t{e.sample_count} * h.LabelBytes() <= e.data_bytes);
    if (h.variable()) {
      // A chunk that passes has a record table a reader can follow: every record non-empty,
      // whole ids, at most the largest, within the chunk's data.
      const auto* table = reinterpret_cast<const uint64_t*>(buf.data());
      RF_FUZZ_CHECK(table[0] == 0);
      for (uint32_t i = 0; i < e.sample_count; ++i) {
        RF_FUZZ_CHECK(table[i + 1] > table[i] && table[i + 1] - table[i] <= h.SampleBytes());
        RF_FUZZ_CHECK((table[i + 1] - table[i]) % DTypeSize(h.sample_dtype) == 0);
      }
      RF_FUZZ_CHECK(d->RecordsOffset(g) + table[e.sample_count] <= e.data_bytes);
    }
    for (uint32_t i = 0; h.HasLabels() && i < e.sample_count; ++i) {
      const int64_t label = d->Label(g, buf.data(), i);
      RF_FUZZ_CHECK(label >= 0 && label < int64_t{h.num_classes});
    }
  }
  return 0;
}
