// ResolveLoader: every decision a loader's options and datasets call for, made once, before
// anything is built. Which kind of batch (BatchKind), over one dataset or a weighted mixture of
// several, with which decode, in which output shape and dtype, staged where; and every option
// that would do nothing for that kind, or that does not fit the data, refused (Status::Usage,
// naming the option). Loader (pipeline/loader.h) builds what the plan says, through the maker of
// its kind (pipeline/makers/makers.h); Python reads the plan (kind, dtype, sample shape) and
// decides nothing of its own.
//
// A new kind of batch is one BatchKind, one branch of ResolveLoader and one maker (a row of
// pipeline/makers/makers.cc's table).
//
// Thread safety: a pure function of its arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "decode/jpeg_image.h"
#include "io/dataset.h"
#include "pipeline/output/batch_decode.h"
#include "pipeline/plan/loader_options.h"

namespace rf {

enum class BatchKind {
  kTensors,    // fixed-shape samples, decoded into the output dtype and layout (or raw: source())
  kRecords,    // records of any size (tokens, bytes), handed out as stored: values and offsets
  kImages,     // image records decoded into images of image.size (pipeline/images/)
  kSequences,  // token records packed into rows of sequence_length + 1 (pipeline/sequences/)
  kFields,     // samples of several fields, by name (pipeline/fields/): an image field decoded
               // as kImages' records are where image_size is given, the others as stored
};
// "tensors", "records", "images", "sequences", "fields".
const char* BatchKindName(BatchKind kind);

struct LoaderPlan {
  BatchKind kind = BatchKind::kTensors;
  // The mixture's weights, normalized to sum 1; empty: one dataset.
  std::vector<double> weights;
  // The first dataset's header; a mixture's channel statistics are the weighted mixture's.
  format::Header header;
  // Next() hands out batches (output_buffers > 0); else only the raw source() serves.
  bool decoded = true;
  // One sample's output shape ({C, H, W}, {H, W, C}, or the stored shape); records: empty.
  std::vector<int64_t> sample_shape;
  // The batches' dtype: the decode's output, the images', or the records' stored one.
  DType output = DType::kFloat32;
  // The output options as taken: dtype and normalize resolved where they were not given.
  OutputOptions output_options;
  DecodeSpec decode;      // kTensors with decoded: stored samples to the output
  ImageDecodeSpec image;  // kImages, and kFields' decoded image field: the records to images
  // kFields: the image field decoded into images (its index in the header's fields), -1 none.
  int image_field = -1;
  // The chunks are gathered in host memory whatever the device (records, images: their sizes
  // and the decoder are on the host), so the ring is never read by a GPU's copy engine and is
  // left unpinned.
  bool host_staging = false;
  // The extra output buffer a kind needs with options.worker (decoded images: one finished
  // batch waits in the worker's queue while the stage keeps its own in flight).
  uint32_t worker_buffers = 0;
  // The Loader stages one source for the maker to read (a mixture's, the managed one or a
  // StreamingSource); false: the maker reads its datasets through sources of its own (packed
  // sequences: one a dataset, each in the order of a world of one).
  bool staged = true;

  bool mixture() const { return !weights.empty(); }
};

// The plan for `options` over `datasets` (one, or a mixture's, each opened; their own checks
// done). Usage errors, each naming the option: options the kind does nothing with (an image
// option for batches that are no decoded images, augment or mean and std for records), managed
// mode for what it cannot serve (records, images, a mixture), more than kMaxOutputBuffers
// buffers, a decode the samples cannot take (DecodeSpec / ImageDecodeSpec::Validate, layout NHWC
// of samples that are no images, an augmentation CheckAugmentFits refuses), weights
// NormalizeWeights refuses or datasets of other samples (CheckMixable), a mixture's state
// without a mixture, drop_last dropping every batch; the packing's options without
// sequence_length. With sequence_length, packed sequences (kSequences): the output dtype int64
// unless given; what else they refuse is SequenceLoader::Create's (pipeline/sequences/
// sequence_loader.h).
Result<LoaderPlan> ResolveLoader(const LoaderOptions& options,
                                 const std::vector<const Dataset*>& datasets);

// Usage naming the augmentation (`flag`: how the caller's user names it, "--augment" or
// "augment") where it cannot apply to `h`'s samples: any transform on samples that are not images
// (token ids, 1 or 4 dims: it would flip or zero ids), a crop whose padding is not below the
// image's height and width (every crop would be all padding).
Status CheckAugmentFits(const AugmentParams& augment, const format::Header& h,
                        const std::string& flag);

}  // namespace rf
