#include "io/remote/retry_policy.h"

#include <algorithm>
#include <cstdio>

namespace rf {

Status CheckHttpFetchOptions(const HttpFetchOptions& o) {
  if (o.max_in_flight == 0) return Status::InvalidArgument("max_in_flight must be at least 1");
  if (o.max_in_flight > 1024) return Status::InvalidArgument("max_in_flight is at most 1024");
  if (o.deadline.count() <= 0) return Status::InvalidArgument("deadline must be positive");
  if (o.first_backoff.count() <= 0 || o.first_backoff > o.max_backoff)
    return Status::InvalidArgument("first_backoff must be positive and at most max_backoff");
  if (o.connect_timeout.count() <= 0 || o.stall_timeout.count() <= 0)
    return Status::InvalidArgument("connect_timeout and stall_timeout must be positive");
  return Status::Ok();
}

std::chrono::milliseconds RetryDelay(const HttpFetchOptions& o, uint32_t failed, uint64_t random) {
  // Doubling stops at max_backoff; the shift is capped so that it cannot overflow.
  uint32_t doublings = std::min<uint32_t>(failed > 0 ? failed - 1 : 0, 30);
  int64_t base =
      std::min<int64_t>(o.max_backoff.count(), o.first_backoff.count() * (int64_t{1} << doublings));
  int64_t half = base / 2;
  return std::chrono::milliseconds(half + static_cast<int64_t>(random % (base - half + 1)));
}

bool IsTransientHttpStatus(long status) { return status >= 500 || status == 429 || status == 408; }

std::string ByteRangeText(uint64_t offset, uint64_t len) {
  return "bytes " + std::to_string(offset) + "-" + std::to_string(offset + len - 1);
}

Status HttpStatusError(const std::string& url, const std::string& range, long status) {
  std::string head = range + ": HTTP " + std::to_string(status);
  switch (status) {
    case 404:
      return Status::NotFound(url, head + " Not Found: no such object");
    case 401:
      return Status::IOError(url, head + " Unauthorized: credentials are missing or refused");
    case 403:
      return Status::IOError(url, head +
                                      " Forbidden: access denied (check the credentials, or the "
                                      "presigned URL's signature and expiry)");
    case 400:
      return Status::IOError(url, head + " Bad Request: the server refused the request");
    default:
      if (status >= 300 && status < 400)
        return Status::IOError(url, head + ": a redirect, which is not followed");
      return Status::IOError(url, head + ": not retried");
  }
}

Status S3StatusError(const std::string& url, const std::string& range, long status,
                     const std::string& code) {
  std::string head = range + ": HTTP " + std::to_string(status) + " " + code;
  struct Known {
    const char* code;
    bool not_found;
    const char* why;
  };
  static const Known kKnown[] = {
      {"NoSuchKey", true, "no such object"},
      {"NoSuchBucket", true, "no such bucket"},
      {"SignatureDoesNotMatch", false,
       "the store refused the request's signature: the credentials' secret access key (or the "
       "region) is wrong; not retried"},
      {"InvalidAccessKeyId", false,
       "the store refused the credentials: it knows no such access key id; not retried"},
      {"InvalidToken", false, "the store refused the credentials' session token; not retried"},
      {"ExpiredToken", false, "the credentials' session token has expired; not retried"},
      {"TokenRefreshRequired", false, "the credentials' session token has expired; not retried"},
      {"AccessDenied", false,
       "access denied: the credentials were accepted but may not read this (the bucket's or the "
       "key's policy); not retried"},
      {"AuthorizationHeaderMalformed", false,
       "the store refused the signature's scope: the region is wrong; not retried"},
      {"RequestTimeTooSkewed", false,
       "the store refused the signature's time: this machine's clock is off by more than 15 "
       "minutes; not retried"},
      {"PermanentRedirect", false,
       "the bucket is in another region or needs another endpoint (AWS_REGION, "
       "AWS_ENDPOINT_URL_S3); not retried"},
  };
  for (const Known& k : kKnown) {
    if (code != k.code) continue;
    if (k.not_found) return Status::NotFound(url, head + ": " + k.why);
    return Status::IOError(url, head + ": " + k.why);
  }
  return Status::IOError(url, head + ": not retried");
}

Status DeadlineError(const std::string& url, const std::string& range, uint32_t attempts,
                     std::chrono::milliseconds elapsed, const std::string& last_error) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", static_cast<double>(elapsed.count()) / 1000.0);
  return Status::IOError(url, range + ": gave up after " + std::to_string(attempts) +
                                  (attempts == 1 ? " attempt" : " attempts") + " in " + secs +
                                  " s (the deadline): " + last_error);
}

std::optional<FetchClock::time_point> NextAttemptAt(const HttpFetchOptions& o, uint32_t failed,
                                                    FetchClock::time_point now,
                                                    FetchClock::time_point deadline,
                                                    uint64_t random) {
  FetchClock::time_point at = now + RetryDelay(o, failed, random);
  if (at >= deadline) return std::nullopt;
  return at;
}

}  // namespace rf
