#include "io/checksum.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace rf {
namespace {

TEST(Checksum, IsXxh3OfTheBytes) {
  EXPECT_EQ(Checksum("", 0), 0x2D06800538D394C2ull);  // XXH3-64 of no bytes, seed 0
  EXPECT_EQ(ChecksumBaseline("", 0), 0x2D06800538D394C2ull);
}

TEST(Checksum, EveryVariantAgreesOnEverySize) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> buf(5 << 20);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t n :
       {size_t{1}, size_t{3}, size_t{16}, size_t{17}, size_t{128}, size_t{129}, size_t{240},
        size_t{241}, size_t{1000}, size_t{4096}, size_t{65537}, size_t{4 << 20}, buf.size()}) {
    for (size_t off : {size_t{0}, size_t{1}, size_t{7}}) {
      if (off >= n) continue;
      ASSERT_EQ(Checksum(buf.data() + off, n - off), ChecksumBaseline(buf.data() + off, n - off))
          << "size " << n << " offset " << off << " variant " << ChecksumVariant();
    }
  }
}

TEST(Checksum, AnyFlippedBitChangesIt) {
  std::vector<uint8_t> buf(8192, 0x5a);
  const uint64_t good = Checksum(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); i += 509) {
    buf[i] ^= 0x01;
    EXPECT_NE(Checksum(buf.data(), buf.size()), good) << i;
    buf[i] ^= 0x01;
  }
}

}  // namespace
}  // namespace rf
