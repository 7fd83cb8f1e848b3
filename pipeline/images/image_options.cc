#include "pipeline/images/image_options.h"

#include <algorithm>

#include "core/cpus.h"

namespace rf {
namespace {

OptionTable<ImageOptions> MakeTable() {
  OptionTable<ImageOptions> t;
  t.Field(
       "image-size", OptionType::kCount, [](auto& o) -> auto& { return o.size; })
      .Range(0, kMaxImageSize)
      .For(kTrainCommand | kLoaderApi)
      .Help(
          "image records are decoded to SIZE x SIZE images (3 channels; 4 with image_alpha keep): "
          "a random resized "
          "crop and flip for training, the centre crop of the image resized to SIZE / 0.875 for "
          "evaluation; 0 (the loader only): they come out as stored, their bytes and offsets");
  t.Word("image-crop", [](auto& o) -> auto& { return o.crop; },
         {{"random", ImageCrop::kRandomResized}, {"center", ImageCrop::kCenter}})
      .For(kLoaderApi)
      .Help(
          "decoded images: random (torchvision's RandomResizedCrop, scale 0.08 to 1, ratio 3/4 "
          "to 4/3, and a horizontal flip with probability 1/2, each a function of the seed, the "
          "epoch and the sample's index) for training, or center (the shorter side resized to "
          "image_size / 0.875, the centre image_size x image_size) for evaluation");
  t.Field(
       "image-threads", OptionType::kCount, [](auto& o) -> auto& { return o.threads; })
      .Range(0, kMaxImageThreads)
      .For(kTrainCommand | kLoaderApi)
      .Help(
          "threads that decode and crop image records, ahead of the consumer; 0: the cores "
          "this process may use (its ranks' share) less one for the loader's own threads, at "
          "least 1");
  t.Field(
       "skip-bad-records", OptionType::kSwitch, [](auto& o) -> auto& { return o.skip_bad_records; })
      .For(kTrainCommand | kLoaderApi)
      .Help(
          "an image record that does not decode (truncated, corrupt, too large) is skipped, its "
          "batch one sample shorter, and counted and named at the epoch's end; without it, the "
          "first such record stops the run naming its file, chunk and record");
  t.Field(
       "max-image-side", OptionType::kCount, [](auto& o) -> auto& { return o.max_side; })
      .Range(1, 65535)
      .For(kTrainCommand | kLoaderApi)
      .Help(
          "the longest side of an image record, from its header, read before anything is "
          "allocated for it; a longer one is a bad record (ringfeed-convert images' "
          "--max-image-side)");
  t.Word("image-decoder", [](auto& o) -> auto& { return o.decoder; },
         {{"auto", ImageDecoderChoice::kAuto},
          {"cpu", ImageDecoderChoice::kCpu},
          {"nvjpeg", ImageDecoderChoice::kNvjpeg}})
      .For(kTrainCommand | kLoaderApi)
      .Help(
          "what decodes image records: nvjpeg (nvJPEG's batched decode on the loader's GPU, "
          "its hardware decoder where the GPU has one, and the crop on the GPU; only the JPEG "
          "bytes cross PCIe; libnvjpeg.so.13 is loaded at run time, RINGFEED_NVJPEG names it "
          "where the loader does not find it), cpu (libjpeg-turbo on image_threads CPU threads), "
          "or auto (nvjpeg on a GPU where it loads and the dataset may hold JPEGs, its media type "
          "image/jpeg or image/*; else cpu). A dataset of PNG or WebP records refuses nvjpeg");
  t.Field(
       "image-cpu-share", OptionType::kNumber, [](auto& o) -> auto& { return o.cpu_share; })
      .RangeReal(-1, 1)
      .For(kTrainCommand | kLoaderApi)
      .Help(
          "with nvjpeg: the share of each batch decoded on the CPU threads while nvJPEG decodes "
          "the rest, so the two add up; which records go is a function of the seed, the epoch "
          "and the sample index, so a run repeats bit for bit at the same share (the two "
          "decoders' pixels differ by their rounding; the crops are the same); 1: all on the CPU "
          "threads, 0: none; -1: as much as keeps the consumer from waiting, from the fastest "
          "split (about 0.1 with 15 threads) up to 1 for a model the CPU threads keep up with "
          "(nvJPEG's per-image work slows a model on the same GPU), so which decoder takes a "
          "record depends on timing: give a number for runs that repeat bit for bit");
  t.Field(
       "image-field", OptionType::kText, [](auto& o) -> auto& { return o.field; })
      .For(kLoaderApi)
      .Help(
          "samples of several fields (ringfeed-convert images --fields, DatasetWriter(fields=)): "
          "the image field decoded, by name; their other fields, other image fields too, come "
          "out as stored; left out: their one image field (samples of several image fields "
          "must name one)");
  t.Word("image-alpha", [](auto& o) -> auto& { return o.alpha; }, {{"drop", false}, {"keep", true}})
      .For(kLoaderApi)
      .Help(
          "decoded images: drop (RGB, 3 channels: a PNG's or WebP's alpha dropped, the colour as "
          "stored, as PIL's convert('RGB')) or keep (RGBA, 4 channels: the alpha as stored, a "
          "PNG's tRNS transparency applied, 255 for an image without alpha, every JPEG; each "
          "channel resized on its own; normalize's alpha statistics 0 and 255 unless mean and std "
          "give 4 values)");
  return t;
}

}  // namespace

uint32_t DefaultImageThreads(uint32_t chunk_threads, bool compressed) {
  const uint32_t cores = std::max<uint32_t>(1, AvailableCpus() / LocalRanks());
  const uint32_t own = 1 + (compressed ? chunk_threads : 0);
  return cores > own ? cores - own : 1;
}

const OptionTable<ImageOptions>& ImageOptionTable() {
  static const OptionTable<ImageOptions> table = MakeTable();
  return table;
}

}  // namespace rf
