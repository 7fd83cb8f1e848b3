#include "tests/testing/link_proxy.h"

#include <cstdio>

#include "tests/testing/temp_dir.h"

namespace rf::testing {
namespace {

std::string Number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

std::unique_ptr<LinkProxy> LinkProxy::Start(uint16_t upstream_port, const LinkOptions& o,
                                            std::string* error) {
  std::vector<std::string> args = {ProgramPath("ringfeed-link-proxy"),
                                   "--upstream",
                                   "127.0.0.1:" + std::to_string(upstream_port),
                                   "--rtt-ms",
                                   Number(o.rtt_ms),
                                   "--rate-mbps",
                                   Number(o.rate_mbps),
                                   "--fault-min-body",
                                   std::to_string(o.fault_min_body)};
  if (!o.faults.empty()) {
    args.push_back("--fault");
    args.push_back(o.faults);
  }
  if (o.fault_max_body != 0) {
    args.push_back("--fault-max-body");
    args.push_back(std::to_string(o.fault_max_body));
  }
  if (o.fault_repeat) args.push_back("--fault-repeat");
  if (o.cut_ms > 0) {
    args.push_back("--cut-after");
    args.push_back(std::to_string(o.cut_after));
    args.push_back("--cut-ms");
    args.push_back(std::to_string(o.cut_ms));
  }
  std::unique_ptr<LinkProxy> p(new LinkProxy());
  p->child_ = ChildProcess::Start(args, error);
  if (p->child_ == nullptr) return nullptr;
  const std::string first = p->child_->ReadLine(10'000);
  if (!first.starts_with("port ")) {
    if (error)
      *error = "ringfeed-link-proxy did not start: " + (first.empty() ? "no answer" : first);
    return nullptr;
  }
  p->port_ = static_cast<uint16_t>(std::stoi(first.substr(5)));
  return p;
}

std::string LinkProxy::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<std::string> LinkProxy::Stop() {
  std::vector<std::string> kept;
  for (std::string& l : child_->Stop())
    if (!l.starts_with("carried ")) kept.push_back(std::move(l));
  return kept;
}

size_t LinkProxy::Count(const std::vector<std::string>& lines, const std::string& prefix) {
  size_t n = 0;
  for (const std::string& l : lines) n += l.starts_with(prefix);
  return n;
}

}  // namespace rf::testing
