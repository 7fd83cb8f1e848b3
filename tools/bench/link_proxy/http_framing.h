// The HTTP/1.1 framing the link proxy needs to put a fault into one answer: the requests a
// client sends (their methods, in order) and the answers that come back (status line, headers,
// then a body of Content-Length bytes). Enough for nginx's and s3rver's answers to GETs and
// HEADs; an answer it cannot frame (chunked, no length, a header over 64 KiB) turns the rest
// of its connection into plain bytes, with no more faults on it.
//
// Thread safety: none; one per connection, used by the proxy's one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace rf::link {

// Which fault an answer gets, and its argument (kStall: milliseconds).
enum class FaultKind { kPass, kReset, kCut, kFlip, k503, kStall };
struct Fault {
  FaultKind kind = FaultKind::kPass;
  int64_t ms = 0;
};

// The methods of the requests seen on a connection, in order (requests have no body).
class RequestTracker {
 public:
  void Feed(const char* p, size_t n);
  // The method of the next answer's request ("GET" where none was seen).
  std::string PopMethod();

 private:
  std::string method_;
  bool in_method_ = true;
  uint32_t tail_ = 0;  // the last four bytes seen, to find "\r\n\r\n"
  std::deque<std::string> methods_;
};

// What the answers need: the next fault for an answer of `body` bytes (kPass for none).
class FaultSource {
 public:
  virtual ~FaultSource() = default;
  virtual Fault Next(uint64_t body) = 0;
};

// Rewrites the answers of one connection as their faults say.
class ResponseFramer {
 public:
  enum class End { kNone, kReset, kCut };
  struct Output {
    std::vector<char> bytes;  // what goes to the client
    int64_t stall_ms = 0;     // hold these bytes (and all after them) this much longer
    End end = End::kNone;     // after these bytes, end the connection so
  };
  ResponseFramer(RequestTracker* requests, FaultSource* faults)
      : requests_(requests), faults_(faults) {}
  // The client's bytes for `n` bytes of the server's; after an End, the rest is dropped.
  Output Feed(const char* p, size_t n);

 private:
  void HeadDone(Output* out);

  enum class State { kHead, kBody, kPlain, kEnded };
  RequestTracker* requests_;
  FaultSource* faults_;
  State state_ = State::kHead;
  std::string head_;
  uint64_t left_ = 0, body_ = 0;  // body bytes still to come, and the body's size
  bool discard_ = false;          // the body is dropped (its answer replaced by a 503)
  uint64_t flip_at_ = UINT64_MAX, end_at_ = UINT64_MAX;  // offsets counted down like left_
  End end_kind_ = End::kNone;
};

}  // namespace rf::link
