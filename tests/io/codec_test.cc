// Decompressor::Decompress on its own (io/codec.h): a frame is inflated to exactly the declared
// size or refused with one line saying why; the regression inputs of tools/fuzz's codec target.
#include "io/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/forged_dataset.h"

namespace rf {
namespace {

// "ok", or the refusal's message, inflating `frame` into exactly `want` bytes.
std::string Inflate(Codec c, const std::vector<uint8_t>& frame, size_t want) {
  Decompressor d;
  std::vector<uint8_t> out(want);
  const Status st = d.Decompress(c, frame.data(), frame.size(), out.data(), want);
  return st.ok() ? "ok" : st.message();
}

TEST(Codec, EveryWayAFrameCanBeWrongIsRefusedWithOneLine) {
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 251);
  const std::vector<uint8_t> lz4 = testing::FrameOf({Codec::kLz4, 0}, data);
  const std::vector<uint8_t> zstd = testing::FrameOf({Codec::kZstd, 3}, data);
  const std::string l = "lz4 frame of " + std::to_string(lz4.size()) + " bytes ";
  const std::string z = "zstd frame of " + std::to_string(zstd.size()) + " bytes ";
  EXPECT_EQ(Inflate(Codec::kLz4, lz4, 10000), "ok");
  EXPECT_EQ(Inflate(Codec::kZstd, zstd, 10000), "ok");
  EXPECT_EQ(Inflate(Codec::kLz4, lz4, 20000),
            l + "decompresses to 10000 bytes, not the 20000 declared");
  EXPECT_EQ(Inflate(Codec::kLz4, lz4, 9999),
            l + "is damaged, or decompresses to more than the 9999 bytes declared");
  EXPECT_EQ(Inflate(Codec::kZstd, zstd, 9999),
            z + "declares 10000 bytes, not the 9999 in the index");
  EXPECT_EQ(Inflate(Codec::kZstd, lz4, 10000),
            "zstd frame of " + std::to_string(lz4.size()) + " bytes is not a zstd frame");
  EXPECT_EQ(Inflate(Codec::kNone, data, 9000),
            "none frame of 10000 bytes stored raw, but 9000 were declared");
  EXPECT_EQ(Inflate(static_cast<Codec>(3), data, 10000), "unknown codec 3");
  const std::vector<uint8_t> cut(zstd.begin(), zstd.end() - 1);
  EXPECT_EQ(Inflate(Codec::kZstd, cut, 10000)
                .rfind("zstd frame of " + std::to_string(cut.size()) + " bytes is damaged: ", 0),
            0u);
}

// tools/fuzz codec target, the empty input: an empty raw frame has no buffer (a null pointer),
// and copying nothing from it was memcpy(dst, nullptr, 0), undefined behaviour (UBSan).
TEST(Codec, AnEmptyRawFrameWithoutABufferIsAccepted) {
  Decompressor d;
  uint8_t out[1];
  EXPECT_TRUE(d.Decompress(Codec::kNone, nullptr, 0, out, 0).ok());
  EXPECT_FALSE(d.Decompress(Codec::kLz4, nullptr, 0, out, 0).ok());
  EXPECT_FALSE(d.Decompress(Codec::kZstd, nullptr, 0, out, 0).ok());
}

}  // namespace
}  // namespace rf
