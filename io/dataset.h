// Dataset: an opened, validated ringfeed dataset (one file or all of its shards, or a directory
// of such datasets read as one): its header, the files, and every chunk's location in global
// order. It reads only headers and indices; chunk bytes are read by a ChunkReader
// (io/chunk_reader.h) or ReadChunk below.
//
// A directory is a dataset: every dataset in it (a file "NAME.rfd", or a complete shard set
// "NAME-KKKKK-of-NNNNN.rfd"; other files are ignored) is a *part*, the parts sorted by NAME.rfd
// (byte order) and concatenated: global chunks are part 0's chunks in its own order, then part
// 1's, ...; global sample offset_p + s is part p's sample s (offset_p: the samples of the parts
// before it). So chunks of different sizes sit in the middle (each part's short last chunk);
// everything downstream works from the per-chunk sample counts (ChunkSampleCounts) and per-chunk
// locations, never from chunk_samples or a chunk's number. This is how datasets written by
// independent processes (each its own DatasetWriter) are read as one.
//
// Thread safety: immutable after Open, so any number of threads may use one Dataset.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/codec.h"
#include "io/format.h"
#include "io/remote/remote_object.h"
#include "io/remote/retry_policy.h"

namespace rf {

struct ChunkLocation {
  uint32_t shard = 0;         // its file: Dataset::shard_path(shard)
  format::ChunkEntry entry;   // as its file's index says it: entry.index and entry.first_sample
                              // are its own dataset's numbers (a directory's part's)
  uint64_t first_sample = 0;  // the global index of its first sample in this Dataset
};

// One dataset of a directory (Dataset::Open of a directory; a single dataset is its own one
// part). Its files, chunks and samples are a consecutive run of the Dataset's.
struct DatasetPart {
  std::string path;                       // as it was opened: its file, or its shards' base name
  format::Header header;                  // its own (its first file's)
  size_t first_file = 0, file_count = 0;  // Dataset::shard_path(first_file ...)
  uint64_t first_chunk = 0, chunk_count = 0;
  uint64_t first_sample = 0, sample_count = 0;
};

struct OpenedShard;  // io/dataset_shards.h
class ChunkCache;    // io/chunk_cache.h

class Dataset {
 public:
  // `path` is a single-file dataset, any one shard of a sharded dataset, or the base name the
  // shards were written under ("data.rfd" for "data-00000-of-00004.rfd", ...). Every shard is
  // opened and checked: header, file size, index, and that the shards belong together.
  // A name that is not one shard's must name one dataset: where "data.rfd" and shards of it, or
  // shards of two counts, exist side by side (one of them stale), it is refused naming each
  // (InvalidArgument), never resolved silently. A set whose shard is missing is refused naming
  // the missing shard (NotFound).
  //
  // `path` a directory: its parts, as above. Each part is opened as a name is (so its own
  // errors, naming its files), and every part must hold the same records as the first
  // (CheckSameRecords); a directory without a .rfd file is NotFound. A ".rfd" file that is not a
  // valid dataset is an error, never skipped; a writer's temporary files ("NAME.rfd.tmp.*") are
  // not .rfd files, so a part still being written is not seen until its writer renames it.
  // The header of a directory of several parts (one part: that part's header, so a directory
  // of one dataset reads exactly as the dataset): the records' fields; total_samples and
  // total_chunks summed; chunk_samples the largest; version the newest; for records of any
  // size, the shape the largest part's (its largest record, which bounds every record); the
  // codec the parts' where they all agree, else none (informational: each chunk names its own);
  // mean and std pooled exactly from the parts' (PoolStatistics); dataset_id derived from the
  // parts' ids in order (PartsDatasetId), so a checkpoint refuses a directory whose parts
  // changed. The per-file fields (shard_index, shard_count, shard_samples, ...) are its first
  // file's.
  //
  // `path` remote (a URL: "https://", "http://", "s3://"; io/remote/remote_object.h): the same
  // dataset read from a store, its headers and indices fetched by range requests with `remote`'s
  // options (which the chunk readers then use too). A file or one shard's URL names the dataset
  // (its other shards are found beside it by name); a base name or a directory is listed where
  // the store lists (s3://), refused where it cannot (https://: name the file or a shard).
  // shard_path() is then each file's shown name (no credentials, no query: RedactUrl).
  static Result<Dataset> Open(const std::string& path, const HttpFetchOptions& remote = {});

