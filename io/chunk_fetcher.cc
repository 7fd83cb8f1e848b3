#include "io/chunk_fetcher.h"

#include <fcntl.h>

#include <utility>

namespace rf {

Result<ChunkFetcher> ChunkFetcher::Create(const Dataset& dataset) {
  ChunkFetcher f(dataset);
  if (dataset.remote()) {
    RF_ASSIGN_OR_RETURN(f.remote_, ObjectReader::Create(dataset.remote_options()));
  }
  for (size_t s = 0; s < dataset.shard_count() && !dataset.remote(); ++s) {
    RF_ASSIGN_OR_RETURN(File file, File::Open(dataset.shard_path(s), O_RDONLY));
    f.files_.push_back(std::move(file));
  }
  // Sized once, from the index (Dataset::Open bounded it by the files).
  f.stored_.resize(dataset.compressed() ? dataset.max_stored_bytes() : 0);
  return f;
}

Status ChunkFetcher::Fetch(size_t global, void* out, bool verify) {
  const ChunkLocation& at = dataset_->chunk(global);
  const format::ChunkEntry& e = at.entry;
  void* read_into = e.compressed() ? static_cast<void*>(stored_.data()) : out;
  Status st = remote_ ? remote_->ReadAt(dataset_->remote_object(at.shard), read_into,
                                        e.stored_bytes, e.offset)
                      : files_[at.shard].ReadAt(read_into, e.stored_bytes, e.offset);
  if (!st.ok()) return std::move(st.WithChunk(e.index));
  if (!e.compressed())
    return verify ? dataset_->VerifyChunk(global, out) : dataset_->CheckData(global, out);
  if (verify) RF_RETURN_IF_ERROR(dataset_->VerifyStored(global, stored_.data()));
  return dataset_->DecodeChunk(global, stored_.data(), out, decompressor_);
}

}  // namespace rf
