// The image readers a dataset's records and a converter's inputs meet, on arbitrary bytes:
//   - decode/image_record.h's ReadImageHeader (each codec's header, read before anything is sized
//     from it: JPEG's frame, PNG's IHDR, WebP's RIFF and bitstream headers) and
//     ImageRecordDecoder::Decode (libjpeg-turbo, libpng or libwebp by the bytes' codec, the crop's
//     region, into a sample of exactly the output's size, so ASan stops a write past it);
//   - tools/convert/image_check.h's CheckImage (what ringfeed-convert images stores or refuses),
//     then the re-encode of what it takes, at most 1024 a side (as --max-side would ask of a
//     larger image): decode/jpeg_reencode.h's for a JPEG, a PNG's or WebP's whole decode
//     (ReadPngRows, ReadWebpRegion) then JpegReencoder::ReencodePixels.
// Contract checks: a refusal is one line; an image Decode accepts, or CheckImage accepts, has a
// header ReadImageHeader reads, of the same codec and size; a re-encode's output is a baseline
// JPEG of the target's size that Decode takes.
//
// Input: [the image's bytes][choices from the end: the output size, the crop, the sample index;
// an odd index decodes with the alpha kept (4 channels: a PNG's tRNS read, a WebP as RGBA)].
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode/image_record.h"
#include "decode/jpeg_image.h"
#include "decode/jpeg_reencode.h"
#include "decode/png_image.h"
#include "decode/webp_image.h"
#include "tools/convert/image_check.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;

namespace {

// The longest side a decode here takes: a hostile header's sides are checked against it before
// anything is allocated; within it every decode is a few MB and well under a second.
constexpr uint32_t kMaxSide = 1024;

bool OneLine(const std::string& why) { return !why.empty() && why.find('\n') == std::string::npos; }

// The whole decode a re-encode of a PNG or WebP starts from: "" and *pixels, *channels, or why.
std::string DecodeWhole(const uint8_t* bytes, size_t n, const ImageHeader& h,
                        std::vector<uint8_t>* pixels, uint32_t* channels) {
  if (h.codec == ImageCodec::kPng) {
    PngHeader png;
    RF_FUZZ_CHECK(ReadPngHeader(bytes, n, kMaxSide, &png).empty());
    *channels = png.channels();
    return ReadPngRows(bytes, n, png, 0, png.height, pixels);
  }
  WebpHeader webp;
  RF_FUZZ_CHECK(ReadWebpHeader(bytes, n, kMaxSide, &webp).empty());
  *channels = 3;
  uint32_t row0 = 0, col0 = 0;
  size_t pitch = 0;
  const std::string why =
      ReadWebpRegion(bytes, n, webp, 0, webp.height, 0, webp.width, pixels, &row0, &col0, &pitch);
  if (why.empty()) RF_FUZZ_CHECK(row0 == 0 && col0 == 0 && pitch == size_t{webp.width} * 3);
  return why;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint32_t out_size = 8 + in.ConsumeIntegral<uint8_t>() % 57;
  const bool centre = in.ConsumeBool();
  const uint64_t index = in.ConsumeIntegral<uint16_t>();
  const std::vector<uint8_t> image = in.ConsumeRemainingBytes<uint8_t>();
  const uint8_t* bytes = image.data();
  const size_t n = image.size();

  ImageHeader header;
  const std::string header_why = ReadImageHeader(bytes, n, kMaxSide, &header);
  if (header_why.empty()) {
    RF_FUZZ_CHECK(header.codec != ImageCodec::kUnknown);
    RF_FUZZ_CHECK(header.width >= 1 && header.width <= kMaxSide);
    RF_FUZZ_CHECK(header.height >= 1 && header.height <= kMaxSide);
  } else {
    RF_FUZZ_CHECK(OneLine(header_why));
  }

  ImageDecodeSpec spec;
  spec.size = out_size;
  spec.crop = centre ? ImageCrop::kCenter : ImageCrop::kRandomResized;
  spec.output = DType::kUInt8;
  spec.normalize = false;
  spec.max_side = kMaxSide;
  spec.channels = index % 2 == 1 ? 4 : 3;
  static std::unique_ptr<ImageRecordDecoder> decoder;
  static uint32_t decoder_size = 0, decoder_channels = 0;
  static bool decoder_centre = false;
  if (!decoder || decoder_size != out_size || decoder_centre != centre ||
      decoder_channels != spec.channels) {
    Result<std::unique_ptr<ImageRecordDecoder>> made = ImageRecordDecoder::Create(spec);
    RF_FUZZ_CHECK(made.ok());
    decoder = std::move(*made);
    decoder_size = out_size;
    decoder_centre = centre;
    decoder_channels = spec.channels;
  }
  std::vector<uint8_t> out(spec.OutputSampleBytes());
  const std::string decode_why = decoder->Decode(bytes, n, 3, index, out.data());
  if (decode_why.empty()) {
    RF_FUZZ_CHECK(header_why.empty());
  } else {
    RF_FUZZ_CHECK(OneLine(decode_why));
  }

  ImageHeader checked;
  const std::string check_why = convert::CheckImage(bytes, n, kMaxSide, &checked);
  if (!check_why.empty()) {
    RF_FUZZ_CHECK(OneLine(check_why));
    return 0;
  }
  RF_FUZZ_CHECK(header_why.empty());
  RF_FUZZ_CHECK(checked.codec == header.codec);
  RF_FUZZ_CHECK(checked.width == header.width && checked.height == header.height);

  static std::unique_ptr<JpegReencoder> reencoder;
  if (!reencoder) {
    Result<std::unique_ptr<JpegReencoder>> made = JpegReencoder::Create();
    RF_FUZZ_CHECK(made.ok());
    reencoder = std::move(*made);
  }
  const ImageSize target = FitWithin(checked.height, checked.width, 48);
  std::vector<uint8_t> encoded;
  std::string reencode_why;
  if (checked.codec == ImageCodec::kJpeg) {
    reencode_why = reencoder->Reencode(bytes, n, target, 90, &encoded);
  } else {
    static std::vector<uint8_t> pixels;
    uint32_t channels = 0;
    reencode_why = DecodeWhole(bytes, n, checked, &pixels, &channels);
    if (reencode_why.empty()) {
      reencode_why = reencoder->ReencodePixels(pixels.data(), {checked.height, checked.width},
                                               channels, target, 90, &encoded);
    }
  }
  if (!reencode_why.empty()) {
    RF_FUZZ_CHECK(OneLine(reencode_why));
    return 0;
  }
  JpegFrame made;
  RF_FUZZ_CHECK(ReadJpegFrame(encoded.data(), encoded.size(), kMaxSide, &made).empty());
  RF_FUZZ_CHECK(made.marker == 0xc0);
  RF_FUZZ_CHECK(made.width == target.width && made.height == target.height);
  RF_FUZZ_CHECK(decoder->Decode(encoded.data(), encoded.size(), 3, index, out.data()).empty());
  return 0;
}
