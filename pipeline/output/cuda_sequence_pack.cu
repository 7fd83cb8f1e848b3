#include "pipeline/output/cuda_sequence_pack.cuh"

namespace rf::cuda {
namespace {

constexpr int kThreads = 256;

template <typename In, typename Out>
__global__ void WidenKernel(const In* __restrict__ narrow, const int64_t* __restrict__ lengths,
                            const int32_t* __restrict__ cu, uint64_t segments, uint64_t rows,
                            uint64_t row, Out pad, Out* __restrict__ tokens,
                            int64_t* __restrict__ out_lengths, int32_t* __restrict__ out_cu,
                            int64_t* __restrict__ positions) {
  const uint64_t i = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  // The small parts first (rows * row threads >= segments + 1 and >= rows).
  if (i <= segments) out_cu[i] = cu[i];
  if (i < rows) out_lengths[i] = lengths[i];
  if (i >= rows * row) return;
  const uint64_t r = i / row, c = i - r * row;
  tokens[i] = static_cast<int64_t>(c) < lengths[r] ? static_cast<Out>(narrow[i]) : pad;
  const uint64_t inputs = row - 1;
  if (c >= inputs) return;
  // The last segment starting at or before this input: cu[lo] <= at < cu[hi].
  const int64_t at = static_cast<int64_t>(r * inputs + c);
  uint64_t lo = 0, hi = segments;
  while (hi - lo > 1) {
    const uint64_t mid = (lo + hi) / 2;
    if (cu[mid] <= at) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  positions[r * inputs + c] = at - cu[lo];
}

template <typename In, typename Out>
cudaError_t Launch(const void* narrow, const int64_t* lengths, const int32_t* cu, uint64_t segments,
                   uint64_t rows, uint64_t row, int64_t pad, void* tokens, int64_t* out_lengths,
                   int32_t* out_cu, int64_t* positions, cudaStream_t stream) {
  const uint64_t blocks = (rows * row + kThreads - 1) / kThreads;
  WidenKernel<In, Out><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const In*>(narrow), lengths, cu, segments, rows, row, static_cast<Out>(pad),
      static_cast<Out*>(tokens), out_lengths, out_cu, positions);
  return cudaGetLastError();
}

template <typename Out>
cudaError_t LaunchFrom(uint32_t narrow_bytes, const void* narrow, const int64_t* lengths,
                       const int32_t* cu, uint64_t segments, uint64_t rows, uint64_t row,
                       int64_t pad, void* tokens, int64_t* out_lengths, int32_t* out_cu,
                       int64_t* positions, cudaStream_t stream) {
  switch (narrow_bytes) {
    case 2:
      return Launch<uint16_t, Out>(narrow, lengths, cu, segments, rows, row, pad, tokens,
                                   out_lengths, out_cu, positions, stream);
    case 4:
      return Launch<int32_t, Out>(narrow, lengths, cu, segments, rows, row, pad, tokens,
                                  out_lengths, out_cu, positions, stream);
    case 8:
      return Launch<int64_t, Out>(narrow, lengths, cu, segments, rows, row, pad, tokens,
                                  out_lengths, out_cu, positions, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t WidenSequences(const void* narrow, uint32_t narrow_bytes, const int64_t* lengths,
                           const int32_t* cu, uint64_t segments, uint64_t rows, uint64_t row,
                           bool out_int32, int64_t pad_token, void* tokens, int64_t* out_lengths,
                           int32_t* out_cu, int64_t* positions, cudaStream_t stream) {
  if (rows == 0 || row < 2) return cudaErrorInvalidValue;
  if (rows * row / kThreads >= (uint64_t{1} << 31)) return cudaErrorInvalidValue;
  return out_int32 ? LaunchFrom<int32_t>(narrow_bytes, narrow, lengths, cu, segments, rows, row,
                                         pad_token, tokens, out_lengths, out_cu, positions, stream)
                   : LaunchFrom<int64_t>(narrow_bytes, narrow, lengths, cu, segments, rows, row,
                                         pad_token, tokens, out_lengths, out_cu, positions, stream);
}

}  // namespace rf::cuda
