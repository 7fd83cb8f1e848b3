#include "tools/convert/converter.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "core/cpus.h"
#include "io/dataset_writer.h"
#include "io/file.h"
#include "io/format.h"
#include "tools/convert/block_pipeline.h"
#include "tools/convert/progress.h"
#include "tools/convert/splitmix.h"

namespace rf::convert {
namespace {

int64_t MaxLabelOf(DType t) {
  switch (t) {
    case DType::kUInt8:
      return 255;
    case DType::kUInt16:
      return 65535;
    default:
      return std::numeric_limits<int32_t>::max();
  }
}

uint64_t ChunksOf(const DatasetWriter& w) {
  return (w.samples_written() + w.chunk_samples() - 1) / w.chunk_samples();
}

}  // namespace

std::string TestSetPath(const std::string& out_path) {
  const std::string ext = ".rfd";
  if (out_path.size() > ext.size() && out_path.ends_with(ext)) {
    return out_path.substr(0, out_path.size() - ext.size()) + ".test.rfd";
  }
  return out_path + ".test.rfd";
}

bool InTestSet(uint64_t split_seed, uint64_t sample, double fraction) {
  const uint64_t h = SplitMix64(split_seed ^ SplitMix64(sample + 0x5851f42d4c957f2dull));
  return static_cast<double>(h >> 11) * 0x1p-53 < fraction;
}

Result<ConvertSummary> Convert(SampleSource& source, const std::string& out_path,
                               const ConvertOptions& opts) {
  const SourceShape& shape = source.shape();
  const DType stored = opts.sample_dtype.value_or(DefaultSampleDType(shape.elem));
  const float scale = opts.scale.value_or(DefaultScale(shape.elem, stored));
  const bool labeled = shape.has_labels;
  const uint32_t classes = opts.num_classes != 0 ? opts.num_classes : shape.num_classes;
  const bool split = opts.test_fraction > 0;
  const std::vector<std::string> inputs = source.input_paths();
  const std::string input = inputs.empty() ? "input" : inputs.front();

  // What the input cannot become, before any file is created.
  if (Status st = format::CheckSampleShape(shape.dims, stored); !st.ok()) {
    return std::move(st.WithPath(input));
  }
  const bool ids = !IsImageDType(stored);  // elem_type.h: copied exactly, never scaled
  if (ids && ElemIsFloat(shape.elem)) {
    return Status::InvalidArgument(input + ": " + std::string(ElemName(shape.elem)) +
                                   " samples cannot be stored as " +
                                   std::string(DTypeName(stored)) +
                                   " ids (integer input only; store floats as float32, float16, "
                                   "bfloat16 or uint8)");
  }
  if (ids && scale != 1.f) {
    return Status::InvalidArgument("--scale does not apply to " + std::string(DTypeName(stored)) +
                                   " ids, which are stored exactly");
  }
  if (!labeled && opts.num_classes != 0) {
    return Status::InvalidArgument("--classes " + std::to_string(opts.num_classes) +
                                   " given, but " + input + " comes without labels");
  }
  // A labelled dataset of one class trains nothing (ringfeed train refuses it), and one of more
  // classes than its labels can name would be refused by every reader (format::DecodeHeader).
  if (labeled && opts.num_classes == 1) {
    return Status::Usage("--classes 1: a labelled dataset needs 2 or more classes");
  }
  if (labeled && opts.num_classes > format::MaxClassesFor(shape.label_dtype)) {
    return Status::Usage("--classes " + std::to_string(opts.num_classes) + ": " +
                         std::string(DTypeName(shape.label_dtype)) + " labels name at most " +
                         std::to_string(format::MaxClassesFor(shape.label_dtype)) + " classes");
  }
  // CheckSampleShape above bounds the sample, so its stored size does not wrap.
  const uint64_t one_sample =
      shape.SampleElems() * DTypeSize(stored) + (labeled ? DTypeSize(shape.label_dtype) : 1);
  if (opts.chunk_bytes && *opts.chunk_bytes < one_sample) {
    return Status::Usage("--chunk-size " + std::to_string(*opts.chunk_bytes) +
                         " bytes is smaller than one sample (" + format::ShapeText(shape.dims) +
                         " " + std::string(DTypeName(stored)) +
                         " and its label: " + std::to_string(one_sample) + " bytes)");
  }

  DatasetSpec spec;
  spec.sample_dtype = stored;
  spec.label_dtype = labeled ? shape.label_dtype : DType::kUInt8;
  spec.shape = shape.dims;
  spec.num_classes = labeled ? classes : 0;
  spec.has_labels = labeled;
  std::vector<NamedPath> outputs, input_files;
  for (uint32_t i = 0; i < opts.shards; ++i) {
    outputs.push_back({"", format::ShardPath(out_path, i, opts.shards)});
    if (split) outputs.push_back({"", format::ShardPath(TestSetPath(out_path), i, opts.shards)});
  }
  for (const std::string& in : inputs) input_files.push_back({"", in});
  RF_RETURN_IF_ERROR(CheckOutputPaths(outputs, input_files));

  WriterOptions wopts;
  wopts.keep = inputs;
  wopts.shards = opts.shards;
  wopts.chunk_bytes = opts.chunk_bytes.value_or(kDefaultChunkBytes);
  wopts.dataset_id = opts.dataset_id;
  wopts.codec = opts.codec;
  wopts.threads = opts.compress_threads;
  wopts.version = opts.format_version;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> train,
                      DatasetWriter::Create(out_path, spec, wopts));
  std::unique_ptr<DatasetWriter> test;
  if (split) {
    if (opts.dataset_id != 0) wopts.dataset_id = SplitMix64(opts.dataset_id) | 1;
    RF_ASSIGN_OR_RETURN(test, DatasetWriter::Create(TestSetPath(out_path), spec, wopts));
  }

