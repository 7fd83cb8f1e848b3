#include "io/remote/range_transfer.h"

#include <strings.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace rf {
namespace {

// The libcurl errors that no retry can mend.
bool IsPermanentCurlError(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_LOGIN_DENIED:
    case CURLE_OUT_OF_MEMORY:
      return true;
    default:
      return false;
  }
}

std::optional<uint64_t> ParseUint(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::unique_ptr<RangeTransfer>> RangeTransfer::Create(const HttpFetchOptions& o) {
  RF_RETURN_IF_ERROR(CurlLibrary().status());
  std::unique_ptr<RangeTransfer> t(new RangeTransfer());
  t->easy_ = CurlEasy(Curl().easy_init());
  if (t->easy_.get() == nullptr) return Status::IOError("libcurl", "curl_easy_init failed");
  RF_RETURN_IF_ERROR(t->Configure(o));
  return t;
}

Status RangeTransfer::Configure(const HttpFetchOptions& o) {
  CURL* h = easy_.get();
  bool ok = true;
  auto set = [&](CURLoption opt, auto value) {
    ok = ok && Curl().easy_setopt(h, opt, value) == CURLE_OK;
  };
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  if (!o.ca_bundle.empty()) set(CURLOPT_CAINFO, o.ca_bundle.c_str());  // curl copies it
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
  set(CURLOPT_LOW_SPEED_LIMIT, 1L);
  set(CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.stall_timeout.count()));
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_ERRORBUFFER, errbuf_);
  set(CURLOPT_HEADERFUNCTION, &RangeTransfer::OnHeader);
  set(CURLOPT_HEADERDATA, this);
  set(CURLOPT_WRITEFUNCTION, &RangeTransfer::OnBody);
  set(CURLOPT_WRITEDATA, this);
  set(CURLOPT_PRIVATE, this);
  if (!ok) return Status::IOError("libcurl", "curl_easy_setopt refused the fetcher's options");
  return Status::Ok();
}

Status RangeTransfer::Begin(const std::string& url, uint8_t* dst, uint64_t start, uint64_t end,
                            std::chrono::milliseconds time_left) {
  dst_ = dst;
  start_ = start;
  end_ = end;
  probe_ = false;
  return BeginAttempt(url, time_left);
}

Status RangeTransfer::BeginSizeProbe(const std::string& url, std::chrono::milliseconds time_left) {
  dst_ = &probe_byte_;
  start_ = 0;
  end_ = 1;
  probe_ = true;
  return BeginAttempt(url, time_left);
}

Status RangeTransfer::BeginAttempt(const std::string& url, std::chrono::milliseconds time_left) {
  written_ = 0;
  checked_ = false;
  status_ = 0;
  abort_ = Abort::kNone;
  cr_first_ = cr_last_ = cr_total_ = object_size_ = std::nullopt;
  errbuf_[0] = '\0';
  std::snprintf(range_, sizeof range_, "%llu-%llu", static_cast<unsigned long long>(start_),
                static_cast<unsigned long long>(end_ - 1));
  CURL* h = easy_.get();
  if (Curl().easy_setopt(h, CURLOPT_URL, url.c_str()) != CURLE_OK ||
      Curl().easy_setopt(h, CURLOPT_RANGE, range_) != CURLE_OK ||
      Curl().easy_setopt(h, CURLOPT_TIMEOUT_MS,
                         static_cast<long>(std::max<int64_t>(1, time_left.count()))) != CURLE_OK)
    return Status::IOError("libcurl", "curl_easy_setopt refused a request's URL or range");
  return Status::Ok();
}

size_t RangeTransfer::OnHeader(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<RangeTransfer*>(self);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new answer (after a 100 Continue, say): forget the last
    t->cr_first_ = t->cr_last_ = t->cr_total_ = std::nullopt;
    return size * n;
  }
  constexpr std::string_view kName = "content-range:";
  if (line.size() < kName.size() || strncasecmp(line.data(), kName.data(), kName.size()) != 0)
    return size * n;
  std::string_view v = Trim(line.substr(kName.size()));
  if (!v.starts_with("bytes ")) return size * n;
  v.remove_prefix(6);
  size_t slash = v.find('/');
  if (slash == std::string_view::npos) return size * n;
  t->cr_total_ = ParseUint(v.substr(slash + 1));  // "*" (unknown) parses to nothing
  std::string_view span = v.substr(0, slash);
  if (size_t dash = span.find('-'); dash != std::string_view::npos) {
    t->cr_first_ = ParseUint(span.substr(0, dash));
    t->cr_last_ = ParseUint(span.substr(dash + 1));
  }
  return size * n;
}

