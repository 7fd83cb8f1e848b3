// CIFAR binary batches: records of one label byte (CIFAR-100: a coarse and a fine label byte;
// the fine one is kept) followed by 3 x 32 x 32 uint8 pixels, channel-major. Several files make
// one dataset, in the order given.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

inline constexpr uint32_t kCifarPixels = 3 * 32 * 32;

// Checks every file's size up front: each must hold whole records.
Result<std::unique_ptr<SampleSource>> OpenCifarSource(const std::vector<std::string>& paths,
                                                      bool cifar100);

}  // namespace rf::convert
