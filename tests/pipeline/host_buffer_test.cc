#include "pipeline/stage/host_buffer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "cuda/device.h"

namespace rf {
namespace {

// kB of transparent huge pages backing [begin, end) of this process, from /proc/self/smaps;
// -1 where it cannot be told.
long HugePagesKb(const void* begin, const void* end) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  std::string line;
  bool inside = false;
  long kb = 0;
  while (std::getline(smaps, line)) {
    unsigned long lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = lo < reinterpret_cast<uintptr_t>(end) && hi > reinterpret_cast<uintptr_t>(begin);
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      kb += std::stol(line.substr(14));
    }
  }
  return kb;
}

bool TransparentHugePagesOff() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s((std::istreambuf_iterator<char>(f)), {});
  return s.empty() || s.find("[never]") != std::string::npos;
}

TEST(HostBuffer, SmallBufferIsPageAlignedZeroedAndWritable) {
  auto b = HostBuffer::Allocate(5000, PinMode::kOff);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->size(), 8192u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 4096, 0u);
  for (size_t i = 0; i < b->size(); ++i) ASSERT_EQ(b->data()[i], 0) << i;
  std::memset(b->data(), 0xab, b->size());
  EXPECT_FALSE(b->pinned());
}

TEST(HostBuffer, LargeBufferIsHugePageAlignedAndBackedByHugePagesWhereTheKernelHasThem) {
  const size_t bytes = 16 << 20;
  auto b = HostBuffer::Allocate(bytes, PinMode::kOff);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % HostBuffer::kHugePage, 0u);
  if (TransparentHugePagesOff()) GTEST_SKIP() << "transparent huge pages are off here";
  const long kb = HugePagesKb(b->data(), b->data() + bytes);
  if (kb < 0) GTEST_SKIP() << "/proc/self/smaps unreadable";
  // The kernel may fall back to small pages under memory fragmentation; most should be huge.
  EXPECT_GE(kb, static_cast<long>(bytes / 1024 / 2)) << "kB of huge pages";
}

TEST(HostBuffer, MoveLeavesTheSourceEmpty) {
  auto b = HostBuffer::Allocate(4 << 20, PinMode::kOff);
  ASSERT_TRUE(b.ok());
  uint8_t* p = b->data();
  HostBuffer moved = std::move(b.value());
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(b->size(), 0u);
}

TEST(HostBuffer, PinningWithoutAGpuIsRefusedClearly) {
  if (CudaDevicePresent()) GTEST_SKIP() << "a GPU is present";
  auto auto_pin = HostBuffer::Allocate(1 << 20, PinMode::kAuto);
  ASSERT_TRUE(auto_pin.ok());
  EXPECT_FALSE(auto_pin->pinned());
  auto forced = HostBuffer::Allocate(1 << 20, PinMode::kOn);
  ASSERT_FALSE(forced.ok());
  const std::string msg = forced.status().ToString();
  EXPECT_TRUE(msg.find("cudaHostRegister of 1048576 bytes failed") != std::string::npos ||
              msg.find("pinned memory needs a CUDA build") != std::string::npos)
      << msg;
}

TEST(HostBuffer, PinnedBufferIsPinnedWhereAGpuIsPresent) {
  if (!CudaDevicePresent()) GTEST_SKIP() << "no GPU";
  auto b = HostBuffer::Allocate(8 << 20, PinMode::kAuto);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->pinned());
  std::memset(b->data(), 1, b->size());
}

}  // namespace
}  // namespace rf
