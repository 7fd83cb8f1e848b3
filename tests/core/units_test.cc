// Byte sizes as users type them, and sizes and rates as reports print them.
#include "core/units.h"

#include <gtest/gtest.h>

namespace rf {
namespace {

uint64_t Parsed(const std::string& text) {
  Result<uint64_t> r = ParseByteSize(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : 0;
}

TEST(ParseByteSize, BinarySuffixesAreCaseInsensitiveAndDecimalOnesArePowersOfTen) {
  EXPECT_EQ(Parsed("65536"), 65536u);
  EXPECT_EQ(Parsed("4MiB"), 4u << 20);
  EXPECT_EQ(Parsed("4m"), 4u << 20);
  EXPECT_EQ(Parsed("512 K"), 512u << 10);
  EXPECT_EQ(Parsed("1.5G"), 3ull << 29);
  EXPECT_EQ(Parsed("2TiB"), 2ull << 40);
  EXPECT_EQ(Parsed("3GB"), 3000000000ull);
  EXPECT_EQ(Parsed("7kb"), 7000u);
  EXPECT_EQ(Parsed("10e18"), 10000000000000000000ull);  // past 2^63: no signed overflow
}

TEST(ParseByteSize, RefusesWhatIsNotASizeNamingIt) {
  for (const char* bad : {"", "MiB", "-4K", "4 parsecs", "nan"}) {
    Result<uint64_t> r = ParseByteSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().ToString().find(std::string("'") + bad + "'"), std::string::npos)
        << r.status().ToString();
  }
  EXPECT_FALSE(ParseByteSize("20000000TB").ok());  // past 2^64 bytes
}

TEST(FormatBytes, PicksTheLargestBinaryUnitBelowTheValue) {
  EXPECT_EQ(FormatBytes(17), "17 B");
  EXPECT_EQ(FormatBytes(512u << 10), "512.00 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 30), "3.00 GiB");
}

TEST(FormatRate, KeepsThreeSignificantDigitsSoSlowRatesDoNotReadAsZero) {
  EXPECT_EQ(FormatRate(1.8412e9), "1.84 GB/s");
  EXPECT_EQ(FormatRate(52.85e9), "52.9 GB/s");
  EXPECT_EQ(FormatRate(1.6e6), "1.60 MB/s");
  EXPECT_EQ(FormatRate(12.34e6), "12.3 MB/s");
  EXPECT_EQ(FormatRate(850e3), "850 kB/s");
  EXPECT_EQ(FormatRate(999.6e6), "1.00 GB/s");
  EXPECT_EQ(FormatRate(0), "0 B/s");
  EXPECT_EQ(FormatRate(-5), "0 B/s");
}

}  // namespace
}  // namespace rf
