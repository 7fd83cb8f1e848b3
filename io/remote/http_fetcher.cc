#include "io/remote/http_fetcher.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "io/remote/curl_handles.h"
#include "io/remote/range_transfer.h"
#include "io/remote/url.h"

namespace rf {

struct HttpFetcher::Slot {
  enum class State { kFree, kPrepared, kActive, kBackoff };
  State state = State::kFree;
  Kind kind = Kind::kRange;  // not a range: RunOneOffs's, whose outcome is kept here:
  bool oneoff_done = false;
  Status oneoff_status;
  uint64_t oneoff_size = 0;  // the object's size, or the whole answer's length
  uint64_t oneoff_got = 0;   // bytes in the buffer: a probe's head, a suffix's
  uint64_t oneoff_at = 0;    // a suffix's first byte
  std::unique_ptr<RangeTransfer> transfer;
  HttpRequest req;
  uint64_t received = 0;  // bytes of the range already in req.buf (a retry resumes after them)
  uint32_t attempts = 0;
  FetchClock::time_point started, deadline, retry_at;
  std::string last_error;  // the last transient failure, for the deadline's message
};

HttpFetcher::HttpFetcher(const HttpFetchOptions& options)
    : options_(options),
      slots_(options.max_in_flight),
      rng_(static_cast<uint64_t>(FetchClock::now().time_since_epoch().count()) ^
           reinterpret_cast<uintptr_t>(this)) {
  done_.reserve(options.max_in_flight);
}

HttpFetcher::~HttpFetcher() {
  for (Slot& s : slots_)
    if (s.state == Slot::State::kActive)
      Curl().multi_remove_handle(multi_->get(), s.transfer->easy());
}

Result<std::unique_ptr<HttpFetcher>> HttpFetcher::Create(const HttpFetchOptions& options) {
  RF_RETURN_IF_ERROR(CheckHttpFetchOptions(options));
  RF_RETURN_IF_ERROR(CurlLibrary().status());
  std::unique_ptr<HttpFetcher> f(new HttpFetcher(options));
  f->multi_ = std::make_unique<CurlMulti>(Curl().multi_init());
  if (f->multi_->get() == nullptr) return Status::IOError("libcurl", "curl_multi_init failed");
  // One connection a transfer (HTTP/1.1, no pipelining), kept in the cache for the next ones.
  long n = static_cast<long>(options.max_in_flight);
  if (Curl().multi_setopt(f->multi_->get(), CURLMOPT_MAX_HOST_CONNECTIONS, n) != CURLM_OK ||
      Curl().multi_setopt(f->multi_->get(), CURLMOPT_MAXCONNECTS, n) != CURLM_OK ||
      Curl().multi_setopt(f->multi_->get(), CURLMOPT_PIPELINING, CURLPIPE_NOTHING) != CURLM_OK)
    return Status::IOError("libcurl", "curl_multi_setopt refused the fetcher's options");
  for (Slot& s : f->slots_) {
    RF_ASSIGN_OR_RETURN(s.transfer, RangeTransfer::Create(options));
    Curl().easy_setopt(s.transfer->easy(), CURLOPT_PRIVATE, &s);
  }
  return f;
}

Result<uint32_t> HttpFetcher::AddUrl(std::string_view url) {
  RemoteObject o;
  o.path = o.url = std::string(url);
  o.shown = RedactUrl(url);
  return AddObject(o);
}

Result<uint32_t> HttpFetcher::AddObject(const RemoteObject& object) {
  RF_RETURN_IF_ERROR(CheckFetchableUrl(object.url));
  RF_ASSIGN_OR_RETURN(TransferTarget t, MakeTransferTarget(object));
  targets_.push_back(std::move(t));
  return static_cast<uint32_t>(targets_.size() - 1);
}

uint32_t HttpFetcher::capacity() const { return options_.max_in_flight; }

Status HttpFetcher::Prepare(const HttpRequest& r) {
  if (r.url >= targets_.size())
    return Status::InvalidArgument("HttpFetcher: URL index " + std::to_string(r.url) +
                                   " was not added");
  if (r.len > 0 && r.buf == nullptr)
    return Status::InvalidArgument("HttpFetcher: a request without a buffer");
  if (r.len > std::numeric_limits<uint64_t>::max() - r.offset)
    return Status::InvalidArgument("HttpFetcher: a range past 2^64");
  auto free = std::find_if(slots_.begin(), slots_.end(),
                           [](const Slot& s) { return s.state == Slot::State::kFree; });
  if (outstanding_ >= capacity() || free == slots_.end())
    return Status::InvalidArgument("HttpFetcher: more than " + std::to_string(capacity()) +
                                   " requests not yet returned by Wait");
  free->state = Slot::State::kPrepared;
  free->kind = Kind::kRange;
  free->req = r;
  free->received = 0;
  free->attempts = 0;
  ++outstanding_;
  ++prepared_;
  return Status::Ok();
}

Status HttpFetcher::Submit() {
  FetchClock::time_point now = FetchClock::now();
  for (Slot& s : slots_) {
    if (s.state != Slot::State::kPrepared) continue;
    s.started = now;
    s.deadline = now + options_.deadline;
    if (s.req.len == 0 && s.kind == Kind::kRange) {
      Complete(s, Status::Ok());
    } else {
      RF_RETURN_IF_ERROR(StartAttempt(s));
    }
  }
  prepared_ = 0;
  int still = 0;  // start connecting now, before the first Wait
  if (CURLMcode mc = Curl().multi_perform(multi_->get(), &still); mc != CURLM_OK)
    return Status::IOError("libcurl",
                           std::string("curl_multi_perform: ") + Curl().multi_strerror(mc));
  return Status::Ok();
}

Status HttpFetcher::StartAttempt(Slot& s) {
  FetchClock::time_point now = FetchClock::now();
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(s.deadline - now);
  ++s.attempts;
  ++stats_.attempts;
  const TransferTarget& target = targets_[s.req.url];
  auto* buf = static_cast<uint8_t*>(s.req.buf);
  Status st;
  switch (s.kind) {
    case Kind::kProbe:  // with a buffer: the object's first req.len bytes too
      st = s.transfer->BeginSizeProbe(target, left, buf, buf != nullptr ? s.req.len : 0);
      break;
    case Kind::kWhole:
      st = s.transfer->BeginWhole(target, buf, s.req.len, left);
      break;
    case Kind::kSuffix:
      st = s.transfer->BeginSuffix(target, buf, s.req.len, left);
      break;
    case Kind::kRange:
      st = s.transfer->Begin(target, buf + s.received, s.req.offset + s.received,
                             s.req.offset + s.req.len, left);
      break;
  }
  if (!st.ok()) {
    Complete(s, std::move(st));
    return Status::Ok();
  }
  if (CURLMcode mc = Curl().multi_add_handle(multi_->get(), s.transfer->easy()); mc != CURLM_OK)
    return Status::IOError("libcurl",
                           std::string("curl_multi_add_handle: ") + Curl().multi_strerror(mc));
  s.state = Slot::State::kActive;
  return Status::Ok();
}

void HttpFetcher::Finished(Slot& s, int code) {
  const std::string& shown = targets_[s.req.url].shown;
  AttemptOutcome out = s.transfer->Finish(static_cast<CURLcode>(code), shown, s.req.offset,
                                          s.kind == Kind::kProbe ? 0 : s.req.len);
  // A whole answer's retry starts again from its first byte; a range's resumes.
  s.received = s.kind == Kind::kWhole ? s.transfer->written() : s.received + s.transfer->written();
  stats_.bytes += s.transfer->written();
  stats_.connections += static_cast<uint64_t>(std::max(0L, s.transfer->connects()));
  switch (out.kind) {
    case AttemptOutcome::Kind::kDone:
      if (s.kind == Kind::kProbe || s.kind == Kind::kSuffix) {
        s.oneoff_size = s.transfer->object_size().value_or(0);
        s.oneoff_got = s.req.buf != nullptr ? s.transfer->written() : 0;
        s.oneoff_at = s.transfer->suffix_at();
      }
      if (s.kind == Kind::kWhole) s.oneoff_size = s.received;
      Complete(s, Status::Ok());
      return;
    case AttemptOutcome::Kind::kPermanent:
      Complete(s, std::move(out.status));
      return;
    case AttemptOutcome::Kind::kTransient:
      break;
  }
  FetchClock::time_point now = FetchClock::now();
  // An attempt that the deadline itself cut short (its timeout is the time left) says only that;
  // the failure worth naming is the one before it, where there was one.
  const bool cut_by_deadline = static_cast<CURLcode>(code) == CURLE_OPERATION_TIMEDOUT &&
                               now + std::chrono::milliseconds(5) >= s.deadline;
  if (!cut_by_deadline || s.last_error.empty()) s.last_error = std::move(out.error);
  auto at = NextAttemptAt(options_, s.attempts, now, s.deadline, NextRandom());
  if (!at) {
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - s.started);
    std::string what = s.kind == Kind::kProbe   ? std::string("size")
                       : s.kind == Kind::kWhole ? std::string("GET")
                       : s.kind == Kind::kSuffix
                           ? "the last " + std::to_string(s.req.len) + " bytes"
                           : ByteRangeText(s.req.offset, s.req.len);
    Complete(s, DeadlineError(shown, what, s.attempts, elapsed, s.last_error));
    return;
  }
  s.state = Slot::State::kBackoff;
  s.retry_at = *at;
  ++stats_.retries;
}

