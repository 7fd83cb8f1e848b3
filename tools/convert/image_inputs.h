// The image inputs of `ringfeed-convert images`, each an ImageSource that ConvertImages
// (image_converter.h) drains into a bytes dataset of image records, one record an image, its
// original bytes, with int labels:
//
//   ImageFolder   a directory with one subfolder a class, as torchvision's ImageFolder: the class
//                 index is the folder's place in the sorted (byte order) folder names, and the
//                 names go into the dataset (io/format.h's class names block). Each class folder
//                 is walked recursively in name order (the images then shuffled unless the
//                 order is kept: OpenImageFolderSource), not into symbolic links to directories
//                 (a link to its own parent made a tree of 2 images yield 82): each one met is
//                 passed over, named and counted (links to files are followed); files whose
//                 extension is an image's
//                 (torchvision's list: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case)
//                 are images, other files are passed over and counted. A class folder with no
//                 image is refused naming it, before anything is read. With fields
//                 (--fields jpg,txt,cls), each image's sample keeps the files of those
//                 extensions beside it (a/x.txt beside a/x.jpg) as its fields, as WebDataset's
//                 below; cls is its class.
//   WebDataset    .tar shards, each sample the files of one key (the name up to its basename's
//                 first '.'), read in order: KEY.jpg (or .jpeg, .png, .webp) the image, KEY.cls its
//                 label (a decimal integer, 0 or more). Other members of a sample (.json, .txt) are
//                 passed over. A first pass reads the headers and the .cls members only (the images
//                 are seeked over), so a sample without an image or a label (or with two), a bad
//                 label or a malformed tar is refused before anything is written, and the class
//                 count is known (one more than the largest label): there are no class names.
//                 The tar reader's bounds (long names, pax headers) are tar_reader.h's.
//                 With fields (--fields jpg,txt,json,cls), each sample keeps the members of those
//                 extensions as its fields (io/fields.h), in that order: the one image extension
//                 named is the image field (whatever the sample's image codec), cls the label (a
//                 dataset without labels where it is not named), txt text/plain bytes, json
//                 application/json bytes, any other extension bytes; every sample must hold each
//                 one (the first pass refuses a sample without, naming it and the member).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/fields.h"

namespace rf::convert {

// One image of a source: where it is (a file, or "SHARD.tar:MEMBER"), its bytes and its label.
struct ImageItem {
  std::string name;
  std::vector<uint8_t> bytes;
  int64_t label = 0;
  // Why the image could not be read (unreadable, too large), named with the bad images; "" when
  // bytes holds it.
  std::string error;
  // Samples of several fields (ImageSource::fields()): the bytes of each stored field but the
  // image, in the table's order.
  std::vector<std::vector<uint8_t>> extras;
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
  // Samples of several fields (--fields): the table (io/fields.h), the image field among them;
  // empty: image records.
  virtual std::vector<format::FieldSpec> fields() const { return {}; }
  // What the dataset's header records of the source (io/format.h's origin): the kind of input
  // and the order its images were stored in, "imagefolder;order=shuffled;seed=0x..." (the
  // shuffle's seed), "imagefolder;order=walk" or "webdataset;order=shards".
  virtual std::string origin() const = 0;
  virtual std::vector<std::string> input_paths() const = 0;
  virtual uint64_t input_bytes() const = 0;  // 0: unknown
  // Files passed over as not images (ImageFolder), members passed over (WebDataset).
  virtual uint64_t passed_over() const { return 0; }
  // The symbolic links to directories the walk did not follow (ImageFolder), in walk order.
  virtual std::vector<std::string> links_not_followed() const { return {}; }
};

// The seed of an ImageFolder's shuffled order (OpenImageFolderSource).
inline constexpr uint64_t kImageFolderOrderSeed = 0x696d616765735f31ull;

// `max_file_bytes`: an image file larger than this is refused (named) rather than read. The
// images come in a shuffle of the walk's order (classes in sorted order, each folder's files in
// name order): Fisher-Yates by xoshiro256** seeded with kImageFolderOrderSeed, so that a dataset's
// chunks mix its classes (a loader's window shuffle then draws batches close to a uniform
// shuffle's) and the order is a function of the tree's file names alone; `keep_order`: the walk's
// order itself.
// `fields`: samples of several fields (--fields jpg,txt,cls): the image, and each other
// extension the file of that extension beside it (a/x.txt beside a/x.jpg: its caption), which
// every image must have (refused, naming both, before anything is read); cls the class folder's
// label (without it, a dataset without labels or class names).
Result<std::unique_ptr<ImageSource>> OpenImageFolderSource(
    const std::string& dir, uint64_t max_file_bytes, bool keep_order = false,
    const std::vector<std::string>& fields = {});
// `fields`: the extensions kept as each sample's fields (above); empty: image records.
Result<std::unique_ptr<ImageSource>> OpenWebDatasetSource(
    const std::vector<std::string>& tars, uint64_t max_file_bytes,
    const std::vector<std::string>& fields = {});

}  // namespace rf::convert
