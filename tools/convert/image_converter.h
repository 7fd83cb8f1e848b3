// ConvertImages: the images of an ImageSource (image_inputs.h) as a bytes dataset of image
// records, one record an image, with int labels, in input order (chunks ending where the next
// image would pass chunk_bytes). Each image is checked, and stored as it is, re-encoded or
// refused, on `threads` workers (image_pipeline.h) by the rules of image_check.h:
//
//   default (max_side 0)   its original bytes, byte for byte, whatever its codec (JPEG of any
//                          kind the decoders take, PNG, WebP); one the decoders do not take, or
//                          one above max_image_side a side, refused;
//   max_side N, quality Q  an image above N a side resized to N on its longer side and
//                          re-encoded as a baseline JPEG at quality Q (decode/jpeg_reencode.h);
//                          the others their original bytes. What is stored is then within N a
//                          side, so N may not pass max_image_side, whose guard is of what is
//                          stored (the command refuses that).
//
// A source of samples of several fields (ImageSource::fields(): WebDataset with --fields) makes a
// dataset of record kind fields instead, each record the sample's image and its other fields
// (io/fields.h), the image field's media type chosen as a bytes dataset's is.
//
// The dataset's media type names its records' codec (image/jpeg, image/png, image/webp), or is
// image/* where they hold several (each record's codec is known by its first bytes:
// decode/image_record.h). The records are the same bytes whatever the thread count, and on every
// run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/codec.h"
#include "tools/convert/image_check.h"
#include "tools/convert/image_inputs.h"

namespace rf::convert {

struct ImageConvertOptions {
  uint64_t chunk_bytes = 4 << 20;
  uint32_t shards = 1;
  uint64_t max_record_bytes = uint64_t{64} << 20;
  uint32_t max_image_side = kDefaultMaxImageSide;
  uint32_t max_side = 0;  // --max-side: 0 stores every image as it is (image_pipeline.h's rules)
  int quality = 90;       // --quality, with max_side
  uint32_t threads = 0;   // workers that check and re-encode; 0: the CPUs this process may use
  CodecSpec codec = {};
  uint32_t compress_threads = 0;
  uint32_t format_version = 0;
  uint64_t dataset_id = 0;
  bool progress = true;
  // Refused images are left out and listed in SkippedReportPath(out_path) (path, tab, reason,
  // a line each, after a header line); without it, one refused image stops the conversion.
  bool skip_bad = false;
  // Each stored image's source listed in ImageListPath(out_path), in the dataset's order (sample
  // index, tab, path, tab, label, a line each, after a header line): where an image came from once
  // the tree's order is shuffled.
  bool list_images = false;
};

// "DIR/train.skipped.tsv" for "DIR/train.rfd" (or "DIR/train"): skip_bad's report.
std::string SkippedReportPath(const std::string& out_path);
// "DIR/train.images.tsv" for "DIR/train.rfd" (or "DIR/train"): list_images' list.
std::string ImageListPath(const std::string& out_path);

struct ImageConvertSummary {
  uint64_t images = 0;
  uint32_t classes = 0;
  uint64_t bytes = 0;  // chunk bytes stored
  uint64_t input_bytes = 0;
  uint64_t chunks = 0;
  uint64_t passed_over = 0;
  std::vector<std::string> links_not_followed;  // ImageSource::links_not_followed
  DType label_dtype = DType::kUInt8;
  double seconds = 0;
  std::vector<std::string> paths;
  std::vector<std::string> removed;
  // The images stored of each codec (a re-encoded one is a JPEG), of the JPEGs stored as they
  // are those progressive and those CMYK, and the media type written.
  uint64_t jpeg = 0, png = 0, webp = 0, progressive = 0, cmyk = 0;
  std::string media_type;
  // Under max_side: the images re-encoded (each resized).
  uint32_t max_side = 0;
  int quality = 0;
  uint64_t reencoded = 0;
  // Under skip_bad: the images left out, and the report that lists them (written every time).
  uint64_t skipped = 0;
  std::string skipped_report;
  std::string image_list;  // under list_images: the list written
  std::string fields;      // samples of several fields: their table (io/fields.h's text)
};

// Every image of `source` as a record, in order. An image refused (by the rules above, one too
// large to read, one whose re-encode fails) does not stop the reading: every bad image is found,
// then the conversion fails with one line naming them (the first 10 and how many in all, and
// --skip-bad), and nothing is written; under skip_bad they are left out and listed in the report
// instead (and a conversion with no image left fails so, writing nothing). Usage where max_side
// is above max_image_side or quality not 1 to 100.
Result<ImageConvertSummary> ConvertImages(ImageSource& source, const std::string& out_path,
                                          const ImageConvertOptions& options);
std::string ImageConvertReport(const ImageConvertSummary& s);
// "2 links to directories, not followed: tree/a/loop, tree/b/up" (the first 5, then "and N
// more"), for the summary and the command's line on stderr; "" for none.
std::string LinksNotFollowedText(const std::vector<std::string>& links);

}  // namespace rf::convert
