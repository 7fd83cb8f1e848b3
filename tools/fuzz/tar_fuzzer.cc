// The converter's tar reader on arbitrary bytes: tools/convert/tar_reader.h's ListTar (ustar
// headers, GNU long names, pax path records), then the WebDataset source that `ringfeed-convert
// images SHARD.tar` reads (tools/convert/image_inputs.h: samples of consecutive members, their
// .cls labels), every image read.
// Contract checks: a refusal is one line; every member ListTar gives lies inside the file, its
// data after its header; every image the source hands out is as large as its member says, or
// refused in one line; the class count is one more than the largest label.
//
// Input: the tar's bytes, as they are. Seeds (make_seeds.cc): small tars of samples, with GNU
// long names and pax headers.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/convert/image_inputs.h"
#include "tools/convert/input_file.h"
#include "tools/convert/tar_reader.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;

namespace {

bool OneLine(const std::string& why) { return !why.empty() && why.find('\n') == std::string::npos; }

// An image larger than this is refused by the source (as --max-record-size does), not read.
constexpr uint64_t kMaxImageBytes = 1 << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::ScratchDir() + "/s.tar";
  fuzz::WriteFile(path, std::vector<uint8_t>(data, data + size));

  Result<File> file = convert::OpenInputFile(path);
  RF_FUZZ_CHECK(file.ok());
  Result<std::vector<convert::TarMember>> members = convert::ListTar(*file);
  if (!members.ok()) {
    RF_FUZZ_CHECK(OneLine(members.status().ToString()));
  } else {
    for (const convert::TarMember& m : *members) {
      RF_FUZZ_CHECK(m.header + 512 <= m.offset);
      RF_FUZZ_CHECK(m.offset <= size && m.size <= size - m.offset);
    }
  }

  Result<std::unique_ptr<convert::ImageSource>> source =
      convert::OpenWebDatasetSource({path}, kMaxImageBytes);
  if (!source.ok()) {
    RF_FUZZ_CHECK(OneLine(source.status().ToString()));
    return 0;
  }
  RF_FUZZ_CHECK(members.ok());  // the source lists the same tar
  convert::ImageSource& s = **source;
  RF_FUZZ_CHECK(s.classes() >= 1);
  convert::ImageItem item;
  for (;;) {
    Result<bool> more = s.Next(&item);
    if (!more.ok()) {
      RF_FUZZ_CHECK(OneLine(more.status().ToString()));
      break;
    }
    if (!*more) break;
    RF_FUZZ_CHECK(OneLine(item.name));
    RF_FUZZ_CHECK(item.label >= 0 && item.label < s.classes());
    if (!item.error.empty()) {
      RF_FUZZ_CHECK(OneLine(item.error));
      RF_FUZZ_CHECK(item.bytes.empty());
    } else {
      RF_FUZZ_CHECK(item.bytes.size() <= kMaxImageBytes && item.bytes.size() <= size);
    }
  }
  return 0;
}
