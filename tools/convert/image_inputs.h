// The image inputs of `ringfeed-convert images`, each an ImageSource that ConvertImages
// (image_converter below) drains into a bytes dataset of media type image/jpeg, one record an
// image, its original bytes, with int labels:
//
//   ImageFolder   a directory with one subfolder a class, as torchvision's ImageFolder: the class
//                 index is the folder's place in the sorted (byte order) folder names, and the
//                 names go into the dataset (io/format.h's class names block). Each class folder
//                 is walked recursively in name order; files whose extension is an image's
//                 (torchvision's list: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case)
//                 are images, other files are passed over and counted. A class folder with no
//                 image is refused naming it, before anything is read.
//   WebDataset    .tar shards, each sample the files of one key (the name up to its basename's
//                 first '.'), read in order: KEY.jpg (or .jpeg) the image, KEY.cls its label (a
//                 decimal integer, 0 or more). Other members of a sample (.json, .txt) are passed
//                 over. A first pass reads the headers and the .cls members only (the images are
//                 seeked over), so a sample without an image or a label, a bad label or a
//                 malformed tar is refused before anything is written, and the class count is
//                 known (one more than the largest label): there are no class names.
//
// Every image must be a JPEG the decoders take without conversion (CheckJpeg): baseline
// (SOF0), 8 bits, 1 (grey) or 3 (YCbCr) components, at most --max-image-side pixels a side,
// with an end-of-image marker after its first scan. What is checked is the file's structure
// and header (libjpeg-turbo's tjDecompressHeader3 reads it too), not the entropy-coded data: a
// file damaged inside its scan converts, and its decode will fail at read time (that is decided
// by the reader, issue 25). A truncated file has no end-of-image marker and is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/codec.h"

namespace rf::convert {

// What CheckJpeg found of an image it accepted.
struct JpegInfo {
  uint32_t width = 0, height = 0;
  uint32_t components = 0;
};

// The largest image side CheckJpeg takes by default (--max-image-side): 16384 pixels, 805 MB as
// 8-bit RGB, which a decoder must allocate; JPEG's own limit is 65535.
inline constexpr uint32_t kDefaultMaxImageSide = 16384;

// "" where `data` is a JPEG as the header comment says, else why not, one phrase ("PNG data, not
// a JPEG", "a progressive JPEG (SOF2): only baseline JPEGs are stored", "65535x65535 pixels, more
// than --max-image-side 16384 a side", "truncated: no end-of-image marker after the scan"). The
// dimensions are checked from the frame header before anything is allocated for the image.
std::string CheckJpeg(const uint8_t* data, size_t n, uint32_t max_side, JpegInfo* info);

// One image of a source: where it is (a file, or "SHARD.tar:MEMBER"), its bytes and its label.
struct ImageItem {
  std::string name;
  std::vector<uint8_t> bytes;
  int64_t label = 0;
  // Why the image could not be read (unreadable, too large), named with the bad images; "" when
  // bytes holds it.
  std::string error;
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // The next image into *item; false at the end. An error here is the input's, not an image's
  // (a file that cannot be read, a malformed tar): the conversion stops on it.
  virtual Result<bool> Next(ImageItem* item) = 0;
  virtual uint32_t classes() const = 0;
  // The classes' names (ImageFolder), or empty (WebDataset).
  virtual std::vector<std::string> class_names() const { return {}; }
  virtual std::vector<std::string> input_paths() const = 0;
  virtual uint64_t input_bytes() const = 0;  // 0: unknown
  // Files passed over as not images (ImageFolder), members passed over (WebDataset).
  virtual uint64_t passed_over() const { return 0; }
};

// `max_file_bytes`: an image file larger than this is refused (named) rather than read.
Result<std::unique_ptr<ImageSource>> OpenImageFolderSource(const std::string& dir,
                                                           uint64_t max_file_bytes);
Result<std::unique_ptr<ImageSource>> OpenWebDatasetSource(const std::vector<std::string>& tars,
                                                          uint64_t max_file_bytes);

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
