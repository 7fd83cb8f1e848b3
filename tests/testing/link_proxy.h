// LinkProxy: tools/bench/link_proxy's ringfeed-link-proxy, started by a test in front of a
// server on loopback (nginx, s3rver): a round trip and a rate added, faults put into the
// server's answers, the link cut for a while. The tool's own comment says what each does.
//
// Stop() (or the destructor) ends it; Stop returns what it did: the faults it applied and the
// cut, one line each ("fault reset answer 3 of 65536 bytes", "cut 2000 ms after N bytes",
// "restored"), so that a test can check its faults happened.
//
// Thread safety: none; one test owns a proxy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/testing/child_process.h"

namespace rf::testing {

struct LinkOptions {
  double rtt_ms = 0, rate_mbps = 0;
  // The faults of successive answers with a body of at least fault_min_body bytes (and at most
  // fault_max_body, where not 0), as the tool's --fault takes them
  // ("reset,cut,flip,503,stall:3000,pass"); repeat: the last one for ever.
  std::string faults;
  uint64_t fault_min_body = 1;
  uint64_t fault_max_body = 0;
  bool fault_repeat = false;
  // The link cut once for cut_ms after cut_after bytes reached the clients (0: never).
  uint64_t cut_after = 0;
  int64_t cut_ms = 0;
};

class LinkProxy {
 public:
  // Starts it in front of 127.0.0.1:upstream_port; nothing, and `error` filled, where it fails.
  static std::unique_ptr<LinkProxy> Start(uint16_t upstream_port, const LinkOptions& o,
                                          std::string* error);

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port><path>".
  std::string Url(const std::string& path) const;
  // Stops it: the lines it printed about faults and cuts, in order ("carried ..." dropped).
  std::vector<std::string> Stop();
  // How many of Stop's lines start with `prefix` ("fault reset", "cut", "restored").
  static size_t Count(const std::vector<std::string>& lines, const std::string& prefix);

 private:
  LinkProxy() = default;
  std::unique_ptr<ChildProcess> child_;
  uint16_t port_ = 0;
};

}  // namespace rf::testing
