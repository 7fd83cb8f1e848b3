// The predecessor's layout (v28b, see /work/shared/predecessor): images_train.bin holds float32
// in Fortran column-major order of a (samples x features) matrix, i.e. feature-major on disk:
// feature f of sample s is the float at index f * N + s, N = file bytes / (4 * features).
// labels_train.bin holds N int32 labels, 0-based.
//
// The files can be far larger than memory. Each Read(K) reads one block of K samples with one
// pread per feature (K contiguous floats each, strided by N floats between features; all of them
// advised to the kernel first, so a cold file has them in flight together), and Decode
// transposes any range of its samples to sample-major (transpose.h, cache-blocked), so memory is
// the blocks in flight whatever the file size.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

Result<std::unique_ptr<SampleSource>> OpenPredecessorSource(const std::string& images_path,
                                                            const std::string& labels_path,
                                                            uint32_t channels, uint32_t height,
                                                            uint32_t width);

// Transposes a (rows x cols) float matrix to (cols x rows), cache-blocked (transpose.h).
void TransposeFloats(const float* in, float* out, uint64_t rows, uint64_t cols);

}  // namespace rf::convert