  // Whether its files are remote objects; each one's object (remote() only); the options every
  // reader of it fetches with.
  bool remote() const { return !objects_.empty(); }
  const RemoteObject& remote_object(size_t shard) const { return objects_[shard]; }
  const HttpFetchOptions& remote_options() const { return remote_; }
  // A node-local cache of a remote dataset's chunks (io/chunk_cache.h, opened with CacheId())
  // that every chunk reader of it uses (io/chunk_reader.h); shared by the Dataset's copies. Attach
  // it once, after Open and before the dataset is shared between threads. Null where none.
  void AttachCache(std::shared_ptr<ChunkCache> cache) { cache_ = std::move(cache); }
  ChunkCache* cache() const { return cache_.get(); }
  // What a cache of its chunks is keyed by: the header's dataset id, the chunk count and every
  // chunk's stored size and checksum, hashed (XXH3-64). A dataset rewritten under the same id,
  // or another dataset, never reads this one's cached chunks.
  uint64_t CacheId() const;

  // Dataset-wide fields. Per-shard fields (shard_index, shard_samples, ...) are shard 0's.
  const format::Header& header() const { return header_; }
  // The labels' names, class 0 first (the header's class names block); empty where it has none.
  // A directory's parts all have the same (CheckSameRecords).
  const std::vector<std::string>& class_names() const { return class_names_; }
  // What Open was given; whether it is a directory of parts.
  const std::string& path() const { return path_; }
  bool is_directory() const { return directory_; }
  size_t part_count() const { return parts_.size(); }
  const DatasetPart& part(size_t p) const { return parts_[p]; }
  // The files (a directory's: every part's, in part order), though named for shards.
  size_t shard_count() const { return shard_paths_.size(); }
  const std::string& shard_path(size_t shard) const { return shard_paths_[shard]; }
  uint64_t shard_bytes(size_t shard) const { return shard_bytes_[shard]; }
  uint64_t total_bytes() const;

  size_t chunk_count() const { return chunks_.size(); }
  const ChunkLocation& chunk(size_t global) const { return chunks_[global]; }
  // The largest chunk's data (what a ring slot holds: decompressed). Every size here is one
  // DecodeIndex held to what the file and the header allow (a compressed chunk's data to what its
  // frame can make, io/codec.h), so memory sized from them follows the stored bytes.
  uint64_t max_chunk_bytes() const { return max_chunk_bytes_; }
  // The largest raw chunk (what a read puts straight into a ring slot), and the largest stored
  // extent of a compressed chunk (what a read puts into a stored buffer, to be decompressed into
  // a ring slot); 0 where the dataset has no such chunk.
  uint64_t max_raw_bytes() const { return max_raw_bytes_; }
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
  // Samples of several fields (io/fields.h; CheckRecords runs it once the table holds): that
  // each sample's field lengths fit its record and its fields' rules. Corruption naming file,
  // chunk, the sample and its first byte; nothing for other record kinds.
  Status CheckSamples(size_t global, const void* data) const;
  // That every label of a chunk lies in [0, num_classes) (nothing to check without labels): a
  // file whose checksums hold can still carry labels its header's class count does not allow.
  // Corruption naming file, chunk, the sample and the label's byte offset in the file (a
  // compressed chunk's: the chunk's offset, and the label's byte in the chunk's data); chunk and
  // sample as the file numbers them (a directory's part: its own numbers, not the directory's).
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
  // A file or a base name (the first paragraph of Open).
  static Result<Dataset> OpenNamed(const std::string& path);
  static Result<Dataset> OpenDirectory(const std::string& dir);
  // A remote path (io/dataset_remote.cc).
  static Result<Dataset> OpenRemote(const std::string& path, const HttpFetchOptions& remote);
  static Result<Dataset> OpenRemoteNamed(const std::string& path, const HttpFetchOptions& remote);
  // The shard set whose shard (or only file) is `first`: every shard opened by `open` (given its
  // path, the first paragraph of Open's names), checked to belong together, made one Dataset
  // named `path`.
  using ShardOpener = std::function<Result<OpenedShard>(const std::string& path)>;
  // The directory `dir` of the datasets `names` (DatasetNamesOf), each opened by `open`, one
  // Dataset of parts (Open's directory rules).
  using PartOpener = std::function<Result<Dataset>(const std::string& name)>;
  static Result<Dataset> OpenParts(const std::string& dir, const std::vector<std::string>& names,
                                   const PartOpener& open);
  // threads > 1: `open` may be called from that many threads at once, and where `first`'s name
  // says the count (-of-N, N <= kMaxShardsOpenedAhead), every shard is opened at once (a remote
  // set's round trips overlap) before the checks, which then run as with one thread.
  static Result<Dataset> OpenShardSet(const std::string& path, const std::string& first,
                                      const ShardOpener& open, uint32_t threads = 1);
  static constexpr uint32_t kMaxShardsOpenedAhead = 1024;
  // open(paths[i]) for every i, on `threads` threads.
  static std::vector<std::optional<Result<OpenedShard>>> OpenAll(
      const std::vector<std::string>& paths, const ShardOpener& open, uint32_t threads);
  // Adds `part`'s files and chunks after this one's, as its next part.
  void AppendPart(Dataset&& part);