void HttpFetcher::Complete(Slot& s, Status status) {
  s.state = Slot::State::kFree;
  if (s.kind != Kind::kRange) {
    s.oneoff_status = std::move(status);
    s.oneoff_done = true;
    return;
  }
  done_.push_back(HttpCompletion{s.req.user_data, std::move(status)});
}

Status HttpFetcher::Drive(const std::function<bool()>& enough) {
  CURLM* m = multi_->get();
  // One pass at least: a Wait for 0 completions still moves the transfers on (without blocking).
  for (bool first = true; first || !enough(); first = false) {
    FetchClock::time_point now = FetchClock::now();
    for (Slot& s : slots_)
      if (s.state == Slot::State::kBackoff && s.retry_at <= now)
        RF_RETURN_IF_ERROR(StartAttempt(s));
    int still = 0;
    if (CURLMcode mc = Curl().multi_perform(m, &still); mc != CURLM_OK)
      return Status::IOError("libcurl",
                             std::string("curl_multi_perform: ") + Curl().multi_strerror(mc));
    int left = 0;
    while (CURLMsg* msg = Curl().multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      CURLcode code = msg->data.result;  // msg is gone once the handle is removed
      Slot* s = nullptr;
      Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &s);
      Curl().multi_remove_handle(m, easy);
      Finished(*s, code);
    }
    if (enough()) break;
    // Sleep until a socket is ready, libcurl's own timer fires, or the next retry is due.
    auto wake = FetchClock::now() + std::chrono::seconds(1);
    bool waiting = false;
    for (const Slot& s : slots_) {
      if (s.state == Slot::State::kBackoff) wake = std::min(wake, s.retry_at);
      waiting = waiting || s.state == Slot::State::kBackoff || s.state == Slot::State::kActive;
    }
    if (!waiting)
      return Status::InvalidArgument("HttpFetcher: waiting for requests that were not submitted");
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - FetchClock::now());
    int timeout = static_cast<int>(std::clamp<int64_t>(ms.count(), 0, 1000));
    if (CURLMcode mc = Curl().multi_poll(m, nullptr, 0, timeout, nullptr); mc != CURLM_OK)
      return Status::IOError("libcurl",
                             std::string("curl_multi_poll: ") + Curl().multi_strerror(mc));
  }
  return Status::Ok();
}

