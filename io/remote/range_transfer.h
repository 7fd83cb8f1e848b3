// RangeTransfer: one easy handle and one attempt at a byte range of a URL, written straight into
// the caller's buffer (or at a size probe, or at a whole small answer: a listing page). HttpFetcher
// keeps one per request in flight and reuses it for every attempt and every later request (libcurl
// keeps the connections in the multi handle's cache).
//
// What an attempt accepts, checked before any byte of the body is written:
//   - 206 whose Content-Range starts where the attempt's range starts; a range past the object's
//     end (Content-Range's total) is refused;
//   - 200 only for a range that starts at 0 and whose Content-Length is the range's length
//     (the whole object was asked for); any other 200 is a server ignoring the range (transient).
//   - a whole answer (BeginWhole, no Range header): 200, with at most its buffer's bytes.
// Signing: a target with RequestSigning is signed by libcurl (CURLOPT_AWS_SIGV4, the key pair as
// CURLOPT_USERNAME / CURLOPT_PASSWORD); its header list (made once, at MakeTransferTarget)
// carries x-amz-content-sha256 (the empty body's hash: libcurl 7.88 sends none, and S3 requires
// it) and x-amz-security-token where there is a session token; libcurl signs every header of
// that list. The path is sent as it is (CURLOPT_PATH_AS_IS: a key's "./" or "../" is the key's,
// and the signature covers the path as sent). An unsigned target clears all of these.
// Memory: nothing is allocated from what the server claims. The body goes into the attempt's
// [dst, dst + len) and nowhere else; a byte past len aborts the transfer. Of an error answer's
// body only the first kErrorBodyBytes are kept, in a buffer of the transfer's own, for the S3
// error code (io/remote/s3_xml.h). Only Content-Range is kept from the headers, parsed into
// integers.
//
// Thread safety: none; used by the thread that owns its fetcher.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "io/remote/curl_handles.h"
#include "io/remote/remote_object.h"
#include "io/remote/retry_policy.h"

namespace rf {

// A registered object: what each attempt at it requests and how, made once.
struct TransferTarget {
  std::string url;
  std::string shown;  // for messages
  RequestSigning signing;
  CurlHeaders headers;  // the signed requests' extra headers; empty for unsigned ones
};

// The target of `object` (libcurl loaded). IOError where the header list cannot be made.
Result<TransferTarget> MakeTransferTarget(const RemoteObject& object);

struct AttemptOutcome {
  enum class Kind { kDone, kTransient, kPermanent };
  Kind kind = Kind::kDone;
  std::string error;  // kTransient: what failed, for the deadline's message ("HTTP 503", ...)
  Status status;      // kPermanent: the request's final Status
};

class RangeTransfer {
 public:
  // A handle with the options every attempt shares (TLS verification and the CA bundle, the
  // timeouts, http and https only, HTTP/1.1, no signals, redirects not followed).
  static Result<std::unique_ptr<RangeTransfer>> Create(const HttpFetchOptions& o);

  CURL* easy() const { return easy_.get(); }

  // Sets up an attempt at the bytes [start, end) (end > start) of `target` into dst, which holds
  // end - start bytes and must outlive the attempt; `time_left` bounds the whole attempt.
  // `target` must outlive the attempt too.
  Status Begin(const TransferTarget& target, uint8_t* dst, uint64_t start, uint64_t end,
               std::chrono::milliseconds time_left);
  // Sets up a size probe of `target`: the range 0-0, whose answer carries the object's size.
  // With `head` (head_len > 0 bytes, outliving the attempt): the range [0, head_len), whose
  // bytes, as many as the object has, are kept there too (written()); a server that ignores the
  // range is read only as far as head_len.
  Status BeginSizeProbe(const TransferTarget& target, std::chrono::milliseconds time_left,
                        uint8_t* head = nullptr, uint64_t head_len = 0);
  // Sets up a request for the last `len` bytes of `target` (the suffix range "-len") into dst,
  // which holds len bytes: the answer's Content-Range says where they start (suffix_at()) and
  // the object's size; an object shorter than len comes whole (from 0). A 200 (the range
  // ignored) is taken only where the whole object fits.
  Status BeginSuffix(const TransferTarget& target, uint8_t* dst, uint64_t len,
                     std::chrono::milliseconds time_left);
  // Sets up a GET of the whole answer of `target` into dst, which holds `capacity` bytes.
  Status BeginWhole(const TransferTarget& target, uint8_t* dst, uint64_t capacity,
                    std::chrono::milliseconds time_left);

  // After libcurl ended the attempt with `code`: done, retry or fail. `shown_url` (redacted) and
  // the whole request's range [offset, offset + len) (len 0: a size probe; a whole answer names
  // itself) name the request in a permanent Status. An error answer with an S3 error code
  // ends as S3StatusError (io/remote/retry_policy.h), naming the code.
  AttemptOutcome Finish(CURLcode code, const std::string& shown_url, uint64_t offset, uint64_t len);

  // Bytes of the attempt's range in dst, valid whatever the outcome (a retry resumes after them).
  uint64_t written() const { return written_; }
  // A size probe's or a suffix's answer: the object's size.
  std::optional<uint64_t> object_size() const { return object_size_; }
  // A suffix's answer: the object byte its bytes start at.
  uint64_t suffix_at() const { return suffix_at_; }
  // New connections this attempt opened (0 where it reused one).
  long connects() const;

 private:
  enum class Abort { kNone, kStatus, kIgnoredRange, kOtherRange, kPastEnd, kTooLong };
  enum class Mode { kRange, kProbe, kWhole, kSuffix };
  static constexpr size_t kErrorBodyBytes = 4096;

  RangeTransfer() = default;
  Status Configure(const HttpFetchOptions& o);
  Status BeginAttempt(const TransferTarget& target, std::chrono::milliseconds time_left);
  // An attempt of `mode` (a whole answer, a suffix) into dst, which holds `capacity` bytes.
  Status BeginInto(Mode mode, const TransferTarget& target, uint8_t* dst, uint64_t capacity,
                   std::chrono::milliseconds time_left);
  Status SetSigning(const TransferTarget& target);
  // Checks the answer's status line and headers once, at the first body byte or at the end.
  void CheckAnswer();
  static size_t OnHeader(char* data, size_t size, size_t n, void* self);
  static size_t OnBody(char* data, size_t size, size_t n, void* self);

  CurlEasy easy_;
  char errbuf_[CURL_ERROR_SIZE] = {};
  char range_[48] = {};
  char error_body_[kErrorBodyBytes] = {};
  size_t error_len_ = 0;
  uint8_t* dst_ = nullptr;
  uint64_t start_ = 0, end_ = 0, written_ = 0;
  Mode mode_ = Mode::kRange;
  bool checked_ = false;
  bool probe_head_ = false;  // a size probe that keeps the object's first bytes
  uint8_t probe_byte_ = 0;
  long status_ = 0;
  Abort abort_ = Abort::kNone;
  // Content-Range of the current answer: "bytes first-last/total" or "bytes */total".
  std::optional<uint64_t> cr_first_, cr_last_, cr_total_;
  std::optional<uint64_t> object_size_;
  uint64_t suffix_at_ = 0, suffix_want_ = 0;  // a suffix's first byte and its length
};

}  // namespace rf