  format::Header header_;
  std::vector<std::string> class_names_;
  std::string path_;
  bool directory_ = false;
  std::vector<DatasetPart> parts_;
  std::vector<std::string> shard_paths_;
  std::vector<uint64_t> shard_bytes_;
  std::vector<ChunkLocation> chunks_;
  std::vector<RemoteObject> objects_;  // remote(): one per file, beside shard_paths_
  HttpFetchOptions remote_;
  std::shared_ptr<ChunkCache> cache_;
  uint64_t max_chunk_bytes_ = 0;
  uint64_t max_raw_bytes_ = 0;
  uint64_t max_stored_bytes_ = 0;
  uint64_t compressed_chunks_ = 0;
  uint64_t data_bytes_ = 0;
};

// The dataset names of a directory's file names (no directory in them), sorted by bytes, each
// once: every name ending in ".rfd" (".rfd" alone is no name), a shard file's as its shards' base
// name ("d-00001-of-00004.rfd": "d.rfd"). Other names, a writer's temporaries
// ("d.rfd.tmp.<pid>.<n>") among them, are not datasets.
std::vector<std::string> DatasetNamesOf(const std::vector<std::string>& files);

// The files that exist under the dataset name `name` ("data.rfd": the file itself and every
// "data-NNNNN-of-MMMMM.rfd", of any count), sorted. More than one dataset among them makes the
// name ambiguous (Dataset::Open); the converter removes the ones its new dataset replaces.
std::vector<std::string> DatasetFilesNamed(const std::string& name);
// Whether the file name (no directory) `file` is `name` or a shard name of it.
bool IsDatasetFileNamed(std::string_view file, std::string_view name);
// Is path a regular file that begins with a ringfeed dataset header's magic? (What a writer may
// remove as an older dataset of its name: nothing else that merely has such a name.)
bool IsDatasetFile(const std::string& path);

// Whether the datasets of headers a (of file a_path) and b (of file b_path) hold the same
// records: record kind, sample dtype and shape (for records of any size, whose header's shape
// is the largest record, not the shape), media type, labels or none, label dtype and class
// count.
// InvalidArgument naming b_path, a_path and the first field that differs, with both values.
// What describes a record is compared here and only here: a header field that describes records
// belongs in it. (Counts, ids, statistics, version and codec may differ among a directory's
// parts.) `use` says why they must agree, in the message: the parts of a directory (read as one,
// where their origin must agree too: a tool writing them back reads the first's), or the datasets
// of a mixture (drawn into the same batches: pipeline/sources/mixture.h; their origins may differ).
enum class RecordsUse { kDirectory, kMixture };
Status CheckSameRecords(const format::Header& a, const std::string& a_path, const format::Header& b,
                        const std::string& b_path, RecordsUse use = RecordsUse::kDirectory);

// The per-channel mean and std of the samples of several datasets together, from each one's
// sample count, mean and std (population statistics, as the writer computes them), exactly:
// mean = sum n_i m_i / N, var = sum n_i (s_i^2 + (m_i - mean)^2) / N, in double. Channels
// `channels` and up keep parts[0]'s. Where a pooled value is not finite as a float (parts of
// float32 samples near its range), false.
bool PoolStatistics(const std::vector<const format::Header*>& parts, uint32_t channels,
                    std::array<float, format::kMaxChannels>* mean,
                    std::array<float, format::kMaxChannels>* stddev);

// The dataset id of a directory of several parts: a hash (XXH3-64) of the part count and the
// parts' ids in order, odd as writers' ids are. Another part, one fewer, or the parts in another
// order give another id; a part rewritten with its id kept (recompress: the same chunks) does not.
uint64_t PartsDatasetId(const std::vector<uint64_t>& part_ids);

}  // namespace rf
