// Token ids on their way into a tokens dataset: the checks every corpus input shares (no id is
// negative, none reaches the vocabulary size or the stored dtype's range) fused with the copy to
// the stored dtype, over blocks of ids, and the first pass that finds whether every id fits
// uint16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

// The largest id `t` holds (uint16 65535, int32 2^31 - 1, int64 2^63 - 1).
uint64_t MaxIdOf(DType t);

// The index of the first of the n integer ids of `in` at src that is negative or above `max_id`
// (at most INT64_MAX), or n where none is. Reads only.
size_t FirstIdOutside(Elem in, const void* src, size_t n, uint64_t max_id);

// Copies n integer ids of `in` to the id dtype `out` (uint16, int32, int64) and returns
// FirstIdOutside(in, src, n, max_id): dst holds the ids below that index (the rest of dst may
// be written too). max_id is at most MaxIdOf(out). src and dst must not overlap.
size_t ConvertIds(Elem in, const void* src, DType out, void* dst, size_t n, uint64_t max_id);

// Copies n stored ids (uint16, int32, int64) to the integer element type `out` (an export's),
// and returns the index of the first that `out` cannot hold, or n. src and dst must not overlap.
size_t IdsToElem(DType in, const void* src, Elem out, void* dst, size_t n);

// Whether no id of `in` can ever lie outside [0, max_id], so that checking is skipped: an
// unsigned type whose largest value is at most max_id.
bool IdsAlwaysWithin(Elem in, uint64_t max_id);

}  // namespace rf::convert
