// One JPEG record to the pixels a model takes, on the host: libjpeg-turbo decodes the part of
// it the crop needs, then decode/image_spec.h's CropWriter resizes, flips, normalizes and writes
// the crop in the output dtype and layout in one pass. decode/image_record.h's decoder, which
// the CPU image decoder (pipeline/images/image_decoder.h) runs on each worker thread, holds one.
//
// What is decoded: every JPEG libjpeg-turbo decodes at 8 bits, as stored: baseline (SOF0),
// extended sequential (SOF1), progressive (SOF2) and arithmetic-coded (SOF9, SOF10); grey (1
// component), YCbCr or RGB (3), CMYK or YCCK (4), any chroma subsampling. Not lossless (SOF3,
// SOF11) or hierarchical frames (SOF5-7, SOF13-15), nor 12- or 16-bit samples.
//
// Per image:
//   1. the frame header (SOFn) is read from the bytes themselves (ReadJpegFrame): an image
//      without one, of a kind above that is not decoded, of a side of 0 or more than max_side
//      pixels, or of 2 or more than 4 components is refused here, before anything is allocated
//      for it;
//   2. the crop (CropWriter::Plan): RandomResizedCropOf(seed, epoch, index, H, W) for training
//      (with its flip), CenterCropOf(H, W, size) for evaluation;
//   3. the decode, through libjpeg-turbo's libjpeg API (the TurboJPEG API of libjpeg-turbo 2.1
//      decodes whole images only), of what the resample reads and no more:
//        - at the coarsest DCT scale (1/8, 1/4, 1/2 or 1) at which the crop keeps at least
//          `size` pixels on both sides: a crop twice the output or more costs less than a
//          quarter of the full decode's inverse DCT, colour conversion and memory;
//        - only the crop's columns (jpeg_crop_scanline, widened by an iMCU on either side, so
//          that the chroma upsampling at the crop's edges is the full decode's) and
//          rows: the rows above it are skipped (jpeg_skip_scanlines), the rows below it not
//          decoded (the decode stops at the crop's last row; a progressive JPEG's scans are all
//          read first, as libjpeg reads them, into its coefficient buffer);
//      grey JPEGs decode as grey and become 3 equal channels at the end; CMYK and YCCK JPEGs
//      decode as CMYK (libjpeg converts YCCK) and become RGB as PIL's convert("RGB") makes them,
//      taking the stored values as Adobe's inverted ones as PIL does (R = C K / 255, rounded as
//      PIL rounds, likewise G from M and B from Y);
//   4. the resample of the crop, in the decoded image's own coordinates (the crop box scaled by
//      the DCT scale), into the output.
// A decode that libjpeg-turbo fails, or that meets a warning other than extraneous bytes
// before a marker (a truncated file's "Premature end of JPEG file", corrupt entropy-coded
// data), is a bad record: Decode returns why. Damage is found where the decode reads: in the
// rows down to the crop's last (a progressive JPEG: in any of its scans), so a baseline file cut
// short below one epoch's crop decodes for that crop and is refused for a crop that reaches the
// cut (ringfeed-convert refuses files without an end-of-image marker, so a converted dataset
// holds no such file).
//
// Memory: the decoded region's buffer grows to the largest region met and is reused; libjpeg-
// turbo's own working memory is per image (a progressive JPEG's coefficients, 2 bytes a sample
// at full size: 1.5 GiB for a 16384 x 16384 4:4:4 image), failing with its error past
// kMaxImageDecodeBytes (decode/image_spec.h) instead of being allocated. Thread safety: none; one
// decoder a thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/image_spec.h"

namespace rf {

struct JpegDecompressor;  // decode/jpeg_errors.h

// What a JPEG's frame header says, read without decoding (ReadJpegFrame).
struct JpegFrame {
  uint32_t width = 0, height = 0, components = 0;
  uint8_t marker = 0;  // its SOFn marker: 0xc0 baseline, 0xc2 progressive, ...
};
// "" and *frame set, or why the bytes are no JPEG whose frame header can be read and whose frame
// the decode takes (above) ("no JPEG start-of-image marker", "no frame header before the data
// ends", "a frame header of 65535x65535 pixels, more than max_image_side 16384 a side", "a
// lossless JPEG (SOF3): libjpeg-turbo does not decode it", "12-bit samples: only 8-bit JPEGs are
// decoded", ...). Reads the markers only: allocates nothing.
std::string ReadJpegFrame(const uint8_t* data, size_t n, uint32_t max_side, JpegFrame* frame);

class JpegImageDecoder {
 public:
  // One decoder, its libjpeg decompressor made (Unsupported where libjpeg-turbo cannot make one).
  static Result<std::unique_ptr<JpegImageDecoder>> Create(const ImageDecodeSpec& spec);
  ~JpegImageDecoder();

  // Decodes the JPEG at data[0, n) as sample `index` of `epoch` into `out`
  // (spec.OutputSampleBytes(), aligned to its element). "" on success, else why the
  // record is bad (out is then partly written or not at all).
  std::string Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index, void* out);

  // The DCT scale denominator the last Decode used (1, 2, 4 or 8; 0 before any): for tests.
  uint32_t last_scale() const { return last_scale_; }

 private:
  explicit JpegImageDecoder(const ImageDecodeSpec& spec);

  // Decodes rows [row_lo, row_hi) and columns [col_lo, col_hi) (and more: an iMCU's margin,
  // whole iMCU columns) of the JPEG at data[0, n) at DCT scale 1/denom into pixels_ (`channels`
  // a pixel: 1 grey, 3 RGB; a CMYK frame converted to RGB): *row0 and *col0 the first row and
  // column decoded, *pitch the bytes a row. False with jpeg_'s message set where libjpeg-turbo
  // fails.
  bool ReadRegion(const uint8_t* data, size_t n, const JpegFrame& frame, uint32_t denom,
                  uint32_t channels, int32_t row_lo, int32_t row_hi, int32_t col_lo, int32_t col_hi,
                  int32_t* row0, int32_t* col0, size_t* pitch);

  ImageDecodeSpec spec_;
  // libjpeg's decompressor and error manager (decode/jpeg_errors.h): created with the decoder,
  // destroyed with it; its one owner.
  std::unique_ptr<JpegDecompressor> jpeg_;
  std::vector<uint8_t> pixels_;  // the decoded region
  std::vector<uint8_t> cmyk_;    // a CMYK frame's row, before its conversion to RGB
  CropWriter writer_;
  uint32_t last_scale_ = 0;
};

}  // namespace rf
