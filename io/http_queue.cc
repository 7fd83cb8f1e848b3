#include "io/http_queue.h"

#include <algorithm>
#include <cerrno>

namespace rf {

Result<std::unique_ptr<HttpQueue>> HttpQueue::Create(const Dataset& dataset, uint32_t depth) {
  if (!dataset.remote()) return Status::InvalidArgument("HttpQueue: the dataset is not remote");
  HttpFetchOptions o = dataset.remote_options();
  o.max_in_flight = std::max<uint32_t>(1, std::min(o.max_in_flight, depth));
  RF_ASSIGN_OR_RETURN(std::unique_ptr<HttpFetcher> f, HttpFetcher::Create(o));
  std::unique_ptr<HttpQueue> q(new HttpQueue(std::move(f)));
  for (size_t s = 0; s < dataset.shard_count(); ++s) {
    RF_ASSIGN_OR_RETURN(uint32_t url, q->fetcher_->AddObject(dataset.remote_object(s)));
    q->url_of_file_.push_back(url);
  }
  q->done_.reserve(o.max_in_flight);
  return q;
}

void HttpQueue::Prepare(const IoRequest& r) {
  if (!prepare_error_.ok()) return;
  if (r.file >= url_of_file_.size()) {
    prepare_error_ =
        Status::InvalidArgument("HttpQueue: request for file " + std::to_string(r.file) + " of " +
                                std::to_string(url_of_file_.size()));
    return;
  }
  prepare_error_ = fetcher_->Prepare(
      HttpRequest{url_of_file_[r.file], r.buf, r.len, r.offset,
                  (static_cast<uint64_t>(r.len) << 32) | (r.user_data & 0xffffffffu)});
}

Status HttpQueue::Submit() {
  if (!prepare_error_.ok()) return prepare_error_;
  return fetcher_->Submit();
}

Status HttpQueue::Wait(std::vector<IoCompletion>& out, uint32_t min) {
  done_.clear();
  RF_RETURN_IF_ERROR(fetcher_->Wait(done_, min));
  for (HttpCompletion& c : done_) {
    IoCompletion io;
    io.user_data = c.user_data & 0xffffffffu;
    if (c.status.ok()) {
      io.res = static_cast<int32_t>(c.user_data >> 32);
    } else {
      if (untaken_ == 0) failures_.clear();  // every earlier one taken: start again at 1
      failures_.push_back(std::move(c.status));
      ++untaken_;
      io.res = -EREMOTEIO;
      io.failure = static_cast<uint32_t>(failures_.size());
    }
    out.push_back(io);
  }
  return Status::Ok();
}

Status HttpQueue::TakeFailure(uint32_t failure) {
  if (failure == 0 || failure > failures_.size() || failures_[failure - 1].ok())
    return IoQueue::TakeFailure(failure);
  Status st = std::move(failures_[failure - 1]);
  failures_[failure - 1] = Status::Ok();
  --untaken_;
  return st;
}

}  // namespace rf
