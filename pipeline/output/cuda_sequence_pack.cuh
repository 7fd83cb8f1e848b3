// Packed token sequences (pipeline/sequences/sequence_loader.h) finished on the GPU: the loader
// packs each batch's tokens on the host in the dataset's own width (uint16 or int32 ids; fewer
// bytes through host memory and over PCIe), with the rows' lengths and the cu_seqlens, copies that
// to the GPU, and this kernel writes the batch: the tokens widened to int64 or int32 with pad past
// each row's length, the lengths and cu_seqlens as they are, and the position_ids from the
// cu_seqlens. One thread a token; host launcher only, no allocation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace rf::cuda {

// narrow: [rows, row] ids of narrow_bytes each (2: uint16, 4: int32, 8: int64), a row's ids past
// lengths[r] anything; lengths: [rows] int64; cu: [segments + 1] int32, the segments' starts in the
// inputs flattened ([rows, row - 1]), cu[0] = 0, cu[segments] = rows * (row - 1), a segment
// starting at each row's start (all of it memory the GPU reads). Writes tokens [rows, row] (int32
// where out_int32, else int64: the ids, pad_token past lengths[r]), out_lengths, out_cu and
// positions [rows, row - 1] int64 (each input's place in its segment). Buffers must not overlap.
cudaError_t WidenSequences(const void* narrow, uint32_t narrow_bytes, const int64_t* lengths,
                           const int32_t* cu, uint64_t segments, uint64_t rows, uint64_t row,
                           bool out_int32, int64_t pad_token, void* tokens, int64_t* out_lengths,
                           int32_t* out_cu, int64_t* positions, cudaStream_t stream);

}  // namespace rf::cuda
