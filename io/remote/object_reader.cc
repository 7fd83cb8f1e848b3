#include "io/remote/object_reader.h"

#include <vector>

namespace rf {

Result<std::unique_ptr<ObjectReader>> ObjectReader::Create(const HttpFetchOptions& options) {
  RF_ASSIGN_OR_RETURN(std::unique_ptr<HttpFetcher> f, HttpFetcher::Create(options));
  return std::unique_ptr<ObjectReader>(new ObjectReader(std::move(f)));
}

Result<uint32_t> ObjectReader::Index(const RemoteObject& object) {
  if (auto it = index_.find(object.url); it != index_.end()) return it->second;
  RF_ASSIGN_OR_RETURN(uint32_t i, fetcher_->AddObject(object));
  index_.emplace(object.url, i);
  return i;
}

Status ObjectReader::ReadAt(const RemoteObject& object, void* buf, uint64_t len, uint64_t offset) {
  if (len == 0) return Status::Ok();
  RF_ASSIGN_OR_RETURN(uint32_t url, Index(object));
  RF_RETURN_IF_ERROR(fetcher_->Prepare(HttpRequest{url, buf, len, offset, 0}));
  RF_RETURN_IF_ERROR(fetcher_->Submit());
  std::vector<HttpCompletion> done;
  RF_RETURN_IF_ERROR(fetcher_->Wait(done, 1));
  return done.front().status;
}

Result<HttpFetcher::Ends> ObjectReader::SizeAndEnds(const RemoteObject& object, void* head,
                                                    uint64_t head_len, void* tail,
                                                    uint64_t tail_len) {
  return fetcher_->SizeAndEnds(object, head, head_len, tail, tail_len);
}

}  // namespace rf
