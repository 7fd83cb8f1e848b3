// RF_REQUIRE_GPU(): the first line of every test that needs a CUDA device; it skips the test
// where none can be used (CPU-only machines, CI, a build without CUDA), so the same suites run
// everywhere. The answer is the library's own (cuda/device.h), so tests and program agree; link
// rf_cuda (every CUDA library of the project does).
//
// RF_SKIP_UNDER_CUDA_TOOL(what): the first line after it in a test that measures the GPU rather
// than checks results (free device memory, when the GPU reached an event): it skips the test
// where a CUDA tool is attached (compute-sanitizer, found by the NV_SANITIZER_INJECTION_PORT_*
// variables it sets; Nsight tools, by CUDA_INJECTION64_PATH), whose own allocations and slowed
// API calls falsify such figures.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/device.h"

#define RF_REQUIRE_GPU()                                                     \
  do {                                                                       \
    if (!::rf::CudaDevicePresent()) GTEST_SKIP() << "no usable CUDA device"; \
  } while (0)

#define RF_SKIP_UNDER_CUDA_TOOL(what)                                        \
  do {                                                                       \
    if (std::getenv("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN") != nullptr || \
        std::getenv("CUDA_INJECTION64_PATH") != nullptr)                     \
      GTEST_SKIP() << "a CUDA tool is attached: it falsifies " << (what);    \
  } while (0)
