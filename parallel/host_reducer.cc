#include "parallel/host_reducer.h"

#include <algorithm>

namespace rf {

Status HostReducer::MeanOverRanks(float* grads, size_t n, void* stream) {
  if (stream != nullptr) return Status::InvalidArgument("HostReducer reduces host memory only");
  const size_t ranks = world_.size();
  if (ranks == 1 || n == 0) return Status::Ok();
  const size_t slice = (n + ranks - 1) / ranks;
  send_.resize(ranks * slice);
  recv_.resize(ranks * slice);
  gathered_.resize(ranks * slice);
  std::copy_n(grads, n, send_.begin());
  std::fill(send_.begin() + n, send_.end(), 0.f);  // the last slice's tail, where n % ranks != 0
  const size_t slice_bytes = slice * sizeof(float);
  RF_RETURN_IF_ERROR(world_.AllToAll(send_.data(), slice_bytes, recv_.data()));
  // recv_[r * slice + i]: rank r's value of element (my slice) + i. Summed in rank order.
  float* mine = send_.data();  // reused: this rank's reduced slice
  for (size_t i = 0; i < slice; ++i) {
    double sum = 0;
    for (size_t r = 0; r < ranks; ++r) sum += recv_[r * slice + i];
    mine[i] = static_cast<float>(sum / static_cast<double>(ranks));
  }
  RF_RETURN_IF_ERROR(world_.AllGather(mine, slice_bytes, gathered_.data()));
  std::copy_n(gathered_.begin(), n, grads);
  return Status::Ok();
}

}  // namespace rf
