#include "io/faulty_io_queue.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace rf {

FaultyIoQueue::FaultyIoQueue(std::unique_ptr<IoQueue> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(std::move(plan)) {}

void FaultyIoQueue::Prepare(const IoRequest& r) {
  const uint32_t attempt = ++requests_[r.chunk];
  const ReadFault* f = plan_.Match(r.chunk, attempt);
  if (f != nullptr) ++faults_fired_;
  if (f != nullptr && f->kind == ReadFault::Kind::kError) {
    // What a failed device read may leave behind: the retry must overwrite all of it.
    std::memset(r.buf, 0xa5, r.len);
    staged_.push_back(IoCompletion{r.user_data, -f->err});
    return;
  }
  Tag tag{r.user_data, 0, std::chrono::milliseconds(0)};
  if (f != nullptr && f->kind == ReadFault::Kind::kShort) tag.short_bytes = f->short_bytes;
  if (f != nullptr && f->kind == ReadFault::Kind::kDelay) tag.delay = f->delay;
  uint32_t index;
  if (free_tags_.empty()) {
    index = static_cast<uint32_t>(tags_.size());
    tags_.push_back(tag);
  } else {
    index = free_tags_.back();
    free_tags_.pop_back();
    tags_[index] = tag;
  }
  IoRequest inner = r;
  inner.user_data = index;
  inner_->Prepare(inner);
  ++inner_prepared_;
}

Status FaultyIoQueue::Submit() {
  if (inner_prepared_ > 0) {
    RF_RETURN_IF_ERROR(inner_->Submit());
    inner_in_flight_ += inner_prepared_;
    inner_prepared_ = 0;
  }
  failed_.insert(failed_.end(), staged_.begin(), staged_.end());
  staged_.clear();
  return Status::Ok();
}

Status FaultyIoQueue::TakeInner(std::vector<IoCompletion>& out, bool block) {
  inner_out_.clear();
  RF_RETURN_IF_ERROR(inner_->Wait(inner_out_, block ? 1 : 0));
  const Clock::time_point now = Clock::now();
  for (const IoCompletion& c : inner_out_) {
    if (c.user_data >= tags_.size()) {
      return Status::Aborted("fault layer: the " + std::string(inner_->name()) +
                             " queue completed a request it was never given");
    }
    const Tag tag = tags_[c.user_data];
    free_tags_.push_back(static_cast<uint32_t>(c.user_data));
    --inner_in_flight_;
    IoCompletion done{tag.user_data, c.res, c.failure};
    if (tag.short_bytes != 0 && done.res > static_cast<int32_t>(tag.short_bytes)) {
      done.res = static_cast<int32_t>(tag.short_bytes);
    }
    if (tag.delay.count() > 0) {
      held_.push_back(Held{done, now + tag.delay});
    } else {
      out.push_back(done);
    }
  }
  return Status::Ok();
}

Status FaultyIoQueue::Wait(std::vector<IoCompletion>& out, uint32_t min) {
  const size_t start = out.size();
  for (;;) {
    out.insert(out.end(), failed_.begin(), failed_.end());
    failed_.clear();
    const Clock::time_point now = Clock::now();
    Clock::time_point next_due = Clock::time_point::max();
    for (size_t i = 0; i < held_.size();) {
      if (held_[i].due <= now) {
        out.push_back(held_[i].c);
        held_[i] = held_.back();
        held_.pop_back();
      } else {
        next_due = std::min(next_due, held_[i].due);
        ++i;
      }
    }
    if (inner_in_flight_ > 0) RF_RETURN_IF_ERROR(TakeInner(out, /*block=*/false));
    // Reordering gathers everything in flight before handing any of it over.
    const bool gather = plan_.reorder && min > 0 && inner_in_flight_ > 0;
    if (out.size() - start >= min && !gather) break;
    if (!held_.empty()) {
      // The inner queue cannot be waited on with a deadline: poll it while a delay runs out.
      std::this_thread::sleep_until(
          std::min(next_due, Clock::now() + std::chrono::milliseconds(1)));
      continue;
    }
    if (inner_in_flight_ == 0) {
      return Status::Aborted("fault layer: waiting for " + std::to_string(min) +
                             " completions with none in flight");
    }
    RF_RETURN_IF_ERROR(TakeInner(out, /*block=*/true));
  }
  if (plan_.reorder) std::reverse(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
  return Status::Ok();
}

Result<std::unique_ptr<IoQueue>> WrapWithFaultsFromEnv(std::unique_ptr<IoQueue> queue) {
  RF_ASSIGN_OR_RETURN(std::optional<FaultPlan> plan, FaultPlanFromEnv());
  if (!plan || !plan->has_read_faults()) return queue;
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr, "ringfeed: %s is set: injecting read faults (%s)\n", kFaultsEnv,
                 plan->ToString().c_str());
  }
  return std::unique_ptr<IoQueue>(std::make_unique<FaultyIoQueue>(std::move(queue), *plan));
}

}  // namespace rf
