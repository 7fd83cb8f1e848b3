// HttpQueue: the IoQueue (io/io_queue.h) of a remote dataset: the chunk reader's reads of each
// file become byte-range requests of its object (Dataset::remote_object), several in flight,
// through one HttpFetcher (io/remote/http_fetcher.h). It is the reader beside the io_uring one:
// the ChunkReader above it, and every stage after the reader, are the local path's.
//
// Requests name files by the dataset's shard index (RegisterFiles is not called:
// reads_local_files() is false) and land straight in their buffers (the ring's slots). A
// completion is the whole read (res = len), or a failure the fetcher already retried as its
// options say: res = -EREMOTEIO and TakeFailure gives its one-line Status (the object's shown
// name, the byte range, the HTTP status or the curl error; never its credentials).
//
// Ownership: the Dataset must outlive the queue; buffers as IoQueue's.
// Thread safety: none; one thread owns the queue.
#pragma once

#include <memory>
#include <vector>

#include "io/dataset.h"
#include "io/io_queue.h"
#include "io/remote/http_fetcher.h"

namespace rf {

class HttpQueue final : public IoQueue {
 public:
  // One request in flight per `depth` (at most the dataset's remote max_in_flight).
  static Result<std::unique_ptr<HttpQueue>> Create(const Dataset& dataset, uint32_t depth);

  Status RegisterFiles(std::span<const int>) override { return Status::Ok(); }
  Status RegisterBuffers(std::span<const iovec>) override {
    return Status::Unsupported("a remote queue registers no buffers");
  }
  uint32_t capacity() const override { return fetcher_->capacity(); }
  void Prepare(const IoRequest& r) override;
  Status Submit() override;
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override;
  const char* name() const override { return "http"; }
  bool reads_local_files() const override { return false; }
  Status TakeFailure(uint32_t failure) override;

  const HttpFetchStats& stats() const { return fetcher_->stats(); }

 private:
  explicit HttpQueue(std::unique_ptr<HttpFetcher> f) : fetcher_(std::move(f)) {}

  std::unique_ptr<HttpFetcher> fetcher_;
  std::vector<uint32_t> url_of_file_;  // the fetcher's URL index of each shard
  std::vector<HttpCompletion> done_;
  std::vector<Status> failures_;  // failure k + 1 is failures_[k]; cleared as taken
  uint32_t untaken_ = 0;
  Status prepare_error_;  // a Prepare the fetcher refused (a bug): the next Submit returns it
};

}  // namespace rf
