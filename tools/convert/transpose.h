// Cache-blocked transposes of matrices of 4-byte elements (the predecessor's float32 files are
// a features x samples matrix on disk; a dataset holds samples x features).
#pragma once

#include <cstdint>

namespace rf::convert {

// out = the transpose of in: in is rows x cols, row r at in + r * in_stride; out is cols x rows,
// row c at out + c * out_stride (strides in elements, at least cols and rows). Elements are
// moved as bits (a NaN's payload stays). in and out must not overlap.
//
// It walks in stripes of 16 columns (a 64-byte cache line of each input row) down all the rows,
// moving 4x4 tiles through registers, so each input line is read once and the stripe's 16 output
// rows are written front to back: the memory traffic is one read and one write of the matrix,
// whatever its shape.
void Transpose4(const void* in, uint64_t in_stride, void* out, uint64_t out_stride, uint64_t rows,
                uint64_t cols);

}  // namespace rf::convert
