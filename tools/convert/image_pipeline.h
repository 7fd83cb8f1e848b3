// RunImagePipeline: the images of an ImageSource checked, and re-encoded where the rules say, on
// several threads, handed on in input order. A fixed ring of slots moves through three stages:
//
//   read    one thread, in input order: ImageSource::Next into a free slot (the file read)
//   check   `threads` workers, any slot read: CheckImage (tools/convert/image_check.h) and,
//           under max_side, for an image larger than max_side, its re-encode as a baseline JPEG
//           (decode/jpeg_reencode.h: one JpegReencoder a worker; a PNG or WebP decoded whole
//           first, decode/png_image.h, webp_image.h)
//   sink    the calling thread, in input order: the image handed to `sink` (the writer)
//
// so reading, re-encoding and writing overlap, and re-encodes run on every worker at once.
// What the sink gets does not depend on the thread count: each image's check and re-encode is a
// function of its bytes and the rules alone, and images reach the sink in input order.
//
// Memory: the slots (4 a worker, at least 8) hold their images' bytes and re-encoded bytes; the
// reader waits while the images in flight hold more than 256 MiB (one image at least is always
// in flight); a worker's re-encoder its decode buffers (jpeg_reencode.h). A slot's buffers are
// kept for the next image, given back after one of more than 16 MiB.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/convert/image_check.h"
#include "tools/convert/image_inputs.h"

namespace rf::convert {

// Which images are stored as they are, which re-encoded (tools/convert/image_check.h).
struct ImageRules {
  uint32_t max_image_side = kDefaultMaxImageSide;  // CheckImage's: only without max_side
  // 0: every image stored as it is (CheckImage). Else an image with a side above it is resized to
  // it on its longer side (decode/jpeg_reencode.h's FitWithin) and re-encoded as a baseline JPEG
  // at `quality` (1 to 100); the others are stored as they are.
  uint32_t max_side = 0;
  int quality = 90;
};

// One image as the sink gets it.
struct CheckedImage {
  ImageItem item;          // as the source gave it (item.error: it could not be read)
  std::string refused;     // "" or why the image is refused (one phrase; the name not in it)
  ImageHeader header;      // what CheckImage read of it (its codec, size and kind)
  bool reencoded = false;  // resized and re-encoded as a baseline JPEG (under max_side)
  std::vector<uint8_t> reencoded_bytes;
  // What is stored for it, and its codec.
  const std::vector<uint8_t>& stored() const { return reencoded ? reencoded_bytes : item.bytes; }
  ImageCodec stored_codec() const { return reencoded ? ImageCodec::kJpeg : header.codec; }
};

// Drains `source` through the stages above with `threads` workers (at least 1), calling
// sink(image) on this thread for each image in input order. The first error of the source or
// of the sink stops every thread and is returned (the images read before the source's error
// are handed on first). An exception in a stage (std::bad_alloc) is rethrown here once every
// thread has stopped. Unsupported where libjpeg-turbo cannot make a re-encoder.
Status RunImagePipeline(ImageSource& source, const ImageRules& rules, uint32_t threads,
                        const std::function<Status(const CheckedImage&)>& sink);

}  // namespace rf::convert
