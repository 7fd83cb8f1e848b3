// Dataset: an opened, validated ringfeed dataset (one file or all of its shards): its header,
// the shard files, and every chunk's location in global order. It reads only headers and
// indices; chunk bytes are read by a ChunkReader (io/chunk_reader.h) or ReadChunk below.
//
// Thread safety: immutable after Open, so any number of threads may use one Dataset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/codec.h"
#include "io/format.h"

namespace rf {

struct ChunkLocation {
  uint32_t shard = 0;
  format::ChunkEntry entry;
};

class Dataset {
 public:
  // `path` is a single-file dataset, any one shard of a sharded dataset, or the base name the
  // shards were written under ("data.rfd" for "data-00000-of-00004.rfd", ...). Every shard is
  // opened and checked: header, file size, index, and that the shards belong together.
  // A name that is not one shard's must name one dataset: where "data.rfd" and shards of it, or
  // shards of two counts, exist side by side (one of them stale), it is refused naming each
  // (InvalidArgument), never resolved silently. A set whose shard is missing is refused naming
  // the missing shard (NotFound).
  static Result<Dataset> Open(const std::string& path);

  // Dataset-wide fields. Per-shard fields (shard_index, shard_samples, ...) are shard 0's.
  const format::Header& header() const { return header_; }
  size_t shard_count() const { return shard_paths_.size(); }
  const std::string& shard_path(size_t shard) const { return shard_paths_[shard]; }
  uint64_t shard_bytes(size_t shard) const { return shard_bytes_[shard]; }
  uint64_t total_bytes() const;

  size_t chunk_count() const { return chunks_.size(); }
  const ChunkLocation& chunk(size_t global) const { return chunks_[global]; }
  // The largest chunk's data (what a ring slot holds: decompressed), and its stored extent (what
  // a read fetches). Equal where no chunk is compressed.
  uint64_t max_chunk_bytes() const { return max_chunk_bytes_; }
  uint64_t max_stored_bytes() const { return max_stored_bytes_; }
  // Chunks stored compressed (format version 2); 0 for every version 1 dataset.
  uint64_t compressed_chunks() const { return compressed_chunks_; }
  bool compressed() const { return compressed_chunks_ != 0; }
  uint64_t data_bytes() const { return data_bytes_; }  // every chunk's data, decompressed
  uint64_t sample_count() const { return header_.total_samples; }
  // Each global chunk's sample count, in chunk order (what orders over chunks are built from).
  std::vector<uint32_t> ChunkSampleCounts() const;

  // Verifies a raw chunk's bytes against its checksum, then its data (CheckData); errors
  // name file, chunk and offset.
  Status VerifyChunk(size_t global, const void* data) const;
  // A chunk read as stored (compressed or not): its checksum. Then DecodeChunk makes its data
  // (decompressing with the caller's per-thread Decompressor, the size enforced; a raw chunk is
  // copied) and checks its data (CheckData). Errors name file, chunk and offset.
  Status VerifyStored(size_t global, const void* stored) const;
  Status DecodeChunk(size_t global, const void* stored, void* data, Decompressor& d) const;
  // What a reader checks of a chunk's data even without the checksum: its record table
  // (CheckRecords) and its labels (CheckLabels). Every path that hands a chunk on runs it.
  Status CheckData(size_t global, const void* data) const;
  // Records of any size (format.h): that the chunk's record table starts at 0, grows by a whole
  // number of elements, at least one and at most the header's largest record, a record, and ends
  // within the chunk's data; nothing for tensor records. Corruption naming file, chunk, the
  // record and the table entry's byte offset in the file (a compressed chunk's: the chunk's
  // offset, and the entry's byte in the chunk's data).
  Status CheckRecords(size_t global, const void* data) const;
  // That every label of a chunk lies in [0, num_classes) (nothing to check without labels): a
  // file whose checksums hold can still carry labels its header's class count does not allow.
  // Corruption naming file, chunk, the global sample and the label's byte offset in the file (a
  // compressed chunk's: the chunk's offset, and the label's byte in the chunk's data).
  // Cheap beside the checksum (one label per sample), so readers run it even without verify.
  Status CheckLabels(size_t global, const void* data) const;
  // Reads and verifies one chunk with plain pread, decompressing it where it is stored
  // compressed, into buf (max_chunk_bytes() or the chunk's data_bytes). Tools, managed mode's
  // load and tests; not the streaming path.
  Status ReadChunk(size_t global, void* buf) const;

  // Where the labels start inside a chunk buffer.
  uint64_t LabelsOffset(size_t global) const;
  // Records of any size: where the records start inside a chunk buffer (the table is at 0:
  // sample_count + 1 uint64 offsets from here).
  uint64_t RecordsOffset(size_t global) const;
  // Label `i` of a chunk, as an integer.
  int64_t Label(size_t global, const void* chunk_data, uint32_t i) const;

 private:
  format::Header header_;
  std::vector<std::string> shard_paths_;
  std::vector<uint64_t> shard_bytes_;
  std::vector<ChunkLocation> chunks_;
  uint64_t max_chunk_bytes_ = 0;
  uint64_t max_stored_bytes_ = 0;
  uint64_t compressed_chunks_ = 0;
  uint64_t data_bytes_ = 0;
};

// The files that exist under the dataset name `name` ("data.rfd": the file itself and every
// "data-NNNNN-of-MMMMM.rfd", of any count), sorted. More than one dataset among them makes the
// name ambiguous (Dataset::Open); the converter removes the ones its new dataset replaces.
std::vector<std::string> DatasetFilesNamed(const std::string& name);
// Whether the file name (no directory) `file` is `name` or a shard name of it.
bool IsDatasetFileNamed(std::string_view file, std::string_view name);
// Is path a regular file that begins with a ringfeed dataset header's magic? (What a writer may
// remove as an older dataset of its name: nothing else that merely has such a name.)
bool IsDatasetFile(const std::string& path);

}  // namespace rf
