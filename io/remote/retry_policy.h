// What the HTTP fetcher does when a range request fails: the options that bound it, which
// failures are retried, how long to wait before the next attempt, and the one-line Status a
// failure ends as. Kept apart from libcurl so that every rule is tested without a server.
//
// The rules:
//   - transient, retried: HTTP 5xx, 429 and 408; a connection refused, reset or cut; a timeout;
//     a body shorter than its range (the next attempt asks only for the bytes still missing);
//     a 200 answer to a range request that is not exactly the requested range;
//   - permanent, named at once: 404 (NotFound), 401 and 403 (credentials or signature refused:
//     S3's SignatureDoesNotMatch and InvalidAccessKeyId are never retried),
//     400 and every other status, a range past the object's end, a body longer than its range or
//     one that starts elsewhere, a TLS certificate not verified, a malformed URL.
//   - attempt k + 1 starts after a delay drawn uniformly from [b/2, b], b = min(max_backoff,
//     first_backoff * 2^(k-1)) ("equal jitter": many clients retrying at once spread out, and
//     none hammers the server); no attempt is started, and none is let run, past the deadline,
//     which counts from the request's Submit.
//
// Thread safety: pure functions and a value type.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace rf {

// The longest deadline an option may set: a day.
inline constexpr uint32_t kMaxFetchDeadlineSeconds = 86400;

struct HttpFetchOptions {
  // How long one request may take, every retry and transfer included.
  std::chrono::milliseconds deadline{120'000};
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{5'000};
  // Requests in flight at once (and connections to one host), each with its own easy handle.
  uint32_t max_in_flight = 16;
  std::chrono::milliseconds connect_timeout{10'000};
  // An attempt that receives nothing for this long is a timeout (retried); whole seconds.
  std::chrono::seconds stall_timeout{30};
  // A PEM file of the certificates to trust for https://; empty: the system's bundle. TLS peers
  // and host names are always verified: there is no option to turn that off.
  std::string ca_bundle;
};

// InvalidArgument naming the option that is out of range (zero in flight, a zero deadline,
// first_backoff over max_backoff).
Status CheckHttpFetchOptions(const HttpFetchOptions& o);

// The delay before attempt `failed + 1`, after `failed` (>= 1) failed attempts; `random` is any
// 64-bit random value (the jitter).
std::chrono::milliseconds RetryDelay(const HttpFetchOptions& o, uint32_t failed, uint64_t random);

// Whether an HTTP status that ends an attempt is worth another.
bool IsTransientHttpStatus(long status);

// "bytes 100-199": the range [offset, offset + len) as HTTP writes it (len >= 1).
std::string ByteRangeText(uint64_t offset, uint64_t len);

// The Status of a permanent HTTP status for `url` (already redacted) and its range text:
// NotFound for 404, a credentials message for 401 and 403, IOError otherwise.
Status HttpStatusError(const std::string& url, const std::string& range, long status);

// The Status of a permanent answer that carries an S3 error code (`code`, from its XML body):
// NotFound for NoSuchKey and NoSuchBucket; for a refused signature or key id (403
// SignatureDoesNotMatch, InvalidAccessKeyId, InvalidToken, ...), IOError saying the credentials
// or the signature were refused; the code itself in every message.
Status S3StatusError(const std::string& url, const std::string& range, long status,
                     const std::string& code);

// The Status after the deadline: the URL, the range, the attempts, the time and the last error.
Status DeadlineError(const std::string& url, const std::string& range, uint32_t attempts,
                     std::chrono::milliseconds elapsed, const std::string& last_error);

using FetchClock = std::chrono::steady_clock;

// After `failed` attempts, the last of them transient: when the next may start, or nothing
// where it would start at or past `deadline` (the request then fails with DeadlineError).
std::optional<FetchClock::time_point> NextAttemptAt(const HttpFetchOptions& o, uint32_t failed,
                                                    FetchClock::time_point now,
                                                    FetchClock::time_point deadline,
                                                    uint64_t random);

}  // namespace rf
