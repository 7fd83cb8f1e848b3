// Dataset's reads and checks of one chunk (io/dataset.h): its checksum, its decode, its records'
// offsets and its labels against the header's, and the positions of a chunk's parts. Opening a
// dataset is io/dataset.cc's.
#include <vector>

#include "io/chunk_fetcher.h"
#include "io/dataset.h"
#include "io/file.h"

namespace rf {

Status Dataset::VerifyChunk(size_t global, const void* data) const {
  const ChunkLocation& c = chunks_[global];
  RF_RETURN_IF_ERROR(format::VerifyChunk(c.entry, data, shard_paths_[c.shard]));
  return CheckData(global, data);
}

Status Dataset::VerifyStored(size_t global, const void* stored) const {
  const ChunkLocation& c = chunks_[global];
  return format::VerifyChunk(c.entry, stored, shard_paths_[c.shard]);
}

Status Dataset::DecodeChunk(size_t global, const void* stored, void* data, Decompressor& d) const {
  const ChunkLocation& c = chunks_[global];
  RF_RETURN_IF_ERROR(format::DecodeChunkData(c.entry, stored, data, d, shard_paths_[c.shard]));
  return CheckData(global, data);
}

Status Dataset::CheckData(size_t global, const void* data) const {
  RF_RETURN_IF_ERROR(CheckRecords(global, data));
  return CheckLabels(global, data);
}

Status Dataset::CheckRecords(size_t global, const void* data) const {
  if (!header_.variable()) return Status::Ok();
  const ChunkLocation& c = chunks_[global];
  const uint32_t n = c.entry.sample_count;
  const uint64_t* t = static_cast<const uint64_t*>(data);
  const uint64_t room = c.entry.data_bytes - RecordsOffset(global);  // DecodeIndex: positive
  const uint64_t elem = DTypeSize(header_.sample_dtype);
  const uint64_t most = header_.SampleBytes();
  for (uint32_t i = 0; i <= n; ++i) {
    std::string what;
    if (i == 0 && t[0] != 0) {
      what = "record table starts at " + std::to_string(t[0]) + ", not 0";
    } else if (i > 0 && t[i] <= t[i - 1]) {
      what = "record " + std::to_string(c.entry.first_sample + i - 1) + " is " +
             (t[i] == t[i - 1] ? std::string("empty") : "of negative size") + " (table offsets " +
             std::to_string(t[i - 1]) + ", " + std::to_string(t[i]) + ")";
    } else if (t[i] > room) {
      what = "record table offset " + std::to_string(t[i]) + " runs past the chunk's " +
             std::to_string(room) + " bytes of records";
    } else if (i > 0 && ((t[i] - t[i - 1]) % elem != 0 || t[i] - t[i - 1] > most)) {
      what = "record " + std::to_string(c.entry.first_sample + i - 1) + " of " +
             std::to_string(t[i] - t[i - 1]) + " bytes (a whole number of " + std::to_string(elem) +
             "-byte elements, at most the header's " + std::to_string(most) + ")";
    } else if (i == n && c.entry.record_bytes != 0 && t[n] != c.entry.record_bytes) {
      what = "record table ends at " + std::to_string(t[n]) + ", not at the index's " +
             std::to_string(c.entry.record_bytes) + " record bytes";
    } else {
      continue;
    }
    const uint64_t in_data = uint64_t{i} * sizeof(uint64_t);
    if (c.entry.compressed()) what += " (byte " + std::to_string(in_data) + " of the chunk's data)";
    return std::move(Status::Corruption(shard_paths_[c.shard], what)
                         .WithChunk(c.entry.index)
                         .WithOffset(c.entry.offset + (c.entry.compressed() ? 0 : in_data)));
  }
  return CheckSamples(global, data);
}

Status Dataset::CheckSamples(size_t global, const void* data) const {
  if (header_.record_kind != format::RecordKind::kFields) return Status::Ok();
  const ChunkLocation& c = chunks_[global];
  const uint64_t* t = static_cast<const uint64_t*>(data);
  const uint64_t records_at = RecordsOffset(global);
  const uint8_t* records = static_cast<const uint8_t*>(data) + records_at;
  std::vector<format::FieldSpan> spans(format::StoredFieldCount(header_.fields));
  for (uint32_t i = 0; i < c.entry.sample_count; ++i) {
    std::string why;
    if (format::SplitSample(header_.fields, records + t[i], t[i + 1] - t[i], spans.data(), &why))
      continue;
    const uint64_t in_data = records_at + t[i];
    std::string what = "sample " + std::to_string(c.entry.first_sample + i) + ": " + why;
    if (c.entry.compressed()) what += " (byte " + std::to_string(in_data) + " of the chunk's data)";
    return std::move(Status::Corruption(shard_paths_[c.shard], what)
                         .WithChunk(c.entry.index)
                         .WithOffset(c.entry.offset + (c.entry.compressed() ? 0 : in_data)));
  }
  return Status::Ok();
}

Status Dataset::CheckLabels(size_t global, const void* data) const {
  // Without labels every stored label is a uint8 0 (io/format.h): a reader hands them out, so
  // one forged to another value is refused as a label past the class count is.
  const bool labelled = header_.HasLabels();
  const ChunkLocation& c = chunks_[global];
  const uint64_t labels_at = LabelsOffset(global);
  const char* labels = static_cast<const char*>(data) + labels_at;
  for (uint32_t i = 0; i < c.entry.sample_count; ++i) {
    const int64_t v = LoadLabel(header_.label_dtype, labels, i);
    if (labelled ? v >= 0 && v < int64_t{header_.num_classes} : v == 0) continue;
    // A raw chunk's label lies at its own byte of the file. A compressed chunk's lies only in
    // the chunk's data: the error names the chunk's offset and the label's byte in the data (the
    // file's byte at the data's offset belongs to another chunk, or to none).
    const uint64_t in_data = labels_at + i * header_.LabelBytes();
    std::string what =
        "label " + std::to_string(v) + " of sample " + std::to_string(c.entry.first_sample + i);
    if (c.entry.compressed()) {
      what += " (byte ";
      what += std::to_string(in_data);
      what += " of the chunk's data)";
    }
    if (labelled) {
      what += " is outside [0, ";
      what += std::to_string(header_.num_classes);
      what += "), the header's class count";
    } else {
      what += " is not 0: the header says the dataset has no labels (0 classes)";
    }
    return std::move(Status::Corruption(shard_paths_[c.shard], what)
                         .WithChunk(c.entry.index)
                         .WithOffset(c.entry.offset + (c.entry.compressed() ? 0 : in_data)));
  }
  return Status::Ok();
}

Status Dataset::ReadChunk(size_t global, void* buf) const {
  RF_ASSIGN_OR_RETURN(ChunkFetcher f, ChunkFetcher::Create(*this));
  return f.Fetch(global, buf);
}

uint64_t Dataset::RecordsOffset(size_t global) const {
  return format::RecordLayoutFor(chunks_[global].entry.sample_count, header_.LabelBytes())
      .records_offset;
}

uint64_t Dataset::LabelsOffset(size_t global) const {
  if (header_.variable()) {
    return format::RecordLayoutFor(chunks_[global].entry.sample_count, header_.LabelBytes())
        .labels_offset;
  }
  return format::LayoutFor(chunks_[global].entry.sample_count, header_.SampleBytes(),
                           header_.LabelBytes())
      .labels_offset;
}

int64_t Dataset::Label(size_t global, const void* chunk_data, uint32_t i) const {
  const char* labels = static_cast<const char*>(chunk_data) + LabelsOffset(global);
  return LoadLabel(header_.label_dtype, labels, i);
}

}  // namespace rf
