// DecodeHeader on raw bytes (the checksum left as the fuzzer made it): the size, magic, version
// and checksum checks, and anything accepted meets the header's contract.
#include <cstdint>

#include "io/format.h"
#include "tools/fuzz/header_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rf::Result<rf::format::Header> h = rf::format::DecodeHeader(data, size, "fuzz.rfd");
  if (h.ok()) rf::fuzz::CheckAcceptedHeader(*h);
  return 0;
}
