// HostReducer: the GradientReducer (kernels/gradient_reducer.h) for gradients in host memory (the
// CPU backend), over a World's MPI collectives.
//
// The mean is computed so that it is the same bits on every rank and in every run with the same
// world size: the gradient is cut into size() slices; rank j receives every rank's slice j
// (AllToAll), sums them in rank order in double precision and divides by the rank count once,
// rounding to float once; then every rank receives every slice (AllGather). (MPI_Allreduce
// promises neither the same bits on every rank nor a fixed order of the sum.) Each rank sends
// and receives about 2x the gradient per step, whatever the rank count.
//
// Memory: three buffers of about the gradient's size, sized by the first call (and grown only
// if a later call is larger); no step after the first allocates.
//
// Thread safety: the World's thread calls it. The World must outlive it.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/gradient_reducer.h"
#include "parallel/world.h"

namespace rf {

class HostReducer final : public GradientReducer {
 public:
  explicit HostReducer(World& world) : world_(world) {}
  // stream must be null: the gradient is in host memory.
  Status MeanOverRanks(float* grads, size_t n, void* stream) override;

 private:
  World& world_;
  std::vector<float> send_, recv_, gathered_;
};

}  // namespace rf
