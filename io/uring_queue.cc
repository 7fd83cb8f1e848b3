#include "io/uring_queue.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

// ThreadSanitizer builds (GCC defines __SANITIZE_THREAD__, Clang answers __has_feature).
#if defined(__SANITIZE_THREAD__)
#define RF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RF_TSAN 1
#endif
#endif
#if RF_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace rf {
namespace {

// Optional setup flags, newest kernel feature first: on -EINVAL the first one still set is
// dropped and setup retried. DEFER_TASKRUN needs SINGLE_ISSUER, so it goes before it.
constexpr unsigned kOptionalFlags[] = {
    IORING_SETUP_DEFER_TASKRUN,  // 6.1: completions run only when we wait for them
    IORING_SETUP_SINGLE_ISSUER,  // 6.0
    IORING_SETUP_COOP_TASKRUN,   // 5.19: no IPI to interrupt us for task work
    IORING_SETUP_SUBMIT_ALL,     // 5.18: one bad request does not stop the batch
    IORING_SETUP_R_DISABLED,     // 5.10: enabled by the first Submit(), on the issuing thread
};

// How many completions Reap takes from the ring per peek.
constexpr unsigned kReapBatch = 64;

// liburing maps a ring's memory with its own system calls (liburing.so imports no mmap), so
// ThreadSanitizer sees no ring mapped or unmapped. A ring the kernel places where another
// thread's closed ring was inherits that thread's accesses in TSan's shadow memory, which TSan
// then reports as a race with the new ring's owner (a feeder's ring at the address of a finished
// feeder's that nobody had joined yet, in pipeline_loader_test). What orders them is the kernel:
// the old ring was unmapped before the new one was mapped there. Say so to TSan, page by page: a
// ring's owner releases every page of its ring as it closes it, a new ring's owner acquires every
// page of its ring as it sets it up. Elsewhere these are nothing.
enum class RingPages { kAcquire, kRelease };
void AnnounceRingPages([[maybe_unused]] const io_uring& r, [[maybe_unused]] RingPages what) {
#if RF_TSAN
  const auto each_page = [what](const void* start, size_t bytes) {
    const auto* p = static_cast<const char*>(start);
    for (size_t off = 0; off < bytes; off += 4096) {
      void* page = const_cast<char*>(p + off);
      if (what == RingPages::kAcquire) {
        __tsan_acquire(page);
      } else {
        __tsan_release(page);
      }
    }
  };
  each_page(r.sq.ring_ptr, r.sq.ring_sz);
  if (r.cq.ring_ptr != r.sq.ring_ptr) each_page(r.cq.ring_ptr, r.cq.ring_sz);  // no SINGLE_MMAP
  each_page(r.sq.sqes, r.sq.ring_entries * sizeof(io_uring_sqe));
#endif
}

}  // namespace

Ring::~Ring() { Close(); }

Ring::Ring(Ring&& o) noexcept
    : ring_(o.ring_), open_(std::exchange(o.open_, false)), flags_(o.flags_) {}

Ring& Ring::operator=(Ring&& o) noexcept {
  if (this != &o) {
    Close();
    ring_ = o.ring_;
    open_ = std::exchange(o.open_, false);
    flags_ = o.flags_;
  }
  return *this;
}

void Ring::Close() noexcept {
  if (open_) {
    AnnounceRingPages(ring_, RingPages::kRelease);
    io_uring_queue_exit(&ring_);
  }
  open_ = false;
}

int Ring::Enable() {
  // liburing 2.3 declares io_uring_enable_rings() but does not export it, hence the raw call.
  long ret =
      ::syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
  return ret < 0 ? -errno : 0;
}

int Ring::Init(unsigned entries, unsigned flags, Ring* out) {
  io_uring_params p;
  std::memset(&p, 0, sizeof(p));
  p.flags = flags;
  Ring r;
  int ret = io_uring_queue_init_params(entries, &r.ring_, &p);
  if (ret < 0) return ret;
  AnnounceRingPages(r.ring_, RingPages::kAcquire);
  r.open_ = true;
  r.flags_ = flags;
  *out = std::move(r);
  return 0;
}

Result<std::unique_ptr<UringQueue>> UringQueue::Create(uint32_t depth) {
  if (depth == 0) return Status::InvalidArgument("io_uring queue depth must be at least 1");
  unsigned flags = 0;
  for (unsigned f : kOptionalFlags) flags |= f;
  // For measurements only: RINGFEED_URING_DEFER_TASKRUN=0 leaves deferred task running off, to
  // compare completion handling with tools that do not use it (fio 3.33).
  if (const char* e = std::getenv("RINGFEED_URING_DEFER_TASKRUN"); e && std::string(e) == "0")
    flags &= ~IORING_SETUP_DEFER_TASKRUN;
  Ring ring;
  int ret;
  while (true) {
    ret = Ring::Init(depth, flags, &ring);
    if (ret != -EINVAL) break;
    unsigned drop = 0;
    for (unsigned f : kOptionalFlags) {
      if (flags & f) {
        drop = f;
        break;
      }
    }
    if (drop == 0) break;  // -EINVAL with no optional flag left: give up below
    flags &= ~drop;
  }
  if (ret < 0) return Status::IOError("", "io_uring_setup failed", -ret);
  return std::unique_ptr<UringQueue>(new UringQueue(std::move(ring), depth));
}

