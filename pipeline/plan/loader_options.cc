#include "pipeline/plan/loader_options.h"

#include <cfloat>
#include <cstdint>

#include "core/augment_spec.h"
#include "core/dtype.h"
#include "pipeline/images/image_options.h"
#include "pipeline/sources/pipeline_config.h"

namespace rf {
namespace {

OptionTable<LoaderOptions> MakeTable() {
  OptionTable<LoaderOptions> t;
  t.Include(
      PipelineOptionTable(), kLoaderApi, [](auto& o) -> auto& { return o.pipeline; });
  t.Include(
      ImageOptionTable(), kLoaderApi, [](auto& o) -> auto& { return o.image; });
  std::vector<std::pair<std::string, DType>> dtypes;
  for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kUInt8, DType::kUInt16,
                  DType::kInt32, DType::kInt64}) {
    dtypes.emplace_back(std::string(DTypeName(d)), d);
  }
  t.Word(
       "dtype", [](auto& o) -> auto& { return o.output.dtype; }, dtypes)
      .For(kLoaderApi)
      .Unset("float32 for image data, the stored dtype for token ids")
      .Help(
          "the samples' output dtype: float32, bfloat16, float16, or the stored dtype itself "
          "(uint8 images, integer token ids; uint8 pixels for decoded image records); "
          "labels are always int64");
  t.Word("layout", [](auto& o) -> auto& { return o.output.layout; },
         {{"NCHW", SampleLayout::kNCHW}, {"NHWC", SampleLayout::kNHWC}})
      .For(kLoaderApi)
      .Help("NCHW (as stored) or NHWC (channels last), for image data");
  t.Field(
       "normalize", OptionType::kSwitch, [](auto& o) -> auto& { return o.output.normalize; })
      .For(kLoaderApi)
      .Unset("True for a float output, False otherwise")
      .Help(
          "(x - mean[c]) / std[c] with the header's per-channel statistics (a std of 0 taken "
          "as 1), or with mean and std where given");
  t.Field(
       "mean", OptionType::kNumbers, [](auto& o) -> auto& { return o.output.mean; })
      .For(kLoaderApi)
      .Unset("the dataset header's; ImageNet's for decoded images")
      .Help(
          "per-channel means to normalize with instead of the header's (with std, one value a "
          "channel), e.g. a test split's with its training split's; decoded images: in pixel "
          "units, ImageNet's 123.675,116.28,103.53 (0.485,0.456,0.406 x 255) unless given");
  t.Field(
       "std", OptionType::kNumbers, [](auto& o) -> auto& { return o.output.stddev; })
      .RangeReal(0, FLT_MAX, /*min_open=*/true)
      .For(kLoaderApi)
      .Unset("the dataset header's; ImageNet's for decoded images")
      .Help(
          "per-channel standard deviations to normalize with (with mean), each > 0; decoded "
          "images: ImageNet's 58.395,57.12,57.375 (0.229,0.224,0.225 x 255) unless given");
  t.Custom(
      AugmentOptionSpec(),
      [](LoaderOptions& o, const OptionValue& v) -> Status {
        RF_ASSIGN_OR_RETURN(const AugmentParams p, ParseAugmentSpec(std::get<std::string>(v)));
        o.output.augment = AugmentSpecText(p);
        return Status::Ok();
      },
      [](const LoaderOptions& o) {
        const Result<AugmentParams> p = ParseAugmentSpec(o.output.augment);
        return OptionValue(p.ok() ? AugmentSpecText(p.value()) : o.output.augment);
      });
  t.Field(
       "sequence_length", OptionType::kCount, [](auto& o) -> auto& { return o.sequence.length; })
      .Range(0, kMaxSequenceLength)
      .For(kLoaderApi)
      .Help(
          "packed token sequences: each batch is batch_size rows of L + 1 token ids (inputs "
          "[:, :-1], targets [:, 1:]), the documents of a tokens dataset packed end to end, with "
          "lengths, cu_seqlens and position_ids; 0: records as stored");
  t.Word("packing", [](auto& o) -> auto& { return o.sequence.pad; },
         {{"concat", false}, {"pad", true}})
      .For(kLoaderApi)
      .Help(
          "packed sequences: concat (documents end to end, split across rows where they must; "
          "no token dropped) or pad (one document a row, padded, cut at sequence_length + 1)");
  t.Field(
       "eod_token", OptionType::kInteger, [](auto& o) -> auto& { return o.sequence.eod_token; })
      .Range(-1, uint64_t{INT64_MAX})
      .For(kLoaderApi)
      .Help("packed sequences: the end-of-document token appended after each document; -1: none");
  t.Field(
       "pad_token", OptionType::kInteger, [](auto& o) -> auto& { return o.sequence.pad_token; })
      .Range(INT64_MIN, uint64_t{INT64_MAX})
      .For(kLoaderApi)
      .Help("packed sequences: the id a row holds past its length");
  t.Field(
       "pack_threads", OptionType::kCount, [](auto& o) -> auto& { return o.sequence.pack_threads; })
      .Range(0, kMaxPackThreads)
      .For(kLoaderApi)
      .Help(
          "packed sequences: threads that copy a batch's tokens into place (the loader's worker "
          "and its helpers, which take part in batches large enough to pay for them); 0: a "
          "quarter of the cores shared by the ranks on the machine, 1 to 4");
  t.Word("tensors", [](auto& o) -> auto& { return o.tensors; },
         {{"ringfeed", PythonTensors::kRingfeed}, {"torch", PythonTensors::kTorch}})
      .For(kLoaderApi)
      .Help(
          "what a batch's arrays are: ringfeed (ringfeed.Tensor, for torch.from_dlpack or any "
          "DLPack consumer) or torch (torch.Tensor views of the same memory, no copy; on the GPU "
          "torch's current stream waits for the batch, the host does not): the same batches, "
          "less of a PyTorch loop's time a step");
  t.Field(
       "prefetch", OptionType::kCount, [](auto& o) -> auto& { return o.output_buffers; })
      .Range(1, kMaxOutputBuffers)
      .For(kLoaderApi)
      .Help("decoded batches the loader keeps buffers for");
  return t;
}

}  // namespace

OptionSpec AugmentOptionSpec() {
  OptionSpec s = OptionSpec::Of("augment", OptionType::kText);
  s.users = kTrainCommand | kLoaderApi;
  s.metavar = "SPEC";
  s.help =
      "augment the samples (a training split, never a test split): a comma list of crop:P "
      "(random crop with P pixels of zero padding, P below the image's height and width), flip "
      "(random horizontal flip) and erase:P (random erasing with probability P), e.g. "
      "crop:4,flip; none: off. Each sample's transform depends on the seed, the epoch and its "
      "index only, the same on the CPU and the GPU; a checkpoint records it. Image data only";
  return s;
}

const OptionTable<LoaderOptions>& LoaderOptionTable() {
  static const OptionTable<LoaderOptions> table = MakeTable();
  return table;
}

SequenceSpec SequenceSpecFor(const LoaderOptions& options) {
  SequenceSpec s;
  s.pipeline = options.pipeline;
  s.sequence = options.sequence;
  s.dtype = options.output.dtype;
  s.output_buffers = options.output_buffers;
  s.epochs = options.epochs;
  s.gpu = options.gpu;
  s.stream = options.stream;
  s.poll = options.poll;
  return s;
}

}  // namespace rf
