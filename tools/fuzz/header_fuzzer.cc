// DecodeHeader on forged headers: the fuzzer's bytes choose which fields of a valid header to set
// and to what (tools/fuzz/fuzz_common.h's edits), the harness can make the counts agree with
// each other as a careful forger would, and recomputes the checksum, so every mutation reaches
// the field checks instead of the checksum. What is accepted must meet the header's contract.
#include <cstdint>
#include <vector>

#include "io/format.h"
#include "tools/fuzz/fuzz_common.h"
#include "tools/fuzz/header_checks.h"

using namespace rf;
using namespace rf::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::vector<DatasetFiles>& sets = ValidDatasets();
  const DatasetFiles& set = sets[in.ConsumeIntegralInRange<size_t>(0, sets.size() - 1)];
  const std::vector<uint8_t>& file =
      set.bytes[in.ConsumeIntegralInRange<size_t>(0, set.bytes.size() - 1)];
  const uint8_t flags = in.ConsumeIntegral<uint8_t>();
  std::vector<uint8_t> header(file.begin(), file.begin() + format::kHeaderBytes);
  ApplyEdits(in, HeaderFields(), 6, &header);
  header.resize(format::kHeaderBytes, 0);  // cuts and extensions do not apply to the header
  if (flags & 1) {
    // Counts made to agree, with the header's own (wrapping) arithmetic, so that what follows
    // the consistency checks is reached with absurd values.
    const uint64_t total = GetField(header, 56, 8), per = GetField(header, 72, 4);
    const uint64_t count = GetField(header, 28, 4), index = GetField(header, 24, 4);
    if (per != 0 && count != 0) {
      // Exactly, or by the rounding formula a reader might use, which wraps near 2^64 (a
      // forger who knows it makes the counts agree with the wrapped value).
      const uint64_t chunks =
          (flags & 8) ? (total + per - 1) / per : total / per + (total % per != 0 ? 1 : 0);
      PutField(&header, 64, 8, chunks);
      const uint64_t mine = chunks / count + (index < chunks % count ? 1 : 0);
      PutField(&header, 76, 4, mine);
      if (flags & 2) {
        const auto version = static_cast<uint32_t>(GetField(header, 8, 4));
        PutField(&header, 96, 8, GetField(header, 88, 8) + format::IndexStoredBytes(mine, version));
      }
    }
  }
  if ((flags & 4) == 0) FixHeaderChecksum(&header);
  Result<format::Header> h = format::DecodeHeader(header.data(), header.size(), "fuzz.rfd");
  if (h.ok()) CheckAcceptedHeader(*h);
  return 0;
}
