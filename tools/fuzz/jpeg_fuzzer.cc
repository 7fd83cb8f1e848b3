// The JPEG readers a dataset's records and a converter's inputs meet, on arbitrary bytes:
//   - decode/jpeg_image.h's ReadJpegFrame (the frame header, read before anything is sized from
//     it) and JpegImageDecoder::Decode (libjpeg-turbo through the project's error manager, the
//     crop's region at the DCT scale it allows, into a sample of exactly the output's size, so
//     ASan stops a write past it);
//   - tools/convert/jpeg_check.h's CheckJpeg and CheckJpegToReencode (what ringfeed-convert
//     images stores, converts or refuses), then decode/jpeg_reencode.h's re-encode of what the
//     second takes, at most 1024 a side (as --max-side would ask of a larger image).
// Contract checks: a refusal is one line; an image Decode accepts, CheckJpeg accepts or the
// re-encode takes has a frame ReadJpegFrame reads, of the same size; a re-encode's output is a
// baseline JPEG of the target's size that Decode takes.
//
// Input: [the JPEG's bytes][choices from the end: the output size, the crop, the sample index].
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode/jpeg_image.h"
#include "decode/jpeg_reencode.h"
#include "tools/convert/jpeg_check.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;

namespace {

// The longest side a decode here takes: a hostile header's sides are checked against it before
// anything is allocated; within it every decode is a few MB and well under a second.
constexpr uint32_t kMaxSide = 1024;

bool OneLine(const std::string& why) { return !why.empty() && why.find('\n') == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint32_t out_size = 8 + in.ConsumeIntegral<uint8_t>() % 57;
  const bool centre = in.ConsumeBool();
  const uint64_t index = in.ConsumeIntegral<uint16_t>();
  const std::vector<uint8_t> jpeg = in.ConsumeRemainingBytes<uint8_t>();
  const uint8_t* bytes = jpeg.data();
  const size_t n = jpeg.size();

  JpegFrame frame;
  const std::string frame_why = ReadJpegFrame(bytes, n, kMaxSide, &frame);
  if (frame_why.empty()) {
    RF_FUZZ_CHECK(frame.width >= 1 && frame.width <= kMaxSide);
    RF_FUZZ_CHECK(frame.height >= 1 && frame.height <= kMaxSide);
  } else {
    RF_FUZZ_CHECK(OneLine(frame_why));
  }

  ImageDecodeSpec spec;
  spec.size = out_size;
  spec.crop = centre ? ImageCrop::kCenter : ImageCrop::kRandomResized;
  spec.output = DType::kUInt8;
  spec.normalize = false;
  spec.max_side = kMaxSide;
  Result<std::unique_ptr<JpegImageDecoder>> made_decoder = JpegImageDecoder::Create(spec);
  RF_FUZZ_CHECK(made_decoder.ok());
  JpegImageDecoder& decoder = **made_decoder;
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  const std::string decode_why = decoder.Decode(bytes, n, 3, index, out.data());
  if (decode_why.empty()) {
    RF_FUZZ_CHECK(frame_why.empty());
  } else {
    RF_FUZZ_CHECK(OneLine(decode_why));
  }

  convert::JpegInfo info;
  const std::string check_why = convert::CheckJpeg(bytes, n, kMaxSide, &info);
  if (check_why.empty()) {
    RF_FUZZ_CHECK(frame_why.empty());
    RF_FUZZ_CHECK(info.width == frame.width && info.height == frame.height);
  } else {
    RF_FUZZ_CHECK(OneLine(check_why));
  }

  convert::JpegInfo again;
  const std::string reencode_check = convert::CheckJpegToReencode(bytes, n, &again);
  if (!reencode_check.empty()) {
    RF_FUZZ_CHECK(OneLine(reencode_check));
    return 0;
  }
  if (again.width > kMaxSide || again.height > kMaxSide) return 0;
  static std::unique_ptr<JpegReencoder> reencoder;
  if (!reencoder) {
    Result<std::unique_ptr<JpegReencoder>> made = JpegReencoder::Create();
    RF_FUZZ_CHECK(made.ok());
    reencoder = std::move(*made);
  }
  const ImageSize target = FitWithin(again.height, again.width, 48);
  std::vector<uint8_t> encoded;
  const std::string reencode_why = reencoder->Reencode(bytes, n, target, 90, &encoded);
  if (!reencode_why.empty()) {
    RF_FUZZ_CHECK(OneLine(reencode_why));
    return 0;
  }
  JpegFrame made;
  RF_FUZZ_CHECK(ReadJpegFrame(encoded.data(), encoded.size(), kMaxSide, &made).empty());
  RF_FUZZ_CHECK(made.width == target.width && made.height == target.height);
  RF_FUZZ_CHECK(decoder.Decode(encoded.data(), encoded.size(), 3, index, out.data()).empty());
  return 0;
}
