// Trace: the pipeline's timeline, for seeing the overlap. Each stage reports its spans (a chunk's
// read, its checksum, its copy to the GPU, the trainer's wait for data, each training step) to
// the one process-wide Trace while one is active (`ringfeed train --trace FILE.json`); Write()
// saves them as a Chrome trace (chrome://tracing, ui.perfetto.dev), one row per track ("read",
// "verify", "copy", "compute", ...). Every span is also an NVTX range in CUDA builds, so Nsight
// Systems shows the same names beside the CUDA calls and kernels.
//
// Cost: with no Trace active a span is one relaxed atomic load; with one, a mutex-guarded append
// (capped at kMaxEvents, past which spans are counted but dropped) and an NVTX call.
//
// Thread safety: Span and Scope may be used from any thread (the copy stages report from CUDA
// host-callback threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf {

class Trace {
 public:
  static constexpr size_t kMaxEvents = 4u << 20;

  // Makes `t` the active trace (null: none). The caller keeps it alive while it is active.
  static void Activate(Trace* t) { active_.store(t, std::memory_order_release); }
  static Trace* Active() { return active_.load(std::memory_order_acquire); }
  static uint64_t NowNs();

  // A finished span on `track` (a string literal), with optional JSON object text for "args".
  void Span(const char* name, const char* track, uint64_t start_ns, uint64_t end_ns,
            std::string args = {});
  // Writes the Chrome trace (temporary name, fsync, rename); IOError naming the file.
  Status Write(const std::string& path) const;
  size_t dropped() const { return dropped_; }

  // Reports [construction, destruction) as a span on the active trace, if any, and as an NVTX
  // range; `name` and `track` must be string literals (or outlive the scope).
  class Scope {
   public:
    Scope(const char* name, const char* track);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const char* name_;
    const char* track_;
    uint64_t start_;
  };

 private:
  struct Event {
    const char* name;
    const char* track;
    uint64_t start_ns, end_ns;
    std::string args;
  };
  static std::atomic<Trace*> active_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  size_t dropped_ = 0;
  const uint64_t origin_ns_ = NowNs();
};

// Reports a span to the active trace (if any) and marks it for NVTX: for spans whose start and
// end are seen on different threads or at different times (a read from submit to completion).
void TraceSpan(const char* name, const char* track, uint64_t start_ns, uint64_t end_ns,
               std::string args = {});

}  // namespace rf
