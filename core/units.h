// Byte sizes on command lines ("4MiB", "512K", "1G", "65536") and in reports.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace rf {

// Accepts a plain number of bytes or a number with a suffix: K/KiB, M/MiB, G/GiB, T/TiB
// (powers of 1024), KB/MB/GB/TB (powers of 1000). Case-insensitive; fractions allowed ("1.5G").
Result<uint64_t> ParseByteSize(const std::string& text);
// "3.21 GiB", "512 KiB", "17 B".
std::string FormatBytes(uint64_t bytes);
// A rate in decimal units, with three significant digits: "1.84 GB/s", "12.3 MB/s", "850 kB/s",
// "0 B/s" (so a slow rate reads as slow, not as "0.00 GB/s").
std::string FormatRate(double bytes_per_second);

}  // namespace rf
