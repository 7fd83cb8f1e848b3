// UringQueue: an IoQueue over io_uring (liburing).
//
// Ring setup asks for the best flags this kernel knows (DEFER_TASKRUN, SINGLE_ISSUER,
// COOP_TASKRUN, SUBMIT_ALL) and, as fio does, drops the newest one and retries each time the
// kernel answers -EINVAL, so one binary runs on kernels from 5.10 on. Registered files and
// registered buffers are used where the kernel allows them; where it does not, reads name the
// plain file descriptor and a plain buffer.
//
// The ring is created disabled and enabled by the first Submit(), so that with SINGLE_ISSUER it
// belongs to the thread that submits rather than to the one that created it: a reader may be
// built on one thread and handed to an I/O thread. From then on only that thread may use it.
//
// Thread safety: none; one thread owns a queue.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "io/io_queue.h"

namespace rf {

// One owner for one io_uring instance. Files and buffers registered with the ring are released
// with it (io_uring_queue_exit unregisters them).
class Ring {
 public:
  Ring() = default;
  ~Ring();
  Ring(Ring&& o) noexcept;
  Ring& operator=(Ring&& o) noexcept;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Sets up a ring of at least `entries` submission entries with `flags`; returns -errno on
  // failure (the kernel's answer, for the caller's retry loop).
  static int Init(unsigned entries, unsigned flags, Ring* out);

  // Enables a ring set up with IORING_SETUP_R_DISABLED; -errno on failure.
  int Enable();

  io_uring* get() { return &ring_; }
  bool is_open() const { return open_; }
  unsigned flags() const { return flags_; }

 private:
  void Close() noexcept;

  io_uring ring_{};
  bool open_ = false;
  unsigned flags_ = 0;
};

class UringQueue final : public IoQueue {
 public:
  // A queue with room for `depth` requests in flight. Fails with an IOError carrying the
  // kernel's errno where no ring can be set up: ENOSYS (a kernel without io_uring), EPERM
  // (io_uring disabled by sysctl or seccomp), ENOMEM.
  static Result<std::unique_ptr<UringQueue>> Create(uint32_t depth);

  // Never fails: where the kernel refuses to register the files, requests name the plain fds.
  Status RegisterFiles(std::span<const int> fds) override;
  // Unsupported (with the kernel's reason) where registration fails, e.g. over RLIMIT_MEMLOCK.
  Status RegisterBuffers(std::span<const iovec> buffers) override;
  uint32_t capacity() const override { return depth_; }
  void Prepare(const IoRequest& r) override;
  Status Submit() override;
  // Takes every completion the ring holds at once; enters the kernel only when fewer than `min`
  // are there.
  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override;
  const char* name() const override { return "io_uring"; }

  // Whether the ring's buffers are registered (for logs and tests).
  bool buffers_registered() const { return buffers_registered_; }

 private:
  UringQueue(Ring ring, uint32_t depth) : ring_(std::move(ring)), depth_(depth) {}
  Status Enable();
  uint32_t Reap(std::vector<IoCompletion>& out);

  Ring ring_;
  uint32_t depth_;
  bool enabled_ = false;
  bool files_registered_ = false;
  bool buffers_registered_ = false;
  std::vector<int> fds_;  // used when files are not registered
};

}  // namespace rf
