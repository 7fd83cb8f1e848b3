// FakeIoQueue: an IoQueue for tests that reads the real files with pread(2) but can be told to
// answer a given request (by its number, counting every Prepare from 0) or every request at a
// given file offset with a short read, or with -errno once, a few times or always. It completes
// requests only in Wait(), newest first, so completions arrive out of order and the reader has
// many reads in flight; it records the most it ever held, and flags (as a test failure) a
// Prepare beyond its capacity or a buf_index whose buffer does not hold the request.
//
// Thread safety: none.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "io/io_queue.h"

namespace rf::testing {

class FakeIoQueue final : public IoQueue {
 public:
  static constexpr uint32_t kAlways = std::numeric_limits<uint32_t>::max();

  explicit FakeIoQueue(uint32_t capacity, bool register_buffers = true)
      : capacity_(capacity), register_buffers_(register_buffers) {}

  // Request number `n` reads only its first `bytes` bytes (0: end of file).
  void ShortReadAtRequest(uint64_t n, uint32_t bytes) { by_request_[n] = Fault{bytes, 0, 1}; }
  // Request number `n` fails with -err.
  void ErrorAtRequest(uint64_t n, int err) { by_request_[n] = Fault{0, err, 1}; }
  // The next `times` requests of `file` at `offset` read only `bytes` bytes.
  void ShortReadAtOffset(uint32_t file, uint64_t offset, uint32_t bytes, uint32_t times = 1) {
    by_offset_[{file, offset}] = Fault{bytes, 0, times};
  }
  // The next `times` requests of `file` at `offset` (kAlways: every one) fail with -err.
  void ErrorAtOffset(uint32_t file, uint64_t offset, int err, uint32_t times = 1) {
    by_offset_[{file, offset}] = Fault{0, err, times};
  }

  uint32_t max_in_flight() const { return max_in_flight_; }
  uint64_t requests() const { return requests_; }
  uint64_t faults_fired() const { return faults_fired_; }
  bool buffers_registered() const { return !buffers_.empty(); }

  Status RegisterFiles(std::span<const int> fds) override {
    fds_.assign(fds.begin(), fds.end());
    return Status::Ok();
  }
  Status RegisterBuffers(std::span<const iovec> buffers) override {
    if (!register_buffers_) return Status::Unsupported("fake: no registered buffers");
    buffers_.assign(buffers.begin(), buffers.end());
    return Status::Ok();
  }
  uint32_t capacity() const override { return capacity_; }

  void Prepare(const IoRequest& r) override {
    if (held() >= capacity_) {
      ADD_FAILURE() << "Prepare beyond the queue's capacity " << capacity_;
    }
    if (r.file >= fds_.size()) ADD_FAILURE() << "request names file " << r.file;
    if (r.buf_index >= 0) {
      const auto* base = static_cast<const uint8_t*>(buffers_.at(r.buf_index).iov_base);
      const auto* p = static_cast<const uint8_t*>(r.buf);
      if (p < base || p + r.len > base + buffers_[r.buf_index].iov_len) {
        ADD_FAILURE() << "request is not inside registered buffer " << r.buf_index;
      }
    }
    prepared_.push_back(Pending{r, requests_++});
    max_in_flight_ = std::max(max_in_flight_, held());
  }

  Status Submit() override {
    submitted_.insert(submitted_.end(), prepared_.begin(), prepared_.end());
    prepared_.clear();
    return Status::Ok();
  }

  Status Wait(std::vector<IoCompletion>& out, uint32_t min) override {
    if (min > submitted_.size()) {
      ADD_FAILURE() << "Wait for " << min << " with " << submitted_.size() << " submitted";
      return Status::Aborted("fake: wait would block forever");
    }
    // Newest first: a reader that assumes completion order shows it.
    for (auto it = submitted_.rbegin(); it != submitted_.rend(); ++it) {
      out.push_back(IoCompletion{it->req.user_data, Perform(*it)});
    }
    submitted_.clear();
    return Status::Ok();
  }

  const char* name() const override { return "fake"; }

 private:
  struct Fault {
    uint32_t short_bytes = 0;
    int err = 0;  // > 0: fail with -err
    uint32_t times = 1;
  };
  struct Pending {
    IoRequest req;
    uint64_t number;
  };

  uint32_t held() const { return static_cast<uint32_t>(prepared_.size() + submitted_.size()); }

  // Applies a planted fault if one matches, else reads for real.
  int32_t Perform(const Pending& p) {
    const IoRequest& r = p.req;
    uint32_t len = r.len;
    Fault* f = nullptr;
    if (auto it = by_request_.find(p.number); it != by_request_.end()) f = &it->second;
    if (auto it = by_offset_.find({r.file, r.offset}); f == nullptr && it != by_offset_.end()) {
      f = &it->second;
    }
    if (f != nullptr && f->times > 0) {
      if (f->times != kAlways) --f->times;
      ++faults_fired_;
      if (f->err > 0) return -f->err;
      len = std::min(len, f->short_bytes);
      if (len == 0) return 0;
    }
    ssize_t n = ::pread(fds_[r.file], r.buf, len, static_cast<off_t>(r.offset));
    return n < 0 ? -errno : static_cast<int32_t>(n);
  }

  uint32_t capacity_;
  bool register_buffers_;
  std::vector<int> fds_;
  std::vector<iovec> buffers_;
  std::vector<Pending> prepared_, submitted_;
  std::map<uint64_t, Fault> by_request_;
  std::map<std::pair<uint32_t, uint64_t>, Fault> by_offset_;
  uint64_t requests_ = 0;
  uint64_t faults_fired_ = 0;
  uint32_t max_in_flight_ = 0;
};

}  // namespace rf::testing
