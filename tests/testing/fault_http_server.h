// FaultHttpServer: a small HTTP/1.1 server of the tests' own, on loopback, that serves one
// positional object (PositionalObjectBytes) of a given size at every path but "/missing" (404)
// and "/forbidden" (403), answers range requests (a suffix "-N" too) with 206 as nginx does, keeps
// connections alive, and answers the next requests with the faults a test scripts, one fault a
// request in the order the requests arrive:
//   k500, k503, k429        that status, a short body, the connection kept;
//   kResetBeforeAnswer      the connection reset (RST) without an answer;
//   kResetMidBody           the headers and half the body, then a reset;
//   kShortBody              the headers (the full Content-Length) and half the body, then a
//                           clean close (FIN);
//   kLongBody               206 whose Content-Range claims the range but whose body is 100 bytes
//                           longer (the next object bytes);
//   kWholeObject            200 with the whole object, the range ignored;
//   kOtherRange             206 with the bytes one past the range's start;
//   kStall                  nothing at all until the server stops (or 60 s).
// It counts requests and connections. A connection a thread, joined at Stop/destruction.
//
// Thread safety: Script and the counters may be called from the test's thread while the server
// threads run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rf::testing {

enum class HttpFault {
  k500,
  k503,
  k429,
  kResetBeforeAnswer,
  kResetMidBody,
  kShortBody,
  kLongBody,
  kWholeObject,
  kOtherRange,
  kStall,
};

class FaultHttpServer {
 public:
  // Listens on 127.0.0.1 at a port of the kernel's choice; ok() says whether it does.
  explicit FaultHttpServer(uint64_t object_size);
  ~FaultHttpServer();
  FaultHttpServer(const FaultHttpServer&) = delete;
  FaultHttpServer& operator=(const FaultHttpServer&) = delete;

  bool ok() const { return listen_fd_ >= 0; }
  std::string Url(const std::string& path) const;
  // The next requests get these faults, in order (appended to any not yet used).
  void Script(const std::vector<HttpFault>& faults);
  // Every request (a fault every request) gets `fault` from now on, until Script or Clear.
  void Always(HttpFault fault);
  void Clear();
  uint64_t requests() const { return requests_; }
  uint64_t connections() const { return connections_; }
  // Stops accepting, wakes and closes every connection, joins the threads.
  void Stop();

 private:
  void AcceptLoop();
  void Serve(int fd);
  // What becomes of the connection after an answer.
  enum class After { kKeep, kClose, kReset };
  After Answer(int fd, const std::string& request);
  bool NextFault(HttpFault* fault);

  uint64_t size_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> requests_{0}, connections_{0};
  std::mutex mu_;
  std::condition_variable stop_cv_;
  std::deque<HttpFault> script_;
  bool always_ = false;
  HttpFault always_fault_ = HttpFault::k500;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace rf::testing
