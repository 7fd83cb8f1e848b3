// RF_REQUIRE_GPU(): the first line of every test that needs a CUDA device; it skips the test
// where none can be used (CPU-only machines, CI, a build without CUDA), so the same suites run
// everywhere. The answer is the library's own (cuda/device.h), so tests and program agree; link
// rf_cuda (every CUDA library of the project does).
#pragma once

#include <gtest/gtest.h>

#include "cuda/device.h"

#define RF_REQUIRE_GPU()                                                     \
  do {                                                                       \
    if (!::rf::CudaDevicePresent()) GTEST_SKIP() << "no usable CUDA device"; \
  } while (0)
