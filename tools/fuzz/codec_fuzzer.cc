// Decompressor::Decompress on arbitrary frames: the fuzzer's bytes as a frame of each codec
// (none, lz4, zstd, and an id no codec has) with a declared size of its choosing (small, any up
// to 4 MiB, an edge value, or what a zstd frame itself declares). The destination is exactly the
// declared size, so ASan stops a write past it. A frame it accepts must hold exactly the
// declared size: decoded again by the library alone, with room to spare, it gives the same bytes
// and no more (never OK with a different size). A refusal is one line.
#include <lz4.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "io/codec.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;
using namespace rf::fuzz;

namespace {

// The most a declared size may be here: a chunk's data can be far more (1 GiB), but the checks
// do not depend on the size, and each input must run in well under a second.
constexpr uint64_t kMaxWant = uint64_t{4} << 20;
// The room the independent decode gets beyond the declared size.
constexpr size_t kSlack = 64 << 10;

// The frame decoded by the library alone into `cap` bytes: the size it gives, or -1.
int64_t DecodeAlone(Codec c, const std::vector<uint8_t>& frame, uint8_t* out, size_t cap) {
  switch (c) {
    case Codec::kNone:
      if (frame.size() > cap) return -1;
      if (!frame.empty()) std::memcpy(out, frame.data(), frame.size());
      return static_cast<int64_t>(frame.size());
    case Codec::kLz4: {
      const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(frame.data()),
                                          reinterpret_cast<char*>(out),
                                          static_cast<int>(frame.size()), static_cast<int>(cap));
      return got < 0 ? -1 : got;
    }
    case Codec::kZstd: {
      const size_t got = ZSTD_decompress(out, cap, frame.data(), frame.size());
      return ZSTD_isError(got) ? -1 : static_cast<int64_t>(got);
    }
  }
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint8_t codec_id = in.ConsumeIntegral<uint8_t>() % 4;  // 3: no codec
  const uint8_t how = in.ConsumeIntegral<uint8_t>() % 4;
  uint64_t want = 0;
  switch (how) {
    case 0:
      want = in.ConsumeIntegral<uint32_t>() % (kMaxWant + 1);
      break;
    case 1:
      want = in.ConsumeIntegralInRange<uint64_t>(0, 65536);
      break;
    case 2:
      want = EdgeValue(in) % (kMaxWant + 1);
      break;
    case 3:
      break;  // the zstd frame's own declaration, below
  }
  const std::vector<uint8_t> frame = in.ConsumeRemainingBytes<uint8_t>();
  if (how == 3) {
    const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
    want = declared <= kMaxWant ? declared : frame.size();
  }
  const Codec codec = static_cast<Codec>(codec_id);

  // Exactly `want` bytes (new[0] for 0: any write is past it), reused as a stage thread reuses
  // its own decompressor.
  static Decompressor decompressor;
  std::unique_ptr<uint8_t[]> dst(new uint8_t[want]);
  const Status st = decompressor.Decompress(codec, frame.data(), frame.size(), dst.get(), want);
  if (!st.ok()) {
    RF_FUZZ_CHECK(!st.message().empty() && st.message().find('\n') == std::string::npos);
    return 0;
  }
  RF_FUZZ_CHECK(IsCodec(codec_id));
  if (codec == Codec::kZstd) {
    const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
    RF_FUZZ_CHECK(declared == ZSTD_CONTENTSIZE_UNKNOWN || declared == want);
  }
  std::vector<uint8_t> alone(want + kSlack);
  const int64_t got = DecodeAlone(codec, frame, alone.data(), alone.size());
  RF_FUZZ_CHECK(got == static_cast<int64_t>(want));
  RF_FUZZ_CHECK(want == 0 || std::memcmp(alone.data(), dst.get(), want) == 0);
  return 0;
}
