// ringfeed-link-proxy: an emulated network link on loopback, for the remote benchmarks and the
// fault tests (this kernel has no netem). A TCP proxy from 127.0.0.1:PORT to an upstream server
// that
//   - delays every byte by half the round trip in each direction and caps each direction's
//     rate across all connections (one shared link, as a NIC is shared): a piece read at t is
//     delivered at max(t, the link free) + its transfer time at the rate + RTT/2, in order per
//     connection;
//   - lets each connection hold at most --window bytes on their way to the client (TCP's
//     window: one connection carries at most window / (RTT/2) a second);
//   - puts faults into the server's answers, one a answer, to the answers whose body is at least
//     --fault-min-body bytes (and at most --fault-max-body, where given), in the order they arrive:
//     reset (half the body, then RST), cut (half the body, then FIN: a body cut short), flip (the
//     body's middle byte changed: other bytes), 503 (a 503 instead of the answer, the connection
//     kept), stall:MS (the answer held MS ms: a throttled server), pass (none); --fault-repeat
//     applies the list's last entry to every answer after it;
//   - cuts the link once, after --cut-after bytes have reached the clients, for --cut-ms: nothing
//     moves either way and no connection is taken until it is restored, as on a link pulled.
//
//   ringfeed-link-proxy --upstream 127.0.0.1:8080 [--port 0] [--rtt-ms 20] [--rate-mbps 4000]
//       [--window 6291456] [--fault reset,cut,flip,503,stall:3000,pass] [--fault-min-body N]
//       [--fault-max-body N]
//       [--fault-repeat] [--cut-after BYTES --cut-ms MS]
//
// Prints "port N" once it listens, a line for each fault and cut as it applies it ("fault reset
// answer 3 of 65536 bytes", "cut 2000 ms after 1048576 bytes", "restored"), and at the end "carried
// U bytes up, D bytes down, C connections". Serves until its stdin closes or SIGTERM. One thread,
// one epoll loop: on this 2-core machine it carries several GB/s, beyond what the clients need.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "tools/bench/link_proxy/http_framing.h"

namespace rf::link {
namespace {

volatile sig_atomic_t g_stop = 0;
constexpr uint32_t kUnwatched = ~0u;  // an epoll mask: the fd is out of the epoll set

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Options {
  std::string upstream_host = "127.0.0.1";
  uint16_t upstream_port = 0, port = 0;
  double rtt_ms = 0, rate_mbps = 0;
  uint64_t window = 6 << 20;
  std::vector<Fault> faults;
  uint64_t fault_min_body = 1;
  uint64_t fault_max_body = 0;  // 0: no bound
  bool fault_repeat = false;
  uint64_t cut_after = 0;
  int64_t cut_ms = 0;
};

// One direction of the link, shared by every connection: when it is next free.
struct Direction {
  double ns_per_byte = 0;  // 0: no rate cap
  int64_t one_way_ns = 0, free_at = 0;
  uint64_t carried = 0;
  int64_t Due(size_t n, int64_t now) {
    if (ns_per_byte > 0) {
      free_at = std::max(free_at, now) + static_cast<int64_t>(std::ceil(n * ns_per_byte));
      return free_at + one_way_ns;
    }
    return now + one_way_ns;
  }
};

struct Piece {
  int64_t due;
  std::vector<char> data;
  size_t off = 0;
};

// One direction of one connection: bytes read from `from`, on their way to `to`.
struct Flow {
  int from = -1, to = -1;
  std::deque<Piece> pieces;
  uint64_t queued = 0;
  int64_t last_due = 0;
  bool from_done = false;  // `from` said EOF (or is no longer read)
  bool blocked = false;    // `to` answered EAGAIN: wait for EPOLLOUT
  bool shut = false;       // `to` has been shut for writing (after `from`'s EOF)
  ResponseFramer::End end = ResponseFramer::End::kNone;  // how to end once the pieces are out
};

struct Conn;
struct Endpoint {
  Conn* conn;
  bool client;
};

struct Conn {
  int client = -1, server = -1;
  Flow up, down;  // client -> server, server -> client
  RequestTracker requests;
  std::unique_ptr<ResponseFramer> framer;
  Endpoint client_ep{this, true}, server_ep{this, false};
  uint32_t client_mask = 0, server_mask = 0;
  bool dead = false;
};

class Proxy : public FaultSource {
 public:
  explicit Proxy(const Options& o) : o_(o) {
    const double one_way = o.rtt_ms * 1e6 / 2;
    for (Direction* d : {&up_, &down_}) {
      d->one_way_ns = static_cast<int64_t>(one_way);
      d->ns_per_byte = o.rate_mbps > 0 ? 8e9 / (o.rate_mbps * 1e6) : 0;
    }
  }

