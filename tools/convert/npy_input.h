// NumPy .npy input: images of shape (N,H,W) (C = 1), (N,C,H,W), (N,H,W,C) with nhwc (each sample
// transposed to C,H,W), or (N,D) (C = H = 1); labels of shape (N,) and an integer dtype. Read
// in blocks straight from the files, never whole.
#pragma once

#include <memory>
#include <string>

#include "io/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

// labels_path may be empty: every label is then 0.
Result<std::unique_ptr<SampleSource>> OpenNpySource(const std::string& images_path,
                                                    const std::string& labels_path, bool nhwc);

}  // namespace rf::convert