Status HttpFetcher::Wait(std::vector<HttpCompletion>& out, uint32_t min) {
  if (min > outstanding_ - prepared_)
    return Status::InvalidArgument("HttpFetcher: Wait for " + std::to_string(min) +
                                   " completions with " + std::to_string(outstanding_ - prepared_) +
                                   " requests submitted and not yet returned");
  RF_RETURN_IF_ERROR(Drive([&] { return done_.size() >= min; }));
  for (HttpCompletion& c : done_) out.push_back(std::move(c));
  outstanding_ -= static_cast<uint32_t>(done_.size());
  done_.clear();
  return Status::Ok();
}

Result<uint64_t> HttpFetcher::Size(std::string_view url) {
  RemoteObject o;
  o.path = o.url = std::string(url);
  o.shown = RedactUrl(url);
  return Size(o);
}

Result<uint64_t> HttpFetcher::Size(const RemoteObject& object) {
  return RunOneOff(object, Kind::kProbe, nullptr, 0);
}

Result<uint64_t> HttpFetcher::SizeAndHead(const RemoteObject& object, void* buf, uint64_t len,
                                          uint64_t* got) {
  if (buf == nullptr || len == 0 || got == nullptr)
    return Status::InvalidArgument("HttpFetcher: SizeAndHead without a buffer");
  RF_ASSIGN_OR_RETURN(const uint64_t size, RunOneOff(object, Kind::kProbe, buf, len));
  *got = slots_[0].oneoff_got;
  return size;
}