  Fault Next(uint64_t body) override {
    if (body < o_.fault_min_body || (o_.fault_max_body != 0 && body > o_.fault_max_body)) return {};
    ++answers_;
    Fault f;
    if (next_fault_ < o_.faults.size()) {
      f = o_.faults[next_fault_++];
    } else if (o_.fault_repeat && !o_.faults.empty()) {
      f = o_.faults.back();
    } else {
      return {};
    }
    static constexpr const char* kNames[] = {"pass", "reset", "cut", "flip", "503", "stall"};
    if (f.kind != FaultKind::kPass)
      std::printf("fault %s answer %llu of %llu bytes\n", kNames[static_cast<int>(f.kind)],
                  static_cast<unsigned long long>(answers_), static_cast<unsigned long long>(body));
    std::fflush(stdout);
    return f;
  }

  int Run() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(o_.port);
    socklen_t len = sizeof a;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 512) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::fprintf(stderr, "ringfeed-link-proxy: cannot listen on port %u: %s\n", o_.port,
                   std::strerror(errno));
      return 1;
    }
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    Watch(listen_fd_, &listen_tag_, EPOLLIN, EPOLL_CTL_ADD);
    Watch(STDIN_FILENO, &stdin_tag_, EPOLLIN, EPOLL_CTL_ADD);
    std::printf("port %u\n", ntohs(a.sin_port));
    std::fflush(stdout);
    while (!g_stop && !stdin_closed_) Step();
    std::printf("carried %llu bytes up, %llu bytes down, %llu connections\n",
                static_cast<unsigned long long>(up_.carried),
                static_cast<unsigned long long>(down_.carried),
                static_cast<unsigned long long>(connections_));
    return 0;
  }

 private:
  void Watch(int fd, void* tag, uint32_t mask, int op) {
    epoll_event e{};
    e.events = mask;
    e.data.ptr = tag;
    ::epoll_ctl(ep_, op, fd, &e);
  }

  bool Cut(int64_t now) const { return now < cut_until_; }

  void Step() {
    const int64_t now = NowNs();
    if (Cut(now)) {  // nothing moves, not even a connection is taken; only stdin is heard
      pollfd in{STDIN_FILENO, POLLIN, 0};
      const int ms = static_cast<int>(std::min<int64_t>((cut_until_ - now) / 1'000'000 + 1, 50));
      char buf[256];
      if (::poll(&in, 1, ms) > 0 && ::read(STDIN_FILENO, buf, sizeof buf) <= 0)
        stdin_closed_ = true;
      return;
    }
    if (cut_until_ != 0 && !restored_) {
      restored_ = true;
      std::printf("restored\n");
      std::fflush(stdout);
    }
    for (auto& c : conns_) Interest(c.get(), now);
    // Wait until the next piece is due (or something to read), to the nanosecond.
    int64_t wake = INT64_MAX;
    for (auto& c : conns_)
      for (Flow* f : {&c->up, &c->down})
        if (!f->pieces.empty() && !f->blocked) wake = std::min(wake, f->pieces.front().due);
    timespec ts{}, *tp = nullptr;
    if (wake != INT64_MAX) {
      const int64_t d = std::max<int64_t>(0, wake - now);
      ts.tv_sec = d / 1'000'000'000;
      ts.tv_nsec = d % 1'000'000'000;
      tp = &ts;
    }
    epoll_event events[64];
    const int n = ::epoll_pwait2(ep_, events, 64, tp, nullptr);
    const int64_t t = NowNs();
    for (int i = 0; i < n && !Cut(t); ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &listen_tag_) {
        Accept();
      } else if (tag == &stdin_tag_) {
        char buf[256];
        if (::read(STDIN_FILENO, buf, sizeof buf) <= 0) stdin_closed_ = true;
      } else {
        auto* e = static_cast<Endpoint*>(tag);
        Conn* c = e->conn;
        if (c->dead) continue;
        Flow* in = e->client ? &c->up : &c->down;
        if (events[i].events & EPOLLERR) {
          Close(c, /*reset=*/true);
          continue;
        }
        if ((events[i].events & EPOLLHUP) && in->from_done) {
          // Shut both ways and read no more: out of the epoll set, or it would wake us forever.
          ::epoll_ctl(ep_, EPOLL_CTL_DEL, e->client ? c->client : c->server, nullptr);
          (e->client ? c->client_mask : c->server_mask) = kUnwatched;
          continue;
        }
        if (events[i].events & (EPOLLIN | EPOLLHUP)) Read(c, in, t);
        if (events[i].events & EPOLLOUT) {
          (e->client ? e->conn->down : e->conn->up).blocked = false;
        }
      }
    }
    if (!Cut(t)) {
      for (auto& c : conns_) {
        if (c->dead) continue;
        Deliver(c.get(), &c->down, &down_, t);
        if (!c->dead) Deliver(c.get(), &c->up, &up_, t);
      }
    }
    conns_.remove_if([](const std::unique_ptr<Conn>& c) { return c->dead; });
  }

  // Reads from `f->from` when its flow has room and the link is up; writes when blocked.
  void Interest(Conn* c, int64_t now) {
    if (c->dead) return;
    auto mask = [&](const Flow& in, const Flow& out) {
      uint32_t m = 0;
      if (!in.from_done && in.queued < o_.window && !Cut(now)) m |= EPOLLIN;
      if (out.blocked) m |= EPOLLOUT;
      return m;
    };
    const uint32_t cm = mask(c->up, c->down), sm = mask(c->down, c->up);
    if (c->client_mask != kUnwatched && cm != c->client_mask)
      Watch(c->client, &c->client_ep, c->client_mask = cm, EPOLL_CTL_MOD);
    if (c->server_mask != kUnwatched && sm != c->server_mask)
      Watch(c->server, &c->server_ep, c->server_mask = sm, EPOLL_CTL_MOD);
  }

  void Accept() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(o_.upstream_port);
      ::inet_pton(AF_INET, o_.upstream_host.c_str(), &a.sin_addr);
      if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {  // loopback: at once
        ::close(s);
        ::close(fd);
        continue;
      }
      ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) | O_NONBLOCK);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->client = fd;
      c->server = s;
      c->up.from = c->down.to = fd;
      c->up.to = c->down.from = s;
      c->framer = std::make_unique<ResponseFramer>(&c->requests, this);
      Watch(fd, &c->client_ep, c->client_mask = EPOLLIN, EPOLL_CTL_ADD);
      Watch(s, &c->server_ep, c->server_mask = EPOLLIN, EPOLL_CTL_ADD);
      conns_.push_back(std::move(c));
      ++connections_;
    }
  }

  void Read(Conn* c, Flow* f, int64_t now) {
    if (f->from_done || f->queued >= o_.window) return;
    static char buf[256 << 10];
    const size_t want = std::min<uint64_t>(sizeof buf, o_.window - f->queued);
    const ssize_t n = ::read(f->from, buf, want);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) {  // a reset: passed on as one
      Close(c, /*reset=*/true);
      return;
    }
    if (n == 0) {
      f->from_done = true;
      return;
    }
    Piece p;
    const bool down = f == &c->down;
    if (down) {
      ResponseFramer::Output out = c->framer->Feed(buf, static_cast<size_t>(n));
      p.data = std::move(out.bytes);
      if (out.stall_ms > 0) f->last_due = std::max(f->last_due, now) + out.stall_ms * 1'000'000;
      if (out.end != ResponseFramer::End::kNone) {
        f->end = out.end;
        f->from_done = true;  // nothing more of this server's answer reaches the client
      }
    } else {
      c->requests.Feed(buf, static_cast<size_t>(n));
      p.data.assign(buf, buf + n);
    }
    if (p.data.empty()) return;
    p.due = std::max(f->last_due, (down ? down_ : up_).Due(p.data.size(), now));
    f->last_due = p.due;
    f->queued += p.data.size();
    f->pieces.push_back(std::move(p));
  }

  void Deliver(Conn* c, Flow* f, Direction* d, int64_t now) {
    while (!f->blocked && !f->pieces.empty() && f->pieces.front().due <= now && !Cut(now)) {
      Piece& p = f->pieces.front();
      const ssize_t n = ::send(f->to, p.data.data() + p.off, p.data.size() - p.off, MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) {
        f->blocked = true;
        return;
      }
      if (n < 0) {
        Close(c, /*reset=*/true);
        return;
      }
      p.off += static_cast<size_t>(n);
      f->queued -= static_cast<uint64_t>(n);
      d->carried += static_cast<uint64_t>(n);
      if (d == &down_) CountDown(static_cast<uint64_t>(n), now);
      if (p.off == p.data.size()) f->pieces.pop_front();
    }
    if (!f->pieces.empty() || !f->from_done) return;
    if (f->end != ResponseFramer::End::kNone) {
      Close(c, f->end == ResponseFramer::End::kReset);
    } else if (!f->shut) {
      f->shut = true;
      ::shutdown(f->to, SHUT_WR);
    }
    if (f->end == ResponseFramer::End::kNone) {
      if (c->up.from_done && c->down.from_done && c->up.pieces.empty() && c->down.pieces.empty())
        Close(c, false);
    }
  }

  void CountDown(uint64_t n, int64_t now) {
    down_total_ += n;
    if (o_.cut_ms > 0 && cut_until_ == 0 && down_total_ >= o_.cut_after) {
      cut_until_ = now + o_.cut_ms * 1'000'000;
      std::printf("cut %lld ms after %llu bytes\n", static_cast<long long>(o_.cut_ms),
                  static_cast<unsigned long long>(down_total_));
      std::fflush(stdout);
    }
  }

  // Ends the connection; `reset`: both sides see a reset (RST), not an orderly close.
  void Close(Conn* c, bool reset) {
    if (c->dead) return;
    for (int fd : {c->client, c->server}) {
      if (reset) {
        linger l{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
    }
    c->dead = true;
  }

  Options o_;
  Direction up_, down_;
  int listen_fd_ = -1, ep_ = -1;
  char listen_tag_ = 0, stdin_tag_ = 0;
  bool stdin_closed_ = false, restored_ = false;
  std::list<std::unique_ptr<Conn>> conns_;
  uint64_t connections_ = 0, answers_ = 0, down_total_ = 0;
  size_t next_fault_ = 0;
  int64_t cut_until_ = 0;
};

bool ParseFaults(const std::string& list, std::vector<Fault>* out) {
  size_t at = 0;
  while (at <= list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string w = list.substr(at, end - at);
    Fault f;
    if (w == "pass") {
      f.kind = FaultKind::kPass;
    } else if (w == "reset") {
      f.kind = FaultKind::kReset;
    } else if (w == "cut") {
      f.kind = FaultKind::kCut;
    } else if (w == "flip") {
      f.kind = FaultKind::kFlip;
    } else if (w == "503") {
      f.kind = FaultKind::k503;
    } else if (w.rfind("stall:", 0) == 0 && w.size() > 6) {
      f.kind = FaultKind::kStall;
      f.ms = std::strtoll(w.c_str() + 6, nullptr, 10);
    } else {
      std::fprintf(stderr, "ringfeed-link-proxy: --fault: unknown fault '%s'\n", w.c_str());
      return false;
    }
    out->push_back(f);
    at = end + 1;
  }
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "ringfeed-link-proxy: %s\nusage: ringfeed-link-proxy --upstream HOST:PORT [--port "
               "N] [--rtt-ms MS] [--rate-mbps MBIT] [--window BYTES] [--fault LIST] "
               "[--fault-min-body BYTES] [--fault-max-body BYTES] [--fault-repeat] [--cut-after "
               "BYTES --cut-ms MS]\n",
               why);
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fault-repeat") {
      o.fault_repeat = true;
      continue;
    }
    if (i + 1 >= argc) return Usage(("missing the value of " + a).c_str());
    const std::string v = argv[++i];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool number = end != v.c_str() && *end == '\0' && x >= 0;
    if (a == "--upstream") {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) return Usage("--upstream wants HOST:PORT");
      o.upstream_host = v.substr(0, colon);
      o.upstream_port = static_cast<uint16_t>(std::atoi(v.c_str() + colon + 1));
    } else if (a == "--fault") {
      if (!ParseFaults(v, &o.faults)) return 2;
    } else if (!number) {
      return Usage((a + " wants a number, not '" + v + "'").c_str());
    } else if (a == "--port") {
      o.port = static_cast<uint16_t>(x);
    } else if (a == "--rtt-ms") {
      o.rtt_ms = x;
    } else if (a == "--rate-mbps") {
      o.rate_mbps = x;
    } else if (a == "--window") {
      o.window = std::max<uint64_t>(static_cast<uint64_t>(x), 64 << 10);
    } else if (a == "--fault-min-body") {
      o.fault_min_body = std::max<uint64_t>(static_cast<uint64_t>(x), 1);
    } else if (a == "--fault-max-body") {
      o.fault_max_body = static_cast<uint64_t>(x);
    } else if (a == "--cut-after") {
      o.cut_after = static_cast<uint64_t>(x);
    } else if (a == "--cut-ms") {
      o.cut_ms = static_cast<int64_t>(x);
    } else {
      return Usage(("unknown option " + a).c_str());
    }
  }
  if (o.upstream_port == 0) return Usage("--upstream is needed");
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return Proxy(o).Run();
}

}  // namespace
}  // namespace rf::link

int main(int argc, char** argv) { return rf::link::Main(argc, argv); }