  // Where the source's bytes already are the stored bytes, they go to the writer untouched.
  BlockConversion conv;
  conv.stored = stored;
  conv.scale = scale;
  conv.ids = ids;
  conv.passthrough = ElemAsDType(shape.elem) == stored && scale == 1.f;
  conv.labeled = labeled;
  conv.label_dtype = spec.label_dtype;
  conv.max_label = classes != 0 ? int64_t{classes} - 1 : MaxLabelOf(shape.label_dtype);
  conv.classes_flag = opts.num_classes;
  PipelineOptions popts;
  popts.threads = opts.threads != 0 ? opts.threads : AvailableCpus();
  popts.memory_budget = opts.memory_budget;
  const uint64_t out_sample_bytes = shape.SampleElems() * DTypeSize(stored);
  const size_t label_bytes = DTypeSize(spec.label_dtype);
  const size_t sums_per_sample = train->ChannelSumsPerSample();

  Progress progress(opts.progress_label, shape.samples * shape.SampleBytes(), opts.progress);
  uint64_t done = 0;
  // Runs on this thread, block by block in input order.
  const auto append = [&](const ConvertedBlock& b) -> Status {
    if (!split) {
      RF_RETURN_IF_ERROR(train->Append(b.samples, b.labels, b.count, b.channel_sums));
    } else {
      // Append runs of consecutive samples bound for the same dataset.
      uint64_t i = 0;
      while (i < b.count) {
        const bool to_test = InTestSet(opts.split_seed, b.first + i, opts.test_fraction);
        uint64_t j = i + 1;
        while (j < b.count &&
               InTestSet(opts.split_seed, b.first + j, opts.test_fraction) == to_test) {
          ++j;
        }
        DatasetWriter& w = to_test ? *test : *train;
        RF_RETURN_IF_ERROR(w.Append(b.samples + i * out_sample_bytes,
                                    labeled ? b.labels + i * label_bytes : nullptr, j - i,
                                    b.channel_sums + i * sums_per_sample));
        i = j;
      }
    }
    done += b.count;
    progress.Update(done * shape.SampleBytes());
    return Status::Ok();
  };
  RF_RETURN_IF_ERROR(ConvertBlocks(source, conv, *train, popts, append));
  if (done != shape.samples) {
    return Status::Corruption(source.LabelAt(0).path, "input ended after " + std::to_string(done) +
                                                          " of " + std::to_string(shape.samples) +
                                                          " samples");
  }

  ConvertSummary s;
  s.num_classes = labeled ? classes : 0;  // no labels: 0 classes in both halves
  if (labeled && split && classes == 0) {
    // Both halves get the class count of the whole input.
    const int64_t top = std::max(train->max_label(), test->max_label());
    s.num_classes = static_cast<uint32_t>(top + 1);
    RF_RETURN_IF_ERROR(train->SetNumClasses(s.num_classes));
    RF_RETURN_IF_ERROR(test->SetNumClasses(s.num_classes));
  } else if (labeled && classes == 0) {
    s.num_classes = static_cast<uint32_t>(train->max_label() + 1);
  }
  if (split && (train->samples_written() == 0 || test->samples_written() == 0)) {
    return Status::InvalidArgument("--test-split " + std::to_string(opts.test_fraction) +
                                   " leaves one side of the split empty (" +
                                   std::to_string(train->samples_written()) + " train, " +
                                   std::to_string(test->samples_written()) + " test samples)");
  }
  RF_RETURN_IF_ERROR(train->Finish());
  if (test) RF_RETURN_IF_ERROR(test->Finish());
  progress.Finish();

  s.samples = train->samples_written();
  s.chunks = ChunksOf(*train);
  s.bytes = train->bytes_written();
  s.paths = train->paths();
  s.removed = train->removed();
  if (test) {
    s.test_samples = test->samples_written();
    s.chunks += ChunksOf(*test);
    s.bytes += test->bytes_written();
    for (const std::string& p : test->paths()) s.paths.push_back(p);
    for (const std::string& p : test->removed()) s.removed.push_back(p);
  }
  s.seconds = progress.Seconds();
  return s;
}

}  // namespace rf::convert
