// ObjectReader: blocking reads of remote objects (io/remote/remote_object.h), for what reads a
// few ranges and waits for each: a dataset's headers and indices at open, the slow path's whole
// chunks (io/chunk_fetcher.h). The streaming path does not wait per read: it drives an
// HttpFetcher through the chunk reader (io/http_queue.h).
//
// One HttpFetcher underneath, so the connections to a store are opened once and reused by every
// read; each read retried as the fetcher's options say (io/remote/retry_policy.h). Errors name
// the object as RemoteObject::shown does: never its credentials or its query.
//
// Thread safety: none; one thread owns a reader.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "io/remote/http_fetcher.h"
#include "io/remote/remote_object.h"

namespace rf {

class ObjectReader {
 public:
  static Result<std::unique_ptr<ObjectReader>> Create(const HttpFetchOptions& options);

  // The object's size and both its ends at once (HttpFetcher::SizeAndEnds): one round trip.
  // NotFound where the server has no such object.
  Result<HttpFetcher::Ends> SizeAndEnds(const RemoteObject& object, void* head, uint64_t head_len,
                                        void* tail, uint64_t tail_len);
  // Exactly `len` bytes from `offset` into buf (len 0 reads nothing).
  Status ReadAt(const RemoteObject& object, void* buf, uint64_t len, uint64_t offset);

  const HttpFetchStats& stats() const { return fetcher_->stats(); }

 private:
  explicit ObjectReader(std::unique_ptr<HttpFetcher> f) : fetcher_(std::move(f)) {}
  Result<uint32_t> Index(const RemoteObject& object);

  std::unique_ptr<HttpFetcher> fetcher_;
  std::unordered_map<std::string, uint32_t> index_;  // url -> the fetcher's index
};

}  // namespace rf
