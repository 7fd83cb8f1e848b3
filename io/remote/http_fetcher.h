// HttpFetcher: byte ranges of http:// and https:// objects, and of s3:// objects resolved to
// their store's URL (io/remote/remote_object.h), fetched into caller-owned buffers,
// several requests in flight at once, with the submission/completion shape of io/io_queue.h so
// that it can sit beside the io_uring reader: Prepare requests (each with its user_data), Submit
// them, Wait for at least N completions.
//
// Underneath is one libcurl multi handle and one easy handle per request in flight
// (max_in_flight of them, made once at Create and reused): HTTP/1.1, connections kept alive
// and reused from the multi handle's cache, at most max_in_flight to one host. Each request is
// retried as io/remote/retry_policy.h says, within its deadline; a retry after a body cut short
// asks only for the bytes still missing. A request ends in exactly one completion: Ok with every
// byte of its range in its buffer, or the one-line Status that names the URL (redacted: no
// userinfo, no query; an s3:// object by its s3:// path), the byte range and the last HTTP
// status or curl error (and S3's error code, where the answer has one).
//
// Signing: an object whose RequestSigning is set is signed by libcurl's own SigV4
// (io/remote/range_transfer.h says how); its credentials are kept for the requests and shown
// nowhere: not in a Status, not in the stats.
//
// Ownership and lifetime: the caller owns every buffer; a request's buffer must stay valid and
// untouched from Prepare until its completion is returned by Wait (or the fetcher is
// destroyed). The fetcher writes only inside [buf, buf + len): a body longer than the range is
// refused, not stored. It allocates at Create (each handle's libcurl receive buffer: 512 KiB),
// and per request only libcurl's own small state and the text of a failure: never from a size
// the server claims.
//
// Errors: never throws. Submit and Wait return a non-Ok Status only for misuse or a libcurl
// failure of the fetcher itself; a request's own failure comes back in its completion.
//
// Thread safety: none; one thread owns a fetcher (as with an IoQueue). Separate fetchers may be
// used on separate threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/remote/remote_object.h"
#include "io/remote/retry_policy.h"

namespace rf {

class CurlMulti;
class RangeTransfer;
struct TransferTarget;

struct HttpRequest {
  uint32_t url = 0;  // index from AddUrl or AddObject
  void* buf = nullptr;
  uint64_t len = 0;  // 0 completes at once, Ok, without a request
  uint64_t offset = 0;
  uint64_t user_data = 0;
};

struct HttpCompletion {
  uint64_t user_data = 0;
  Status status;  // Ok: all `len` bytes are in the request's buffer
};

// What the fetcher did, for tests and metrics. Counts only; no URL.
struct HttpFetchStats {
  uint64_t attempts = 0;     // requests sent, retries included
  uint64_t retries = 0;      // attempts after a transient failure
  uint64_t connections = 0;  // new connections opened (the rest reused one)
  uint64_t bytes = 0;        // body bytes written into buffers
};

class HttpFetcher {
 public:
  // InvalidArgument for options out of range; Unsupported where libcurl.so.4 cannot be loaded
  // (io/remote/curl_library.h); IOError where libcurl cannot be set up.
  static Result<std::unique_ptr<HttpFetcher>> Create(const HttpFetchOptions& options);
  ~HttpFetcher();
  HttpFetcher(const HttpFetcher&) = delete;
  HttpFetcher& operator=(const HttpFetcher&) = delete;

  // Registers a URL that requests name by the returned index. InvalidArgument for anything but
  // an http:// or https:// URL with a host. The URL is kept (its credentials too), never shown.
  Result<uint32_t> AddUrl(std::string_view url);
  // The same for a resolved object (ResolveRemoteObject): its URL requested, signed as its
  // `signing` says, named by its `shown` in every message. InvalidArgument for a URL that is
  // not http(s).
  Result<uint32_t> AddObject(const RemoteObject& object);

