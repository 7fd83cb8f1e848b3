// NumPy .npy input: samples of shape (N, d1, ..., dk), k = 1 to 4, which the dataset keeps as its
// sample shape ((N,C,H,W) images are C,H,W; (N,2048) token rows are 2048), or (N,H,W,C) images
// with nhwc (each sample transposed to C,H,W); labels of shape (N,) and an integer dtype. Read in
// blocks straight from the files, never whole.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

// labels_path may be empty: the dataset then has no labels.
Result<std::unique_ptr<SampleSource>> OpenNpySource(const std::string& images_path,
                                                    const std::string& labels_path, bool nhwc);

}  // namespace rf::convert
