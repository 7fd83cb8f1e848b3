#include "src/train_data.h"

#include <string>

#include "io/remote/remote_object.h"
#include "pipeline/order/window_order.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/mixture.h"

namespace rf {
namespace {

// Usage naming the dataset where the CNN cannot train it. It trains images: samples of 3 dims
// (C,H,W) or 2 (H,W, one channel: how an .npy of (N,H,W) is stored), of a dtype it decodes
// (uint8, float16, bfloat16, float32; not ids such as token rows), fixed-shape (not records of
// any size but image records, which the loader decodes to --image-size), with labels of 2
// or more classes.
Status CheckTrainable(const std::string& flag, const std::string& path, const format::Header& h,
                      uint32_t image_size) {
  const std::vector<uint64_t> shape = h.Shape();
  std::string why;
  if (format::HoldsImageRecords(h) && image_size == 0) {
    why =
        "it holds image records, which --image-size 0 leaves undecoded; give the size to "
        "train at (224 by default)";
  } else if (format::HoldsImageRecords(h)) {
    // Decoded to 3 x image_size x image_size by the loader.
  } else if (h.record_kind == format::RecordKind::kFields) {
    why = "it holds samples of several fields (" + format::FieldsText(h.fields) +
          "); the CNN trains fixed-shape image tensors or image records (read them with "
          "ringfeed.Loader, which hands out each batch as a dict by field name)";
  } else if (h.variable()) {
    why = "it holds " + std::string(format::RecordKindName(h.record_kind)) +
          " records of any size; the CNN trains fixed-shape image tensors (read them with "
          "ringfeed.Loader, which hands them out as values and offsets)";
  } else if (!IsImageDType(h.sample_dtype)) {
    why = "its samples are " + std::string(DTypeName(h.sample_dtype)) +
          " ids; the CNN trains uint8, float16, bfloat16 or float32 images";
  } else if (shape.size() != 2 && shape.size() != 3) {
    why = "its samples have shape " + format::ShapeText(shape) +
          "; the CNN trains images of shape C,H,W or H,W";
  } else if (!h.HasLabels()) {
    why = "it has no labels; the CNN trains a classifier";
  } else if (h.num_classes < 2) {
    why = "it has 1 class; the CNN needs 2 or more";
  }
  if (why.empty()) return Status::Ok();
  return Status::Usage(flag + " " + ShownPath(path) + ": cannot train on it: " + why);
}

}  // namespace

Result<RunData> OpenData(const TrainConfig& c) {
  RunData d;
  RF_ASSIGN_OR_RETURN(const std::vector<std::string> paths, c.pipeline.DataPaths());
  // A cache's budget is shared by every dataset the run reads: the mixture's and the test set.
  const auto datasets = static_cast<uint32_t>(paths.size() + (c.test.empty() ? 0 : 1));
  for (const std::string& path : paths) {
    RF_ASSIGN_OR_RETURN(Dataset one, OpenDataset(c.pipeline, path, datasets));
    RF_RETURN_IF_ERROR(CheckTrainable("--data", path, one.header(), c.image.size));
    d.train.push_back(std::move(one));
  }
  if (!c.pipeline.weights.empty()) {
    Result<std::vector<double>> weights = NormalizeWeights(c.pipeline.weights, d.train.size());
    if (!weights.ok()) return Status::Usage("--" + weights.status().message());  // "--weights..."
    d.weights = std::move(weights).value();
    Status mixable = CheckMixable(d.sources());
    if (!mixable.ok()) return Status::Usage("--data: " + mixable.ToString());
  }
  if (c.test.empty()) return d;
  RF_ASSIGN_OR_RETURN(d.test, OpenDataset(c.pipeline, c.test, datasets));
  RF_RETURN_IF_ERROR(CheckTrainable("--test", c.test, d.test->header(), c.image.size));
  const format::Header &h = d.first().header(), &t = d.test->header();
  // Decoded images have the model's input shape whatever their files' sizes.
  const bool same_shape =
      format::HoldsImageRecords(h) || format::HoldsImageRecords(t)
          ? format::HoldsImageRecords(h) && format::HoldsImageRecords(t)
          : t.channels == h.channels && t.height == h.height && t.width == h.width;
  if (!same_shape || t.num_classes != h.num_classes) {
    return Status::Usage("--test " + ShownPath(c.test) + " has another shape or class count than " +
                         d.first().path());
  }
  return d;
}

Result<uint64_t> EpochSamplesOf(const TrainConfig& c, const RunData& data, uint64_t epoch) {
  if (!data.mixture()) return c.pipeline.EpochSamplesFor(data.first().ChunkSampleCounts(), epoch);
  std::vector<uint64_t> samples;
  for (const Dataset& d : data.train) samples.push_back(d.sample_count());
  const OrderSettings& order = c.pipeline.order;
  RF_ASSIGN_OR_RETURN(const uint64_t count,
                      MixtureEpochCount(MixtureSamples(samples, data.weights), order, epoch));
  return EpochSamples(count, order.batch_size, order.drop_last);
}

uint64_t OrdinaryEpochSamples(const TrainConfig& c, const RunData& data) {
  OrderSettings order = c.pipeline.order;
  order.resumed = {};
  if (!data.mixture())
    return WindowOrder(data.first().ChunkSampleCounts(), order).EpochSampleCount();
  std::vector<uint64_t> samples;
  for (const Dataset& d : data.train) samples.push_back(d.sample_count());
  const Result<uint64_t> count = MixtureEpochCount(MixtureSamples(samples, data.weights), order, 0);
  return count.ok() ? count.value() : 0;
}

}  // namespace rf
