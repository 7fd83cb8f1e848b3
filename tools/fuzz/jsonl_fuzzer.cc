// The converter's JSON lines reader on arbitrary bytes: tools/convert/token_inputs.h's
// OpenJsonLinesSource (tools/convert/json_line_stream.h's lines, whole or streamed, through
// nlohmann-json's SAX parse), drained block by block as `ringfeed-convert jsonl` drains it, with
// a --max-record-size and a --memory-budget of the input's choosing, and every id's position
// asked for (DocumentSource::IdAt, which reads the line again).
// Contract checks: a refusal is one short line; a block holds whole documents, each of at most
// max_ids ids, its offsets from 0 and never decreasing; every position lies inside the file and
// names a line and column; memory stays bounded however long a line is (run.sh's -rss_limit_mb and
// -malloc_limit_mb).
//
// Input: [the file's bytes][choices from the end: the record size, the budget].
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/convert/token_inputs.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;

namespace {

// One line, and a short one: what nlohmann-json quotes of the input (a piece may be 64 KiB or
// more) is cut.
bool OneLine(const std::string& why) {
  return !why.empty() && why.size() < 1024 && why.find('\n') == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // 8 bytes to 1 MiB records (as --max-record-size), a budget of 1 byte to 64 KiB of ids.
  const uint64_t max_record = uint64_t{8} << in.ConsumeIntegralInRange<int>(0, 17);
  const uint64_t budget = uint64_t{1} << in.ConsumeIntegralInRange<int>(0, 16);
  const std::vector<uint8_t> bytes = in.ConsumeRemainingBytes<uint8_t>();
  const std::string path = fuzz::ScratchDir() + "/x.jsonl";
  fuzz::WriteFile(path, bytes);

  Result<std::unique_ptr<convert::DocumentSource>> made =
      convert::OpenJsonLinesSource({path}, max_record, budget);
  RF_FUZZ_CHECK(made.ok());  // a regular file that exists
  convert::DocumentSource& src = **made;
  RF_FUZZ_CHECK(src.input_bytes() == bytes.size());
  const uint64_t max_ids = max_record / 8;
  uint64_t next = 0;
  for (int pass = 0; pass < 2; ++pass) {  // as ConvertDocuments: a first pass, then again
    for (;;) {
      Result<convert::DocumentBlock> block = src.Next(budget, max_ids);
      if (!block.ok()) {
        RF_FUZZ_CHECK(OneLine(block.status().ToString()));
        RF_FUZZ_CHECK(block.status().offset().value_or(0) <= bytes.size());
        return 0;
      }
      const convert::DocumentBlock& b = *block;
      if (b.count == 0) break;
      RF_FUZZ_CHECK(b.first == next);
      RF_FUZZ_CHECK(b.offsets[0] == 0);
      RF_FUZZ_CHECK(b.input_bytes_done <= bytes.size());
      for (uint64_t d = 0; d < b.count; ++d) {
        const uint64_t n = b.offsets[d + 1] - b.offsets[d];
        RF_FUZZ_CHECK(b.offsets[d + 1] >= b.offsets[d] && n <= max_ids);
        // Each IdAt reads the line again: the first ids and the last, not every one.
        for (uint64_t j = 0; j < n; j = j < 2 || j + 1 == n ? j + 1 : n - 1) {
          const convert::DocumentPosition p = src.IdAt(b.first + d, j);
          RF_FUZZ_CHECK(p.path == path && p.offset < bytes.size());
          RF_FUZZ_CHECK(OneLine(p.detail));
        }
      }
      next += b.count;
    }
    RF_FUZZ_CHECK(src.Rewind().ok());
    next = 0;
  }
  return 0;
}
