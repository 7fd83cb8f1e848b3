// AdaptiveCpuShare: how much of each batch the nvJPEG decoder
// (pipeline/images/nvjpeg_image_decoder.cc) hands its CPU threads where image_cpu_share is auto
// (negative): as much as keeps the consumer from waiting, between a floor (the share at which the
// two decoders finish a batch together, the fastest split) and 1 (every record on the CPU threads,
// nvJPEG idle).
//
// Why: nvJPEG's hardware decode makes CUDA calls and launches a kernel for every image, and a
// model on the same GPU slows beside them (ResNet-50 on one H200: 0.93 of its speed alone with
// the floor's share, 1.00 with every record on the CPU threads; docs/performance.md). The GPU
// decode is worth that cost only where the CPU threads cannot keep up with the consumer. So the
// share starts at the floor and rises while the consumer finds its batches ready (after two in
// a row: see kReadyRun). Where the consumer had to wait, it moves away from the decoder that came
// last: down where the CPU threads finished their part after nvJPEG did, up where nvJPEG came
// last (beside a model nvJPEG decodes several times slower than alone, 0.3 ms an image instead
// of 0.05 on an H200: at the floor's share it can be the one the model waits for). So:
//   - a consumer slower than the CPU threads (a model that takes longer a step than the threads
//     take a batch) never waits, and the share reaches 1;
//   - a consumer faster than both decoders together waits for at least every other batch, and
//     the share stays near the split where both finish together, at the floor or above it;
//   - in between, the share settles where the CPU threads carry what they can and nvJPEG the rest.
// What this costs: which decoder takes a record depends on timing, and the two decoders' pixels
// differ by their rounding (the crops do not: they are keyed by seed, epoch and sample index).
// A fixed share (image_cpu_share from 0 to 1) repeats bit for bit.
//
// Threads: Waited from the consumer's thread, share() from any (the decoder's drivers); the
// share is one atomic.
#pragma once

#include <atomic>
#include <cstdint>

namespace rf {

class AdaptiveCpuShare {
 public:
  // A wait longer than this is the consumer waiting for the decode.
  static constexpr uint64_t kLateNs = 1'000'000;
  // The share's steps: up after kReadyRun batches in a row found ready or a wait for nvJPEG,
  // down after a wait for the CPU threads (down faster than up, so that a backlog on the CPU
  // threads drains before it grows).
  static constexpr double kRise = 0.05;
  static constexpr double kFall = 0.10;
  // The share rises after this many batches in a row found ready. With two nvJPEG drivers a
  // decode-bound consumer finds every other batch ready (the second of two decoded side by
  // side); a consumer the decoders are ahead of finds them all ready.
  static constexpr uint32_t kReadyRun = 2;

  // `floor` from 0 to 1.
  explicit AdaptiveCpuShare(double floor);

  // The share for the next batch.
  double share() const { return share_.load(std::memory_order_relaxed); }
  double floor() const { return floor_; }
  // The consumer's wait for its last batch, and whether the CPU threads finished their part of
  // it after nvJPEG finished the rest (false where they had none of it); the caller leaves out a
  // batch submitted after the consumer's previous one came (it had no time to be decoded: the
  // first batches, a new epoch).
  void Waited(uint64_t ns, bool cpu_last);

 private:
  const double floor_;
  std::atomic<double> share_;
  uint32_t ready_ = 0;  // batches found ready in a row (Waited's thread)
};

}  // namespace rf