void RangeTransfer::CheckAnswer() {
  checked_ = true;
  Curl().easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status_);
  curl_off_t length = -1;
  Curl().easy_getinfo(easy_.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  if (probe_) {
    if (status_ == 206 || status_ == 416) object_size_ = cr_total_;
    if (status_ == 200 && length >= 0) object_size_ = static_cast<uint64_t>(length);
    // 416 with "bytes */0" is how a server answers the range 0-0 of an empty object.
    bool sized = status_ == 206 || status_ == 200 || (status_ == 416 && cr_total_);
    if (!sized) abort_ = Abort::kStatus;
    return;
  }
  if (status_ == 206) {
    if (cr_total_ && *cr_total_ < end_) {
      abort_ = Abort::kPastEnd;
    } else if (!cr_first_ || *cr_first_ != start_) {
      abort_ = Abort::kOtherRange;
    }
  } else if (status_ == 200) {
    if (start_ != 0 || length != static_cast<curl_off_t>(end_)) abort_ = Abort::kIgnoredRange;
  } else {
    abort_ = Abort::kStatus;
  }
}

size_t RangeTransfer::OnBody(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<RangeTransfer*>(self);
  if (!t->checked_) t->CheckAnswer();
  if (t->probe_) return 0;                  // the size is in the headers: no body byte is wanted
  if (t->abort_ != Abort::kNone) return 0;  // an error's body is not read
  size_t bytes = size * n;
  uint64_t room = (t->end_ - t->start_) - t->written_;
  if (bytes > room) {
    t->abort_ = Abort::kTooLong;
    return 0;
  }
  std::memcpy(t->dst_ + t->written_, data, bytes);
  t->written_ += bytes;
  return bytes;
}

long RangeTransfer::connects() const {
  long n = 0;
  Curl().easy_getinfo(easy_.get(), CURLINFO_NUM_CONNECTS, &n);
  return n;
}

AttemptOutcome RangeTransfer::Finish(CURLcode code, const std::string& shown_url, uint64_t offset,
                                     uint64_t len) {
  using Kind = AttemptOutcome::Kind;
  // The texts are made only for a failure: a completed range allocates nothing here.
  auto range = [&] { return len == 0 ? std::string("size") : ByteRangeText(offset, len); };
  auto status_text = [&] { return "HTTP " + std::to_string(status_); };
  if (!checked_ && (code == CURLE_OK || code == CURLE_WRITE_ERROR)) CheckAnswer();
  auto permanent = [&](std::string msg) {
    return AttemptOutcome{Kind::kPermanent, "", Status::IOError(shown_url, range() + ": " + msg)};
  };
  auto transient = [](std::string what) {
    return AttemptOutcome{Kind::kTransient, std::move(what), {}};
  };
  switch (abort_) {
    case Abort::kNone:
      break;
    case Abort::kStatus:
      if (IsTransientHttpStatus(status_)) return transient(status_text());
      return AttemptOutcome{Kind::kPermanent, "", HttpStatusError(shown_url, range(), status_)};
    case Abort::kIgnoredRange:
      return transient(status_text() + " for a range request, not the range asked for");
    case Abort::kOtherRange:
      return permanent(
          status_text() + " with another range than the one asked for (" +
          (cr_first_ ? "from byte " + std::to_string(*cr_first_) : "no Content-Range") + ")");
    case Abort::kPastEnd:
      return permanent("past the end of the object, which is " + std::to_string(*cr_total_) +
                       " bytes");
    case Abort::kTooLong:
      return permanent("the server sent more than the " + std::to_string(end_ - start_) +
                       " bytes asked for; refused");
  }
  if (probe_ && checked_) {  // the probe stops the transfer itself once the headers are in
    if (!object_size_) return permanent(status_text() + " without the object's size");
    return AttemptOutcome{};
  }
  if (code != CURLE_OK) {
    std::string what = "curl error " + std::to_string(code) + ": " +
                       (errbuf_[0] != '\0' ? errbuf_ : Curl().easy_strerror(code));
    if (IsPermanentCurlError(code)) return permanent(what);
    return transient(what);
  }
  if (written_ < end_ - start_)
    return transient("the body ended after " + std::to_string(written_) + " of " +
                     std::to_string(end_ - start_) + " bytes");
  return AttemptOutcome{};
}

}  // namespace rf
