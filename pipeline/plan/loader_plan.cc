#include "pipeline/plan/loader_plan.h"

#include <algorithm>

#include "core/augment_spec.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/mixture.h"

namespace rf {
namespace {

// The decode a loader's options ask of this dataset (augment: o.augment parsed).
DecodeSpec DecodeFor(const format::Header& h, const OutputOptions& o, const AugmentParams& augment,
                     uint64_t seed) {
  DecodeSpec s;
  s.stored = h.sample_dtype;
  s.output = o.dtype;
  s.layout = o.layout;
  s.normalize = o.normalize;
  s.channels = h.channels;
  s.height = h.height;
  s.width = h.width;
  s.augment = augment;
  s.seed = seed;
  s.mean.assign(h.mean.begin(), h.mean.begin() + h.channels);
  s.stddev.assign(h.stddev.begin(), h.stddev.begin() + h.channels);
  if (!o.mean.empty() || !o.stddev.empty()) {  // DecodeSpec::Validate checks their counts
    s.mean = o.mean;
    s.stddev = o.stddev;
  }
  return s;
}

// One sample's output shape: the stored shape, or for images (C, H, W) in NCHW, (H, W, C) in
// NHWC. Usage for NHWC on samples that are not images.
Result<std::vector<int64_t>> SampleShape(const format::Header& h, SampleLayout layout) {
  const std::vector<uint64_t> stored = h.Shape();
  std::vector<int64_t> shape(stored.begin(), stored.end());
  if (layout == SampleLayout::kNCHW) return shape;
  if (shape.size() != 3) {
    return Status::Usage("layout NHWC needs image samples (C, H, W); this dataset's are " +
                         format::ShapeText(stored));
  }
  return std::vector<int64_t>{shape[1], shape[2], shape[0]};
}

bool AugmentGiven(const OutputOptions& out) {
  return !out.augment.empty() && out.augment != "none";
}

Status CheckBuffers(const LoaderOptions& options) {
  if (options.output_buffers <= kMaxOutputBuffers) return Status::Ok();
  return Status::Usage("prefetch must be at most " + std::to_string(kMaxOutputBuffers) +
                       " batches, got " + std::to_string(options.output_buffers));
}

Status CheckStatisticsUsed(const OutputOptions& out) {
  if (out.normalize || (out.mean.empty() && out.stddev.empty())) return Status::Ok();
  return Status::Usage("mean and std: given with normalize off, they would do nothing");
}

// Usage for an image option where the batches are no decoded images (`h`'s records handed out
// as stored, or no image records at all).
Status CheckNoImageOptions(const LoaderOptions& options, const format::Header& h) {
  const ImageOptions& image = options.image;
  const ImageOptions plain;
  const char* idle = image.crop != plain.crop           ? "image_crop"
                     : image.threads != plain.threads   ? "image_threads"
                     : image.skip_bad_records           ? "skip_bad_records"
                     : image.max_side != plain.max_side ? "max_image_side"
                     : image.decoder != plain.decoder   ? "image_decoder"
                     : !image.field.empty()             ? "image_field"
                     : image.alpha                      ? "image_alpha"
                                                        : nullptr;
  if (idle == nullptr) return Status::Ok();
  return Status::Usage(std::string(idle) + ": " +
                       ((format::HoldsImageRecords(h) || format::ImageFieldIndex(h.fields) != -1) &&
                                options.output_buffers > 0
                            ? "image_size 0 hands out the images' bytes as stored"
                            : "this dataset's batches are no decoded images "
                              "(it holds no image records)") +
                       "; leave it out");
}

// The names of the fields of `h` that `keep` takes, ", " between them.
template <typename Keep>
std::string FieldNames(const format::Header& h, Keep keep) {
  std::string names;
  for (const format::FieldSpec& f : h.fields) {
    if (!keep(f)) continue;
    if (!names.empty()) names += ", ";
    names += f.name;
  }
  return names;
}

// Samples of several fields under image_size (not 0, as by default): the index of the image
// field decoded, `named` (image_field) or else their one image field; -1 where they have none and
// none is named (their fields come out as stored); Usage where the named field is no image field
// of theirs, or none is named and they have several (which to decode is the user's to say).
Result<int> ImageFieldOf(const format::Header& h, const std::string& named) {
  const auto image = [](const format::FieldSpec& f) { return f.image(); };
  if (!named.empty()) {
    const int i = format::FindField(h.fields, named);
    if (i >= 0 && h.fields[static_cast<size_t>(i)].image()) return i;
    const std::string images = FieldNames(h, image);
    return Status::Usage(
        "image_field: '" + named + "' is " +
        (i < 0 ? "no field of these samples (" + FieldNames(h, [](auto&) { return true; }) + ")"
               : "no image field") +
        "; " + (images.empty() ? "they have none" : "their image fields: " + images));
  }
  const int found = format::ImageFieldIndex(h.fields);
  if (found != -2) return found;
  return Status::Usage("image_size: these samples have several image fields (" +
                       FieldNames(h, image) +
                       "); image_field names the one decoded (the others come out as stored), "
                       "image_size 0 hands them all out as stored");
}

// Usage where drop_last would drop every batch of an epoch.
Status CheckDropLast(const LoaderOptions& options, const std::vector<const Dataset*>& datasets,
                     const std::vector<double>& weights) {
  const OrderSettings& order = options.pipeline.order;
  if (!order.drop_last) return Status::Ok();
  // An epoch shorter than one batch would hand out nothing, every epoch.
  uint64_t per_rank = 0;
  if (!weights.empty()) {
    std::vector<uint64_t> samples;
    for (const Dataset* d : datasets) samples.push_back(d->sample_count());
    OrderSettings ordinary = order;
    ordinary.resumed = {};
    RF_ASSIGN_OR_RETURN(per_rank, MixtureEpochCount(MixtureSamples(samples, weights), ordinary, 0));
  } else {
    per_rank = WindowOrder(datasets[0]->ChunkSampleCounts(), order).EpochSampleCount();
  }
  if (per_rank < order.batch_size) {
    return Status::Usage("--drop-last with --batch-size " + std::to_string(order.batch_size) +
                         " drops every batch: an epoch holds " + std::to_string(per_rank) +
                         " samples" + (order.world_size > 1 ? " a rank" : "") +
                         "; leave --drop-last out or take a smaller batch");
  }
  return Status::Ok();
}

// The decode of image records into images (kImages), in the output `out` (options.output
// with dtype and normalize taken).
Result<ImageDecodeSpec> ImageSpecFor(const LoaderOptions& options, const OutputOptions& out) {
  if (AugmentGiven(out)) {
    return Status::Usage(
        "augment: image records are decoded with their own random resized crop and flip "
        "(image_crop); leave augment off");
  }
  if (options.pipeline.mode == PipelineMode::kManaged)
    return Status::Usage("mode managed serves fixed-shape tensors; image records stream");
  RF_RETURN_IF_ERROR(CheckBuffers(options));
  RF_RETURN_IF_ERROR(CheckStatisticsUsed(out));
  ImageDecodeSpec spec;
  spec.size = options.image.size;
  spec.crop = options.image.crop;
  spec.output = out.dtype;
  spec.channels_last = out.layout == SampleLayout::kNHWC;
  spec.normalize = out.normalize;
  spec.max_side = options.image.max_side;
  spec.seed = options.pipeline.order.seed;
  spec.channels = options.image.alpha ? 4 : 3;
  if (!out.mean.empty() || !out.stddev.empty()) {
    // With the alpha kept, 3 values leave the alpha's own (0 and 255: alpha / 255).
    const size_t n = out.mean.size();
    if (n != out.stddev.size() || (n != 3 && n != spec.channels)) {
      return Status::Usage("mean and std: decoded images have " + std::to_string(spec.channels) +
                           " channels, so one value a channel (" + std::to_string(out.mean.size()) +
                           " means and " + std::to_string(out.stddev.size()) + " stds given" +
                           (spec.channels == 4 ? "; or 3, the alpha's left 0 and 255" : "") +
                           "), in pixel units (0 to 255)");
    }
    std::copy(out.mean.begin(), out.mean.end(), spec.mean.begin());
    std::copy(out.stddev.begin(), out.stddev.end(), spec.stddev.begin());
  }
  RF_RETURN_IF_ERROR(spec.Validate());
  return spec;
}

bool IsFloatDType(DType t) {
  return t == DType::kFloat32 || t == DType::kBFloat16 || t == DType::kFloat16;
}

// The output options with dtype and normalize taken where the caller told it gave neither
// (OutputOptions::given); Usage for records handed out (decoded) given another dtype, or
// normalize (the raw level takes no output options).
Result<OutputOptions> ResolveOutput(const OutputOptions& in, BatchKind kind, bool decoded,
                                    const format::Header& h) {
  OutputOptions out = in;
  const OutputOptions::Given& given = in.given;
  if (kind == BatchKind::kRecords) {
    if (given.told && decoded &&
        ((given.dtype && in.dtype != h.sample_dtype) || (given.normalize && in.normalize))) {
      return Status::Usage(std::string("dtype and normalize: ") +
                           format::RecordKindName(h.record_kind) + " records come out as stored (" +
                           std::string(DTypeName(h.sample_dtype)) +
                           " values and int64 offsets), not decoded");
    }
    out.dtype = h.sample_dtype;
    out.normalize = false;
    return out;
  }
  if (!given.told) return out;
  if (!given.dtype) {
    out.dtype = kind == BatchKind::kImages || IsImageDType(h.sample_dtype) ? DType::kFloat32
                                                                           : h.sample_dtype;
  }
  if (!given.normalize) out.normalize = IsFloatDType(out.dtype);
  return out;
}

// Records of any size: handed out as stored, values and offsets, no decode.
Status CheckRecords(const LoaderOptions& options, const format::Header& h) {
  const OutputOptions& out = options.output;
  const std::string kind = format::RecordKindName(h.record_kind);
  if (AugmentGiven(out))
    return Status::Usage("augment: " + kind + " records are not images; leave it off");
  if (!out.mean.empty() || !out.stddev.empty())
    return Status::Usage("mean and std: " + kind + " records are not normalized");
  if (options.pipeline.mode == PipelineMode::kManaged) {
    return Status::Usage("mode managed serves fixed-shape tensors; " + kind +
                         " records stream (mode streaming)");
  }
  return CheckBuffers(options);
}

}  // namespace

const char* BatchKindName(BatchKind kind) {
  switch (kind) {
    case BatchKind::kTensors:
      return "tensors";
    case BatchKind::kRecords:
      return "records";
    case BatchKind::kImages:
      return "images";
    case BatchKind::kSequences:
      return "sequences";
    case BatchKind::kFields:
      return "fields";
  }
  return "?";
}

Status CheckAugmentFits(const AugmentParams& augment, const format::Header& h,
                        const std::string& flag) {
  if (!augment.enabled()) return Status::Ok();
  const std::vector<uint64_t> shape = h.Shape();
  const std::string spec = flag + " " + AugmentSpecText(augment);
  if (!IsImageDType(h.sample_dtype) || (shape.size() != 2 && shape.size() != 3)) {
    return Status::Usage(spec +
                         ": augmentation transforms images, and this dataset's samples are " +
                         std::string(DTypeName(h.sample_dtype)) + " of shape " +
                         format::ShapeText(shape) + "; leave it off");
  }
  const uint32_t side = std::min(h.height, h.width);
  if (augment.crop_pad >= side) {
    return Status::Usage(
        spec + ": a crop padding of " + std::to_string(augment.crop_pad) +
        " pixels is not below the " + std::to_string(h.height) + "x" + std::to_string(h.width) +
        " images' side, so every crop would be padding only; at most " + std::to_string(side - 1));
  }
  return Status::Ok();
}

namespace {

// Packed sequences' plan: rows of token ids, packed by the maker from sources of its own, in the
// dtype given (int64 where none is). The weights and the rest are SequenceLoader::Create's.
Result<LoaderPlan> PackedPlan(const LoaderOptions& options, LoaderPlan plan) {
  RF_RETURN_IF_ERROR(CheckNoImageOptions(options, plan.header));
  plan.kind = BatchKind::kSequences;
  plan.staged = false;
  plan.host_staging = true;
  if (!plan.decoded) {
    return Status::Usage(
        "output_buffers: packed sequences are handed out in the loader's "
        "buffers; 0 leaves none");
  }
  plan.output_options = options.output;
  if (options.output.given.told && !options.output.given.dtype)
    plan.output_options.dtype = DType::kInt64;
  plan.output = plan.output_options.dtype;
  return plan;
}

}  // namespace

Result<LoaderPlan> ResolveLoader(const LoaderOptions& options,
                                 const std::vector<const Dataset*>& datasets) {
  if (datasets.empty()) return Status::Usage("data: no dataset");
  LoaderPlan plan;
  plan.header = datasets[0]->header();
  format::Header& h = plan.header;
  plan.decoded = options.output_buffers > 0;
  const SequenceOptions& seq = options.sequence;
  if (seq.length != 0) return PackedPlan(options, std::move(plan));
  if (seq.eod_token != -1 || seq.pad_token != 0 || seq.pad)
    return Status::Usage(
        "eod_token, pad_token and packing shape packed sequences: give sequence_length too");
  if (datasets.size() > 1 || !options.pipeline.weights.empty()) {
    // A mixture: samples of one shape and type, normalized with the mixture's statistics.
    RF_ASSIGN_OR_RETURN(plan.weights, NormalizeWeights(options.pipeline.weights, datasets.size()));
    RF_RETURN_IF_ERROR(CheckMixable(datasets));
    if (options.pipeline.mode == PipelineMode::kManaged)
      return Status::Usage(
          "managed mode loads one dataset into GPU memory; a mixture of datasets streams "
          "(streaming mode, the default)");
    std::vector<const format::Header*> headers;
    for (const Dataset* d : datasets) headers.push_back(&d->header());
    if (!MixtureStatistics(headers, plan.weights, h.channels, &h.mean, &h.stddev))
      return Status::Usage("weights: the datasets' channel statistics, mixed, overflow float32");
  } else if (!options.pipeline.mixture.sources.empty()) {
    return Status::Usage("a mixture's state is for a mixture of datasets (weights)");
  }
  plan.kind = h.record_kind == format::RecordKind::kFields ? BatchKind::kFields
              : plan.decoded && format::HoldsImageRecords(h) && options.image.size != 0
                  ? BatchKind::kImages
              : h.variable() ? BatchKind::kRecords
                             : BatchKind::kTensors;
  if (!options.image.field.empty() && plan.kind != BatchKind::kFields)
    return Status::Usage(
        "image_field: names one field of samples of several fields; this dataset's records "
        "are " +
        std::string(format::RecordKindName(h.record_kind)) + "; leave it out");
  if (plan.kind == BatchKind::kFields && plan.decoded && options.image.size != 0) {
    RF_ASSIGN_OR_RETURN(plan.image_field, ImageFieldOf(h, options.image.field));
  }
  // A sample's fields come out as their kinds do alone: the decoded image field's images as
  // image records', the others as stored (records').
  const BatchKind output_kind = plan.kind != BatchKind::kFields ? plan.kind
                                : plan.image_field >= 0         ? BatchKind::kImages
                                                                : BatchKind::kRecords;
  RF_ASSIGN_OR_RETURN(plan.output_options,
                      ResolveOutput(options.output, output_kind, plan.decoded, h));
  const OutputOptions& out = plan.output_options;
  if (output_kind == BatchKind::kImages) {
    RF_ASSIGN_OR_RETURN(plan.image, ImageSpecFor(options, plan.output_options));
    plan.sample_shape = plan.image.SampleShape();
    plan.output = out.dtype;
    plan.host_staging = true;
    // With the worker (one dataset), the stage runs on its thread and one finished batch may
    // wait in its queue.
    plan.worker_buffers = options.worker && !plan.mixture() ? 1 : 0;
  } else {
    RF_RETURN_IF_ERROR(CheckNoImageOptions(options, h));
    if (output_kind == BatchKind::kRecords) {
      RF_RETURN_IF_ERROR(CheckRecords(options, h));
      plan.output = h.sample_dtype;
      plan.host_staging = true;
    } else {
      plan.output = plan.decoded ? out.dtype : h.sample_dtype;
    }
  }
  if (plan.decoded && plan.kind == BatchKind::kTensors) {
    RF_RETURN_IF_ERROR(CheckStatisticsUsed(out));
    RF_ASSIGN_OR_RETURN(const AugmentParams augment, ParseAugmentSpec(out.augment));
    RF_RETURN_IF_ERROR(CheckAugmentFits(augment, h, "augment"));
    RF_RETURN_IF_ERROR(CheckBuffers(options));
    plan.decode = DecodeFor(h, out, augment, options.pipeline.order.seed);
    RF_RETURN_IF_ERROR(plan.decode.Validate());
    RF_ASSIGN_OR_RETURN(plan.sample_shape, SampleShape(h, out.layout));
  }
  RF_RETURN_IF_ERROR(CheckDropLast(options, datasets, plan.weights));
  return plan;
}

}  // namespace rf
