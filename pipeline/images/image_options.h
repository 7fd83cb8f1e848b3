// The options of decoded images (image records), declared once (options/option_table.h) for
// every program that decodes them: `ringfeed train` (its --image-size, --image-threads,
// --skip-bad-records, --max-image-side, --image-decoder, through TrainConfig::image) and the
// library's loader (Python's image_size, image_crop, image_threads, skip_bad_records,
// max_image_side, image_decoder, image_cpu_share, image_field, image_alpha, through
// LoaderOptions::image). What
// they do: pipeline/images/image_stage.h and decode/jpeg_image.h.
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include <cstdint>
#include <string>

#include "decode/jpeg_image.h"
#include "io/format.h"
#include "options/option_table.h"

namespace rf {

// Decode threads a loader may be given (each holds a decoder and a decoded image's buffer).
inline constexpr uint32_t kMaxImageThreads = 1024;
// The largest decoded image side (image_size, --image-size): 8192 x 8192 x 3 is 805 MB a sample
// in float32, past what a batch of a model trains on; checked before anything is sized from it.
inline constexpr uint32_t kMaxImageSize = 8192;

// Which decoder turns image records into images (pipeline/images/image_decoder.h).
enum class ImageDecoderChoice {
  kAuto,    // nvJPEG on a GPU loader where it loads, else CPU threads (a host loader: always)
  kCpu,     // libjpeg-turbo on CPU threads, whatever the device
  kNvjpeg,  // nvJPEG on the loader's GPU; refused on a host loader or where nvJPEG does not load
};

struct ImageOptions {
  // The decoded images' height and width; 0: image records come out as stored (their bytes
  // and offsets), not decoded.
  uint32_t size = 224;
  ImageCrop crop = ImageCrop::kRandomResized;  // the training crop, or the evaluation one
  uint32_t threads = 0;                        // decode threads; 0: DefaultImageThreads
  bool skip_bad_records = false;  // a JPEG that does not decode is skipped (else the run stops)
  uint32_t max_side = kDefaultMaxImageSide;  // a JPEG with a longer side is a bad record
  ImageDecoderChoice decoder = ImageDecoderChoice::kAuto;
  // nvJPEG's decoder: the share of each batch decoded on the CPU threads meanwhile; negative:
  // auto, as the consumer keeps up (pipeline/images/cpu_share.h).
  double cpu_share = -1;
  // Samples of several fields: the name of the image field decoded (the others come out as
  // stored); empty: their one image field (several: image_field must name one).
  std::string field;
  // RGBA images (4 channels: a PNG's or WebP's alpha, 255 where an image has none) instead of RGB
  // (the alpha dropped).
  bool alpha = false;

  bool operator==(const ImageOptions&) const = default;
};

// The decode threads where none are given: the cores this process may use (its share where
// several ranks share the machine: $OMPI_COMM_WORLD_LOCAL_SIZE or $LOCAL_WORLD_SIZE), less one
// for the loader's own threads (the reader, the copier and the chunk stage, which mostly wait on
// the disk, and the caller's), less `chunk_threads` more where the chunks are compressed (their
// decompression is real work); at least 1.
uint32_t DefaultImageThreads(uint32_t chunk_threads, bool compressed);

const OptionTable<ImageOptions>& ImageOptionTable();

}  // namespace rf
