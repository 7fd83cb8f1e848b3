// ChunkFetcher: reads whole chunks of a Dataset with plain pread, one at a time, and hands back
// each one's data: a raw chunk read straight into the caller's buffer and checked against its
// checksum (where asked); a compressed one read into the fetcher's stored buffer, its checksum
// checked (where asked), then decompressed to exactly its declared data size; then its labels
// checked against the class count. Errors name file, chunk and offset.
//
// The slow path's one loop: Dataset::ReadChunk, managed mode's load (one fetcher a thread), the
// converter's ForEachChunk. The streaming path is the io_uring reader and the chunk stage
// (pipeline/stage/chunk_feeder.h), which do the same checks in the same order.
//
// A remote dataset's chunks are fetched by range requests (io/remote/object_reader.h), the
// connections opened once per fetcher; the checks are the same. Where the dataset has a
// node-local cache attached (Dataset::AttachCache, io/chunk_cache.h), each chunk goes through it
// as in the chunk reader's loop: a cached copy is read from its file and its checksum checked
// always (a copy of another size or checksum is removed and the chunk fetched); a chunk this
// fetcher claims is fetched, checked and committed (a commit that fails to write is said once on
// stderr and the run goes on); one another process is fetching is waited for (Claim's wait: the
// fetcher has nothing else in flight), then fetched here past the wait. Started(g) is called for
// each chunk, so a schedule set on the cache (SetSchedule) guides its eviction.
//
// Memory: one stored extent (the dataset's largest, where any chunk is compressed) and the codec
// contexts; each shard file is opened once, at Create.
//
// Thread safety: none; one fetcher per thread. The Dataset must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "io/codec.h"
#include "io/dataset.h"
#include "io/file.h"
#include "io/remote/object_reader.h"

namespace rf {

class ChunkFetcher {
 public:
  static Result<ChunkFetcher> Create(const Dataset& dataset);

  // Chunk `global`'s data into `out` (at least its entry's data_bytes; Dataset::max_chunk_bytes()
  // fits every chunk). `verify`: check the checksum (the frame and the labels are checked
  // always).
  Status Fetch(size_t global, void* out, bool verify = true);

 private:
  explicit ChunkFetcher(const Dataset& d) : dataset_(&d) {}
  // The chunk's stored bytes, from its shard file or by range requests.
  Status ReadStored(size_t global, void* into);
  // The stored bytes through the dataset's cache; true where their checksum was checked.
  Result<bool> ThroughCache(ChunkCache& cache, size_t global, void* stored);
  const Dataset* dataset_;
  std::vector<File> files_;               // one per shard (a local dataset)
  std::unique_ptr<ObjectReader> remote_;  // a remote one's range requests
  std::vector<uint8_t> stored_;
  Decompressor decompressor_;
  bool said_ = false;  // a commit's failure said on stderr
};

}  // namespace rf