  // Requests prepared, in flight or waiting for a retry, at most (max_in_flight).
  uint32_t capacity() const;
  // Queues one request; InvalidArgument for an unknown URL index, a null buffer, a range that
  // overflows, or more than capacity() not yet returned by Wait.
  Status Prepare(const HttpRequest& r);
  // Starts every prepared request; each one's deadline counts from here.
  Status Submit();
  // Appends at least `min` completions to `out`, blocking until they are there, plus any others
  // already finished. InvalidArgument if `min` exceeds the requests not yet returned.
  Status Wait(std::vector<HttpCompletion>& out, uint32_t min);

  // The size of the object at `url`, from a request for its first byte (Content-Range's total;
  // a HEAD is not used, since a presigned GET URL does not sign one). Retried like a range.
  // Blocks; call it with no request in flight.
  Result<uint64_t> Size(std::string_view url);
  Result<uint64_t> Size(const RemoteObject& object);
  // The size and the first bytes of `object` in one request, the range [0, len) (len > 0): its
  // answer's Content-Range gives the size, and as many of those bytes as the object has (at most
  // len) go into buf, `*got` of them. An open that needs both takes one round trip, not two.
  // Retried like a range, each attempt from the first byte. Blocks; no request in flight.
  Result<uint64_t> SizeAndHead(const RemoteObject& object, void* buf, uint64_t len, uint64_t* got);
  // SizeAndHead's request and, at the same time on a second connection, one for the object's
  // last tail_len bytes (the suffix range "-tail_len"): the size, both ends, one round trip. A
  // failure of the head's request is the call's; the tail's (a server that takes no suffix
  // range, say) is only kept in tail_status, with tail_bytes 0. Blocks; no request in flight.
  struct Ends {
    uint64_t size = 0;
    uint64_t head_bytes = 0;               // in head: the object's [0, head_bytes)
    uint64_t tail_at = 0, tail_bytes = 0;  // in tail: the object's [tail_at, tail_at + tail_bytes)
    Status tail_status;
  };
  Result<Ends> SizeAndEnds(const RemoteObject& object, void* head, uint64_t head_len, void* tail,
                           uint64_t tail_len);

  // The whole answer to a GET of `object` (no Range; a listing page, say) into [buf, buf +
  // capacity): its length. Only 200 is accepted; a longer answer is refused (IOError), an error
  // answer ends as a range's does. Retried like a range, each attempt from the start. Blocks;
  // call it with no request in flight.
  Result<uint64_t> FetchWhole(const RemoteObject& object, void* buf, uint64_t capacity);

  const HttpFetchStats& stats() const { return stats_; }

 private:
  struct Slot;
  explicit HttpFetcher(const HttpFetchOptions& options);
  Status StartAttempt(Slot& s);
  enum class Kind { kRange, kProbe, kWhole, kSuffix };
  // Runs one blocking request of `kind` (a size probe, a whole answer or a suffix) on the first
  // slot: its outcome in that slot (Slot::oneoff_*).
  Result<uint64_t> RunOneOff(const RemoteObject& object, Kind kind, void* buf, uint64_t capacity);
  struct OneOff {
    Kind kind;
    void* buf;
    uint64_t capacity;
  };
  // Runs `n` blocking requests of `object` at once, request i on slot i; each one's outcome in
  // its slot. The call fails only where the fetcher itself does.
  Status RunOneOffs(const RemoteObject& object, const OneOff* requests, uint32_t n);
  // Handles one attempt that libcurl finished: a completion, or a retry scheduled.
  void Finished(Slot& s, int code);
  void Complete(Slot& s, Status status);
  // Runs the transfers (retries due, libcurl's work, finished attempts) until enough() holds.
  Status Drive(const std::function<bool()>& enough);
  uint64_t NextRandom();

  HttpFetchOptions options_;
  std::unique_ptr<CurlMulti> multi_;
  std::vector<Slot> slots_;  // max_in_flight, never resized: libcurl holds pointers into it
  std::vector<TransferTarget> targets_;  // by AddUrl/AddObject index: URL, name, signing
  std::vector<HttpCompletion> done_;     // finished, not yet returned by Wait
  uint32_t outstanding_ = 0;             // prepared and not yet returned by Wait
  uint32_t prepared_ = 0;                // prepared and not yet submitted
  uint64_t rng_;
  HttpFetchStats stats_;
};

}  // namespace rf
