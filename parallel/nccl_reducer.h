// NcclReducer: the GradientReducer (kernels/gradient_reducer.h) for gradients in GPU memory (the
// CUDA backend): one ncclAllReduce with ncclAvg per step, queued on the backend's compute stream
// between its backward pass and its update, so the host never waits for it; the backend captures
// it into its step's CUDA graph (NCCL supports capture in one GPU a process). NCCL's ring and tree
// all-reduce leave the same bits on every rank. The gradient is reduced in float32 in every
// precision: the CUDA backend's gradients are float32 (bf16 mode keeps float32 master weights and
// gradients), and this model's gradient (about a megabyte) is latency-bound, not bandwidth-bound.
//
// Set-up: rank 0 makes NCCL's unique id, the World broadcasts it, and every rank joins the
// communicator on its GPU (ncclCommInitRank). NVLink multicast (NVLS) stays off unless the
// environment names NCCL_NVLS_ENABLE: on shared machines it can take GPUs out of service.
//
// Failures: a failed call returns Aborted naming it. AsyncError() asks NCCL, without blocking and
// from any thread, whether the communicator has failed (a peer gone, a network error): the
// training thread may then be blocked behind kernels that wait for a peer that will never come,
// so a watchdog thread polls it and calls Abort(), which aborts the communicator (ncclCommAbort
// frees the GPU from those kernels) before the job is ended.
//
// Ownership and lifetime: owns the communicator; the destructor destroys it (after the stream's
// work), or does nothing after Abort. Destroy it after every CUDA graph that captured its
// reduction (the backend that uses it): ncclCommDestroy waits until those graphs are gone. The
// World must outlive Create only.
// Thread safety: MeanOverRanks on the backend's thread; AsyncError and Abort from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "kernels/gradient_reducer.h"
#include "parallel/world.h"

typedef struct ncclComm* ncclComm_t;

namespace rf {

class NcclReducer final : public GradientReducer {
 public:
  // Collective over `world`: every rank calls it, with its own GPU `device` (distinct on one
  // machine).
  static Result<std::unique_ptr<NcclReducer>> Create(World& world, int device);
  ~NcclReducer() override;

  // `grads`: n floats in device memory; `stream`: the cudaStream_t the reduction is queued on.
  Status MeanOverRanks(float* grads, size_t n, void* stream) override;

  // OK, or Aborted naming NCCL's asynchronous error. Any thread.
  Status AsyncError() const;
  // Aborts the communicator (pending NCCL kernels end); later calls fail. Any thread, once.
  void Abort();
  // "NCCL 2.28.9".
  std::string Describe() const;

 private:
  NcclReducer() = default;
  ncclComm_t comm_ = nullptr;
  int device_ = 0;
  std::atomic<bool> aborted_{false};
};

}  // namespace rf