Status UringQueue::RegisterFiles(std::span<const int> fds) {
  fds_.assign(fds.begin(), fds.end());
  // Registered files spare the kernel an fd lookup and reference per request. A kernel that
  // refuses (RLIMIT_NOFILE, an old kernel) still reads through the plain fds.
  files_registered_ =
      io_uring_register_files(ring_.get(), fds_.data(), static_cast<unsigned>(fds_.size())) == 0;
  return Status::Ok();
}

Status UringQueue::RegisterBuffers(std::span<const iovec> buffers) {
  int ret =
      io_uring_register_buffers(ring_.get(), buffers.data(), static_cast<unsigned>(buffers.size()));
  if (ret < 0) {
    buffers_registered_ = false;
    return Status::Unsupported(std::string("io_uring_register_buffers: ") + std::strerror(-ret) +
                               " (errno " + std::to_string(-ret) + ")");
  }
  buffers_registered_ = true;
  return Status::Ok();
}

void UringQueue::Prepare(const IoRequest& r) {
  // Never null: at most depth_ requests are queued or in flight (the caller's promise), the
  // submission ring has at least depth_ entries, and every Submit() empties it.
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  const bool fixed_file = files_registered_ && r.fd < 0;
  int fd = r.fd >= 0 ? r.fd : fixed_file ? static_cast<int>(r.file) : fds_[r.file];
  if (r.buf_index >= 0 && buffers_registered_) {
    io_uring_prep_read_fixed(sqe, fd, r.buf, r.len, r.offset, r.buf_index);
  } else {
    io_uring_prep_read(sqe, fd, r.buf, r.len, r.offset);
  }
  if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, r.user_data);
}

Status UringQueue::Enable() {
  if (enabled_) return Status::Ok();
  if (ring_.flags() & IORING_SETUP_R_DISABLED) {
    int ret = ring_.Enable();
    if (ret < 0) return Status::IOError("", "io_uring cannot enable the ring", -ret);
  }
  enabled_ = true;
  return Status::Ok();
}

Status UringQueue::Submit() {
  if (io_uring_sq_ready(ring_.get()) == 0) return Status::Ok();
  RF_RETURN_IF_ERROR(Enable());
  // The CQ ring (twice the SQ ring) always has room for every request in flight, so the kernel
  // never answers -EBUSY for lack of it; -EINTR and -EAGAIN (no memory for a request, right now)
  // are tried again a bounded number of times.
  for (int attempt = 0; io_uring_sq_ready(ring_.get()) > 0; ++attempt) {
    int ret = io_uring_submit(ring_.get());
    if (ret >= 0) continue;
    if ((ret == -EINTR || ret == -EAGAIN) && attempt < 1000) continue;
    return Status::IOError("", "io_uring submit failed", -ret);
  }
  return Status::Ok();
}

uint32_t UringQueue::Reap(std::vector<IoCompletion>& out) {
  io_uring_cqe* cqes[kReapBatch];
  uint32_t got = 0;
  while (true) {
    unsigned n = io_uring_peek_batch_cqe(ring_.get(), cqes, kReapBatch);
    for (unsigned i = 0; i < n; ++i) {
      out.push_back(IoCompletion{io_uring_cqe_get_data64(cqes[i]), cqes[i]->res});
    }
    io_uring_cq_advance(ring_.get(), n);
    got += n;
    if (n < kReapBatch) return got;
  }
}

Status UringQueue::Wait(std::vector<IoCompletion>& out, uint32_t min) {
  uint32_t got = Reap(out);
  if (got == 0 && min == 0 && enabled_ && (ring_.flags() & IORING_SETUP_DEFER_TASKRUN)) {
    // With DEFER_TASKRUN finished reads are posted only when we enter the kernel for them.
    io_uring_get_events(ring_.get());
    got = Reap(out);
  }
  while (got < min) {
    RF_RETURN_IF_ERROR(Enable());
    io_uring_cqe* cqe = nullptr;
    int ret = io_uring_wait_cqe_nr(ring_.get(), &cqe, min - got);
    if (ret == -EINTR || ret == -EAGAIN) continue;
    if (ret < 0) return Status::IOError("", "io_uring wait failed", -ret);
    got += Reap(out);
  }
  return Status::Ok();
}

}  // namespace rf
