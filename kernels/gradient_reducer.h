// GradientReducer: how a data-parallel backend turns its rank's gradient into the one every rank
// applies: the mean over the ranks. kernels/ knows only this interface; dist/ implements it (over
// MPI for host memory, over NCCL for GPU memory), so the backends never see a communicator.
//
// Contract of MeanOverRanks(grads, n, stream):
//   - every rank calls it with the same n, once per training step, in the same order;
//   - host memory (stream null): on return `grads` holds the mean over the ranks of their values;
//   - GPU memory (stream a cudaStream_t): the reduction is queued on `stream` after the work
//     queued there so far, and `grads` holds the mean once the stream gets there; the host does
//     not wait; `stream` may be capturing a CUDA graph (every rank capturing at the same step),
//     and the reduction then runs at each replay of it;
//   - the result is the same bits on every rank, so ranks that start from the same parameters
//     apply the same update and stay identical (no parameter broadcast is ever needed).
// Errors: a failed collective comes back as Status::Aborted naming the call; the run cannot go
// on (the other ranks may be waiting in it), and the caller ends the job.
//
// Thread safety: the thread that drives the backend calls it.
#pragma once

#include <cstddef>

#include "core/status.h"

namespace rf {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual Status MeanOverRanks(float* grads, size_t n, void* stream) = 0;
};

}  // namespace rf