Result<HttpFetcher::Ends> HttpFetcher::SizeAndEnds(const RemoteObject& object, void* head,
                                                   uint64_t head_len, void* tail,
                                                   uint64_t tail_len) {
  if (head == nullptr || head_len == 0 || tail == nullptr || tail_len == 0)
    return Status::InvalidArgument("HttpFetcher: SizeAndEnds without its buffers");
  Ends e;
  const bool pair = slots_.size() >= 2;  // else one request after the other, on one connection
  if (pair) {
    const OneOff both[2] = {{Kind::kProbe, head, head_len}, {Kind::kSuffix, tail, tail_len}};
    RF_RETURN_IF_ERROR(RunOneOffs(object, both, 2));
    if (!slots_[0].oneoff_status.ok()) return slots_[0].oneoff_status;
    e.size = slots_[0].oneoff_size;
    e.head_bytes = slots_[0].oneoff_got;
    e.tail_status = slots_[1].oneoff_status;
  } else {
    RF_ASSIGN_OR_RETURN(e.size, SizeAndHead(object, head, head_len, &e.head_bytes));
    e.tail_status = RunOneOff(object, Kind::kSuffix, tail, tail_len).status();
  }
  const Slot& t = slots_[pair ? 1 : 0];
  // The tail is taken where it is the same object's end: its size the head's, its bytes the last.
  if (e.tail_status.ok() && (t.oneoff_size != e.size || t.oneoff_at + t.oneoff_got != e.size)) {
    e.tail_status = Status::IOError(object.shown, "the last bytes' answer is of another size (" +
                                                      std::to_string(t.oneoff_size) + " bytes)");
  }
  if (e.tail_status.ok()) {
    e.tail_at = t.oneoff_at;
    e.tail_bytes = t.oneoff_got;
  }
  return e;
}

Result<uint64_t> HttpFetcher::FetchWhole(const RemoteObject& object, void* buf, uint64_t capacity) {
  if (buf == nullptr || capacity == 0)
    return Status::InvalidArgument("HttpFetcher: FetchWhole without a buffer");
  return RunOneOff(object, Kind::kWhole, buf, capacity);
}

Result<uint64_t> HttpFetcher::RunOneOff(const RemoteObject& object, Kind kind, void* buf,
                                        uint64_t capacity) {
  const OneOff one{kind, buf, capacity};
  RF_RETURN_IF_ERROR(RunOneOffs(object, &one, 1));
  if (!slots_[0].oneoff_status.ok()) return slots_[0].oneoff_status;
  return slots_[0].oneoff_size;
}

Status HttpFetcher::RunOneOffs(const RemoteObject& object, const OneOff* requests, uint32_t n) {
  if (outstanding_ > 0)
    return Status::InvalidArgument("HttpFetcher: a blocking request with requests in flight");
  if (n > slots_.size()) return Status::InvalidArgument("HttpFetcher: too many one-off requests");
  RF_ASSIGN_OR_RETURN(uint32_t index, AddObject(object));
  for (uint32_t i = 0; i < n; ++i) {  // every slot is free: nothing is outstanding
    Slot& s = slots_[i];
    s.state = Slot::State::kPrepared;
    s.kind = requests[i].kind;
    s.req = HttpRequest{index, requests[i].buf, requests[i].capacity, 0, 0};
    s.received = 0;
    s.attempts = 0;
    s.oneoff_done = false;
    s.oneoff_status = Status::Ok();
    s.oneoff_size = s.oneoff_got = s.oneoff_at = 0;
  }
  Status st = Submit();
  if (st.ok()) {
    st = Drive([&] {
      for (uint32_t i = 0; i < n; ++i)
        if (!slots_[i].oneoff_done) return false;
      return true;
    });
  }
  targets_.pop_back();  // the one-off's object is not kept
  for (uint32_t i = 0; i < n; ++i) slots_[i].kind = Kind::kRange;
  return st;
}

uint64_t HttpFetcher::NextRandom() {  // splitmix64: the jitter needs spread, not secrecy
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace rf
