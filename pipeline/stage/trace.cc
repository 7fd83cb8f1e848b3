#include "pipeline/stage/trace.h"

#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "io/file.h"

#if RINGFEED_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace rf {

std::atomic<Trace*> Trace::active_{nullptr};

uint64_t Trace::NowNs() { return SteadyNowNs(); }

void Trace::Span(const char* name, const char* track, uint64_t start_ns, uint64_t end_ns,
                 std::string args) {
  std::lock_guard lock(mu_);
  if (events_.size() >= kMaxEvents) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{name, track, start_ns, end_ns, std::move(args)});
}

Status Trace::Write(const std::string& path) const {
  std::lock_guard lock(mu_);
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> tids;
  for (const Event& e : events_) {
    auto [it, fresh] = tids.emplace(e.track, static_cast<int>(tids.size()) + 1);
    if (fresh) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", 1},
                        {"tid", it->second},
                        {"args", {{"name", e.track}}}});
    }
    nlohmann::json ev = {{"name", e.name},
                         {"cat", e.track},
                         {"ph", "X"},
                         {"pid", 1},
                         {"tid", it->second},
                         {"ts", (e.start_ns - std::min(e.start_ns, origin_ns_)) / 1e3},
                         {"dur", (e.end_ns - e.start_ns) / 1e3}};
    if (!e.args.empty()) ev["args"] = nlohmann::json::parse(e.args, nullptr, false);
    events.push_back(std::move(ev));
  }
  const std::string text =
      nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
  return WriteFileAtomically(path, text);
}

void TraceSpan(const char* name, const char* track, uint64_t start_ns, uint64_t end_ns,
               std::string args) {
  if (Trace* t = Trace::Active()) t->Span(name, track, start_ns, end_ns, std::move(args));
#if RINGFEED_HAVE_CUDA
  nvtxMarkA(name);
#endif
}

Trace::Scope::Scope(const char* name, const char* track)
    : name_(name), track_(track), start_(Active() ? NowNs() : 0) {
#if RINGFEED_HAVE_CUDA
  nvtxRangePushA(name);
#endif
}

Trace::Scope::~Scope() {
#if RINGFEED_HAVE_CUDA
  nvtxRangePop();
#endif
  if (Trace* t = Active(); t != nullptr && start_ != 0) t->Span(name_, track_, start_, NowNs());
}

}  // namespace rf
