// SequenceLoader (pipeline/sequences/sequence_loader.h)'s threads, the header's "Threads": the
// worker that packs batches ahead (Work), the putter that puts those packed narrow on the device
// (PutLoop), their start and stop, and Next's taking of the oldest batch they made. The packing of
// one batch (Pack, Put), the creation and the state are sequence_loader.cc's.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <utility>

#include "core/clock.h"
#include "core/thread_name.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/sequences/sequence_loader.h"
#include "pipeline/sequences/sequence_source.h"

namespace rf {

void SequenceLoader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  room_.notify_all();
  to_put_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (putter_.joinable()) putter_.join();
  std::lock_guard<std::mutex> lock(mu_);
  made_.clear();
  to_put_.clear();
  failed_ = false;
}

void SequenceLoader::Start() {
  handed_ = StateNow();
  stop_ = false;
  packed_ = 0;
  putted_ = 0;
  worker_ = std::thread([this] { Work(); });
  if (narrow_on_host_) putter_ = std::thread([this] { PutLoop(); });
}

bool SequenceLoader::Deliver(Packed& p, Result<std::shared_ptr<LoadedBatch>> b) {
  const bool ok = b.ok();
  stats_ = p.stats;
  made_.push_back(Made{std::move(b), ok ? std::move(p.after) : SequenceState{}});
  if (!ok) failed_ = true;
  return ok;
}

void SequenceLoader::Work() {
  NameThread("rf-pack");
  const uint32_t ahead = std::max<uint32_t>(options_.output_buffers, 1);
  // This thread's CUDA calls on the loader's GPU (not the process's device 0: a rank's other).
  const Status bound = device_->BindThread();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The batches made and in the making hold at most `ahead` of the pool's buffers.
      room_.wait(lock, [&] { return stop_ || made_.size() + to_put_.size() + putting_ < ahead; });
      if (stop_) return;
    }
    Packed p;
    p.error = bound.ok() ? Pack(&p) : bound;
    const bool ok = p.error.ok();
    if (ok) p.after = StateNow();
    p.stats = SourceStats();
    if (narrow_on_host_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        to_put_.push_back(std::move(p));
      }
      to_put_cv_.notify_one();
    } else {
      Result<std::shared_ptr<LoadedBatch>> b = Put(p);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!Deliver(p, std::move(b))) return;
      }
      cv_.notify_all();
    }
    if (!ok) return;  // Next() hands the error out and restarts from the last batch handed out
  }
}

void SequenceLoader::PutLoop() {
  NameThread("rf-put");
  const Status bound = device_->BindThread();
  for (;;) {
    Packed p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      to_put_cv_.wait(lock, [&] { return stop_ || !to_put_.empty(); });
      if (stop_) return;
      p = std::move(to_put_.front());
      to_put_.pop_front();
      putting_ = 1;
    }
    Result<std::shared_ptr<LoadedBatch>> b = bound.ok() ? Put(p) : bound;
    bool ok = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (p.slotted) ++putted_;  // the slot's copy is queued (or it failed and the putter stops)
      putting_ = 0;
      ok = Deliver(p, std::move(b));
    }
    cv_.notify_all();
    room_.notify_all();
    if (!ok) return;
  }
}

SequenceState SequenceLoader::StateNow() const {
  SequenceState s;
  s.rows = rows_;
  s.drawn = drawn_;
  s.node_ranks = options_.pipeline.order.node_ranks;
  for (const auto& src : sources_) s.sources.push_back(src->st);
  return s;
}

Result<std::shared_ptr<LoadedBatch>> SequenceLoader::Next() {
  Made m{std::shared_ptr<LoadedBatch>(), {}};
  {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t asked = SteadyNowNs();
    if (clock_start_ns_ == 0) clock_start_ns_ = asked;
    while (made_.empty()) {
      // Waits in steps, so that the caller's poll (a signal, say) can end the wait.
      cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !made_.empty(); });
      if (made_.empty() && options_.poll) {
        lock.unlock();
        const Status st = options_.poll();
        if (!st.ok()) return st;
        lock.lock();
      }
    }
    wait_seconds_ += (SteadyNowNs() - asked) * 1e-9;
    m = std::move(made_.front());
    made_.pop_front();
  }
  room_.notify_all();
  if (!m.batch.ok()) {
    // Restart from where the batches handed out leave off; the error goes to the caller.
    const Status error = m.batch.status();
    const SequenceState at = handed_;
    Stop();
    const Status st = Restore(at);
    return st.ok() ? error : st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  handed_ = std::move(m.after);
  if (*m.batch) ++handed_batches_;
  return std::move(*m.batch);
}

}  // namespace rf
