#include "tests/testing/fault_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tests/testing/positional_data.h"

namespace rf::testing {
namespace {

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool SendText(int fd, const std::string& s) { return SendAll(fd, s.data(), s.size()); }

// The object's bytes [first, first + n), generated a piece at a time.
bool SendObject(int fd, uint64_t first, uint64_t n) {
  uint8_t piece[65536];
  while (n > 0) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof piece));
    PositionalObjectBytes(first, piece, k);
    if (!SendAll(fd, piece, k)) return false;
    first += k;
    n -= k;
  }
  return true;
}

std::string Head(const std::string& status, uint64_t length, const std::string& extra = "") {
  return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(length) + "\r\n" + extra +
         "Connection: keep-alive\r\n\r\n";
}

std::string ContentRange(uint64_t first, uint64_t last, uint64_t size) {
  return "Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
         std::to_string(size) + "\r\n";
}

}  // namespace

FaultHttpServer::FaultHttpServer(uint64_t object_size) : size_(object_size) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd, 128) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return;
  }
  listen_fd_ = fd;
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultHttpServer::~FaultHttpServer() { Stop(); }

std::string FaultHttpServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void FaultHttpServer::Script(const std::vector<HttpFault>& faults) {
  std::lock_guard<std::mutex> lock(mu_);
  always_ = false;
  script_.insert(script_.end(), faults.begin(), faults.end());
}

void FaultHttpServer::Always(HttpFault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  always_ = true;
  always_fault_ = fault;
}

void FaultHttpServer::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  always_ = false;
  script_.clear();
}

bool FaultHttpServer::NextFault(HttpFault* fault) {
  std::lock_guard<std::mutex> lock(mu_);
  if (always_) {
    *fault = always_fault_;
    return true;
  }
  if (script_.empty()) return false;
  *fault = script_.front();
  script_.pop_front();
  return true;
}

void FaultHttpServer::Stop() {
  if (listen_fd_ < 0) return;
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  listen_fd_ = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes recv()
  }
  stop_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void FaultHttpServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    ++connections_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      open_fds_.push_back(fd);
    }
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FaultHttpServer::Serve(int fd) {
  std::string buf;
  char piece[4096];
  After after = After::kKeep;
  while (!stopping_ && after == After::kKeep) {
    size_t end = buf.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (buf.size() > 65536) break;  // no request has headers this long
      ssize_t r = ::recv(fd, piece, sizeof piece, 0);
      if (r <= 0) break;
      buf.append(piece, static_cast<size_t>(r));
      continue;
    }
    std::string request = buf.substr(0, end + 4);
    buf.erase(0, end + 4);
    after = Answer(fd, request);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(std::find(open_fds_.begin(), open_fds_.end(), fd));
  }
  if (after == After::kReset) {
    linger l{1, 0};  // close() then sends RST, not FIN
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  ::close(fd);
}

FaultHttpServer::After FaultHttpServer::Answer(int fd, const std::string& request) {
  ++requests_;
  auto keep = [](bool sent) { return sent ? After::kKeep : After::kClose; };
  size_t sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
  std::string path = request.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (path == "/missing") return keep(SendText(fd, Head("404 Not Found", 9) + "not found"));
  if (path == "/forbidden") return keep(SendText(fd, Head("403 Forbidden", 9) + "forbidden"));
  uint64_t first = 0, last = size_ - 1;
  bool ranged = false;
  for (size_t at = request.find("\r\n"); at != std::string::npos;
       at = request.find("\r\n", at + 2)) {
    unsigned long long a = 0, b = 0;
    if (strncasecmp(request.c_str() + at + 2, "range: bytes=", 13) != 0) continue;
    if (std::sscanf(request.c_str() + at + 15, "%llu-%llu", &a, &b) == 2) {
      ranged = true;
      first = a;
      last = std::min<uint64_t>(b, size_ - 1);
    } else if (std::sscanf(request.c_str() + at + 15, "-%llu", &b) == 1 && b > 0) {
      ranged = true;  // a suffix: the last b bytes (all of an object shorter)
      first = size_ - std::min<uint64_t>(b, size_);
      last = size_ - 1;
    }
  }
  if (ranged && first >= size_)
    return keep(SendText(fd, Head("416 Range Not Satisfiable", 0,
                                  "Content-Range: bytes */" + std::to_string(size_) + "\r\n")));
  uint64_t n = last - first + 1;
  std::string ok_head =
      ranged ? Head("206 Partial Content", n, ContentRange(first, last, size_)) : Head("200 OK", n);
  HttpFault fault;
  if (!NextFault(&fault)) return keep(SendText(fd, ok_head) && SendObject(fd, first, n));
  switch (fault) {
    case HttpFault::k500:
      return keep(SendText(fd, Head("500 Internal Server Error", 5) + "error"));
    case HttpFault::k503:
      return keep(SendText(fd, Head("503 Service Unavailable", 5) + "error"));
    case HttpFault::k429:
      return keep(SendText(fd, Head("429 Too Many Requests", 5) + "error"));
    case HttpFault::kResetBeforeAnswer:
      return After::kReset;
    case HttpFault::kResetMidBody:
      (void)(SendText(fd, ok_head) && SendObject(fd, first, n / 2));
      return After::kReset;
    case HttpFault::kShortBody:
      (void)(SendText(fd, ok_head) && SendObject(fd, first, n / 2));
      return After::kClose;
    case HttpFault::kLongBody:
      return keep(
          SendText(fd, Head("206 Partial Content", n + 100, ContentRange(first, last, size_))) &&
          SendObject(fd, first, n + 100));
    case HttpFault::kWholeObject:
      return keep(SendText(fd, Head("200 OK", size_)) && SendObject(fd, 0, size_));
    case HttpFault::kOtherRange:
      return keep(
          SendText(fd, Head("206 Partial Content", n, ContentRange(first + 1, last + 1, size_))) &&
          SendObject(fd, first + 1, n));
    case HttpFault::kStall: {
      std::unique_lock<std::mutex> lock(mu_);
      stop_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return stopping_.load(); });
      return After::kClose;
    }
  }
  return After::kClose;
}

}  // namespace rf::testing
