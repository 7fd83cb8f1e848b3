#include "io/remote/range_transfer.h"

#include <strings.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "io/remote/s3_xml.h"
#include "io/remote/url.h"

namespace rf {
namespace {

constexpr long kReceiveBufferBytes = 120 << 10;  // per handle in flight

// SHA-256 of the empty body: every request here is a GET without one.
constexpr const char* kEmptyBodySha256 =
    "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

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

Result<TransferTarget> MakeTransferTarget(const RemoteObject& object) {
  TransferTarget t;
  t.url = object.url;
  t.shown = object.shown.empty() ? RedactUrl(object.url) : object.shown;
  t.signing = object.signing;
  if (!t.signing.signed_requests()) return t;
  curl_slist* list = Curl().slist_append(nullptr, kEmptyBodySha256);
  t.headers = CurlHeaders(list);
  if (list != nullptr && !t.signing.session_token.empty()) {
    std::string token = "x-amz-security-token: " + t.signing.session_token;
    list = Curl().slist_append(list, token.c_str());  // appends in place: the head is kept
  }
  if (list == nullptr) return Status::IOError(t.shown, "curl_slist_append failed");
  return t;
}

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
  // Bodies are megabytes: libcurl's default 16 KiB receive buffer costs a recv and a callback
  // every 16 KiB. libcurl (7.88) allocates this buffer for every transfer, so it stays under
  // glibc's 128 KiB mmap threshold: a larger one is fresh pages each time, whose first touch cost
  // `ringfeed read` through the link proxy 18% of its CPU in clear_page. 2-core machine,
  // 2026-12-05, server and client on a core each, against curl's parallel ranges of the same
  // bytes at 0/20/50 ms: 512 KiB 0.62-0.84, 120 KiB 0.82-0.96 (docs/remote.md).
  set(CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
  set(CURLOPT_ERRORBUFFER, errbuf_);
  set(CURLOPT_HEADERFUNCTION, &RangeTransfer::OnHeader);
  set(CURLOPT_HEADERDATA, this);
  set(CURLOPT_WRITEFUNCTION, &RangeTransfer::OnBody);
  set(CURLOPT_WRITEDATA, this);
  set(CURLOPT_PRIVATE, this);
  if (!ok) return Status::IOError("libcurl", "curl_easy_setopt refused the fetcher's options");
  return Status::Ok();
}

Status RangeTransfer::Begin(const TransferTarget& target, uint8_t* dst, uint64_t start,
                            uint64_t end, std::chrono::milliseconds time_left) {
  dst_ = dst;
  start_ = start;
  end_ = end;
  mode_ = Mode::kRange;
  return BeginAttempt(target, time_left);
}

Status RangeTransfer::BeginSizeProbe(const TransferTarget& target,
                                     std::chrono::milliseconds time_left, uint8_t* head,
                                     uint64_t head_len) {
  probe_head_ = head != nullptr && head_len > 0;
  dst_ = probe_head_ ? head : &probe_byte_;
  start_ = 0;
  end_ = probe_head_ ? head_len : 1;
  mode_ = Mode::kProbe;
  return BeginAttempt(target, time_left);
}

Status RangeTransfer::BeginSuffix(const TransferTarget& target, uint8_t* dst, uint64_t len,
                                  std::chrono::milliseconds time_left) {
  return BeginInto(Mode::kSuffix, target, dst, len, time_left);
}

Status RangeTransfer::BeginWhole(const TransferTarget& target, uint8_t* dst, uint64_t capacity,
                                 std::chrono::milliseconds time_left) {
  return BeginInto(Mode::kWhole, target, dst, capacity, time_left);
}

Status RangeTransfer::BeginInto(Mode mode, const TransferTarget& target, uint8_t* dst,
                                uint64_t capacity, std::chrono::milliseconds time_left) {
  dst_ = dst;
  start_ = 0;
  end_ = capacity;
  mode_ = mode;
  return BeginAttempt(target, time_left);
}

Status RangeTransfer::SetSigning(const TransferTarget& target) {
  CURL* h = easy_.get();
  const RequestSigning& s = target.signing;
  const bool sign = s.signed_requests();
  // Setting CURLOPT_AWS_SIGV4 turns CURLAUTH_AWS_SIGV4 on; clearing it does not turn it off, so
  // an unsigned target sets Basic back (what a URL's own userinfo, if any, is sent with).
  bool ok =
      Curl().easy_setopt(h, CURLOPT_AWS_SIGV4, sign ? s.aws_sigv4.c_str() : nullptr) == CURLE_OK &&
      Curl().easy_setopt(h, CURLOPT_HTTPAUTH, sign ? CURLAUTH_AWS_SIGV4 : CURLAUTH_BASIC) ==
          CURLE_OK &&
      Curl().easy_setopt(h, CURLOPT_USERNAME, sign ? s.access_key_id.c_str() : nullptr) ==
          CURLE_OK &&
      Curl().easy_setopt(h, CURLOPT_PASSWORD, sign ? s.secret_access_key.c_str() : nullptr) ==
          CURLE_OK &&
      Curl().easy_setopt(h, CURLOPT_HTTPHEADER, target.headers.get()) == CURLE_OK &&
      Curl().easy_setopt(h, CURLOPT_PATH_AS_IS, sign ? 1L : 0L) == CURLE_OK;
  if (!ok) return Status::IOError("libcurl", "curl_easy_setopt refused a request's signing");
  return Status::Ok();
}

Status RangeTransfer::BeginAttempt(const TransferTarget& target,
                                   std::chrono::milliseconds time_left) {
  RF_RETURN_IF_ERROR(SetSigning(target));
  error_len_ = 0;
  written_ = 0;
  checked_ = false;
  status_ = 0;
  abort_ = Abort::kNone;
  cr_first_ = cr_last_ = cr_total_ = object_size_ = std::nullopt;
  errbuf_[0] = '\0';
  suffix_at_ = suffix_want_ = 0;
  if (mode_ == Mode::kSuffix) {
    std::snprintf(range_, sizeof range_, "-%llu", static_cast<unsigned long long>(end_));
  } else {
    std::snprintf(range_, sizeof range_, "%llu-%llu", static_cast<unsigned long long>(start_),
                  static_cast<unsigned long long>(end_ - 1));
  }
  CURL* h = easy_.get();
  if (Curl().easy_setopt(h, CURLOPT_URL, target.url.c_str()) != CURLE_OK ||
      Curl().easy_setopt(h, CURLOPT_RANGE, mode_ == Mode::kWhole ? nullptr : range_) != CURLE_OK ||
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
  if (mode_ == Mode::kWhole) {
    if (status_ != 200) abort_ = Abort::kStatus;
    return;
  }
  if (mode_ == Mode::kProbe) {
    if (status_ == 206 || status_ == 416) object_size_ = cr_total_;
    if (status_ == 200 && length >= 0) object_size_ = static_cast<uint64_t>(length);
    // 416 with "bytes */0" is how a server answers the range 0-0 of an empty object.
    bool sized = status_ == 206 || status_ == 200 || (status_ == 416 && cr_total_);
    if (!sized) {
      abort_ = Abort::kStatus;
    } else if (probe_head_ && status_ == 206 && (!cr_first_ || *cr_first_ != 0)) {
      abort_ = Abort::kOtherRange;  // the head's bytes must be the object's first
    }
    return;
  }
  if (mode_ == Mode::kSuffix) {
    if (status_ == 206) {
      // The object's last bytes, no more than asked for: "bytes FIRST-LAST/TOTAL", LAST the end.
      if (!cr_first_ || !cr_last_ || !cr_total_ || *cr_last_ + 1 != *cr_total_ ||
          *cr_first_ > *cr_last_ || *cr_last_ - *cr_first_ + 1 > end_) {
        abort_ = Abort::kOtherRange;
        return;
      }
      object_size_ = cr_total_;
      suffix_at_ = *cr_first_;
      suffix_want_ = *cr_last_ - *cr_first_ + 1;
    } else if (status_ == 200 && length >= 0 && static_cast<uint64_t>(length) <= end_) {
      object_size_ = static_cast<uint64_t>(length);  // the range ignored: the whole object fits
      suffix_want_ = object_size_.value();
    } else if (status_ == 200) {
      abort_ = Abort::kTooLong;
    } else if (status_ == 416 && cr_total_ && *cr_total_ == 0) {
      object_size_ = 0;  // "bytes */0": an empty object has no last bytes
    } else {
      abort_ = Abort::kStatus;
    }
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
  size_t bytes = size * n;
  if (t->abort_ == Abort::kStatus) {  // an error's body: its first KiBs, for the S3 error code
    size_t room = sizeof t->error_body_ - t->error_len_;
    std::memcpy(t->error_body_ + t->error_len_, data, std::min(room, bytes));
    t->error_len_ += std::min(room, bytes);
    return bytes <= room ? bytes : 0;
  }
  if (t->abort_ != Abort::kNone) return 0;  // a wrong range's body is not read
  if (t->mode_ == Mode::kProbe) {
    if (!t->probe_head_) return 0;  // the size is in the headers: no body byte is wanted
    // The head: as much as fits; what a server ignoring the range sends past it is not read.
    const size_t take = static_cast<size_t>(std::min<uint64_t>(bytes, t->end_ - t->written_));
    std::memcpy(t->dst_ + t->written_, data, take);
    t->written_ += take;
    return take == bytes ? bytes : 0;
  }
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
  auto range = [&] {
    if (mode_ == Mode::kWhole) return std::string("GET");
    if (mode_ == Mode::kSuffix) return "the last " + std::to_string(end_) + " bytes";
    return len == 0 ? std::string("size") : ByteRangeText(offset, len);
  };
  auto status_text = [&] { return "HTTP " + std::to_string(status_); };
  if (!checked_ && (code == CURLE_OK || code == CURLE_WRITE_ERROR)) CheckAnswer();
  auto permanent = [&](std::string msg) {
    return AttemptOutcome{Kind::kPermanent, "", Status::IOError(shown_url, range() + ": " + msg)};
  };
  auto transient = [](std::string what) {
    return AttemptOutcome{Kind::kTransient, std::move(what), {}};
  };
  auto cut_short = [&](uint64_t want) {
    return transient("the body ended after " + std::to_string(written_) + " of " +
                     std::to_string(want) + " bytes");
  };
  switch (abort_) {
    case Abort::kNone:
      break;
    case Abort::kStatus: {
      std::string s3_code = S3ErrorCode(std::string_view(error_body_, error_len_));
      if (IsTransientHttpStatus(status_))
        return transient(s3_code.empty() ? status_text() : status_text() + " " + s3_code);
      if (!s3_code.empty())
        return AttemptOutcome{Kind::kPermanent, "",
                              S3StatusError(shown_url, range(), status_, s3_code)};
      return AttemptOutcome{Kind::kPermanent, "", HttpStatusError(shown_url, range(), status_)};
    }
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
      if (mode_ == Mode::kWhole || mode_ == Mode::kSuffix)
        return permanent("the answer is longer than " + std::to_string(end_) + " bytes; refused");
      return permanent("the server sent more than the " + std::to_string(end_ - start_) +
                       " bytes asked for; refused");
  }
  if (mode_ == Mode::kProbe && checked_) {  // the probe stops the transfer itself
    if (!object_size_) return permanent(status_text() + " without the object's size");
    // Without a head, the headers are all it wants; with one, the object's first bytes too.
    const uint64_t want = probe_head_ ? std::min(end_, *object_size_) : 0;
    if (written_ >= want) return AttemptOutcome{};
    if (code == CURLE_OK || code == CURLE_WRITE_ERROR) return cut_short(want);
  }
  if (code != CURLE_OK) {
    std::string what = "curl error " + std::to_string(code) + ": " +
                       (errbuf_[0] != '\0' ? errbuf_ : Curl().easy_strerror(code));
    if (IsPermanentCurlError(code)) return permanent(what);
    return transient(what);
  }
  if (mode_ == Mode::kWhole) return AttemptOutcome{};  // libcurl checks Content-Length itself
  // A suffix wants the bytes its answer's Content-Range named; a range, all of itself.
  const uint64_t want = mode_ == Mode::kSuffix ? suffix_want_ : end_ - start_;
  if (written_ < want) return cut_short(want);
  return AttemptOutcome{};
}

}  // namespace rf
