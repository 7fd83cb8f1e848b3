// ConvertImages: the images of an ImageSource (image_inputs.h) as a bytes dataset of media type
// image/jpeg, one record an image, its original bytes, with int labels; every image checked by
// CheckJpeg (jpeg_check.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/codec.h"
#include "tools/convert/image_inputs.h"
#include "tools/convert/jpeg_check.h"

namespace rf::convert {

struct ImageConvertOptions {
  uint64_t chunk_bytes = 4 << 20;
  uint32_t shards = 1;
  uint64_t max_record_bytes = uint64_t{64} << 20;
  uint32_t max_image_side = kDefaultMaxImageSide;
  CodecSpec codec = {};
  uint32_t compress_threads = 0;
  uint32_t format_version = 0;
  uint64_t dataset_id = 0;
  bool progress = true;
};

struct ImageConvertSummary {
  uint64_t images = 0;
  uint32_t classes = 0;
  uint64_t bytes = 0;  // chunk bytes stored
  uint64_t input_bytes = 0;
  uint64_t chunks = 0;
  uint64_t passed_over = 0;
  DType label_dtype = DType::kUInt8;
  double seconds = 0;
  std::vector<std::string> paths;
  std::vector<std::string> removed;
};

// Every image of `source` as a record, in order. An image CheckJpeg refuses (or one too large
// to read) does not stop the reading: every bad image is found, then the conversion fails with
// one line naming them (the first 10 and how many in all), and nothing is written.
Result<ImageConvertSummary> ConvertImages(ImageSource& source, const std::string& out_path,
                                          const ImageConvertOptions& options);
std::string ImageConvertReport(const ImageConvertSummary& s);

}  // namespace rf::convert
