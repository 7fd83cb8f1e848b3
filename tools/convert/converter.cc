#include "tools/convert/converter.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "io/dataset_writer.h"
#include "io/file.h"
#include "io/format.h"
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

void StoreLabel(DType t, int64_t v, void* base, size_t i) {
  switch (t) {
    case DType::kUInt8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      return;
    case DType::kUInt16:
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v);
      return;
    default:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      return;
  }
}

// Refuses NaN and infinite values among a block's `elems` values (of type `elem`: the input's,
// or the stored ones, where a finite input overflows the stored dtype), naming the sample, its
// element and where the sample starts in the input: a dataset holding them has no finite
// channel statistics, so no reader could open it.
Status CheckFinite(const SampleSource& source, const SampleBlock& b, Elem elem, const void* values,
                   uint64_t elems, const std::string& stored_as) {
  const uint64_t bad = FirstNonFinite(elem, values, elems);
  if (bad == elems) return Status::Ok();
  const uint64_t per_sample = source.shape().SampleElems();
  const uint64_t sample = b.first + bad / per_sample;
  const InputPosition at = source.SampleAt(sample);
  std::string why = "sample " + std::to_string(sample) + " (which starts here) holds a";
  why += stored_as.empty() ? " NaN or infinite value" : " value that overflows " + stored_as;
  why += " at element " + std::to_string(bad % per_sample) +
         "; a dataset needs finite samples for its channel statistics";
  return std::move(Status::Corruption(at.path, why).WithOffset(at.offset));
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

uint64_t BlockSamples(const SourceShape& shape, DType stored, uint64_t memory_budget) {
  const uint64_t per_sample =
      2 * shape.SampleBytes() + shape.SampleElems() * DTypeSize(stored) + sizeof(int64_t) + 4;
  return std::max<uint64_t>(1, memory_budget / per_sample);
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
  const bool passthrough = ElemAsDType(shape.elem) == stored && scale == 1.f;
  const uint64_t block = BlockSamples(shape, stored, opts.memory_budget);
  const uint64_t out_sample_bytes = shape.SampleElems() * DTypeSize(stored);
  const size_t label_bytes = DTypeSize(spec.label_dtype);
  std::vector<uint8_t> converted(passthrough ? 0 : block * out_sample_bytes);
  std::vector<uint8_t> labels(block * label_bytes);
  const int64_t max_label = classes != 0 ? int64_t{classes} - 1 : MaxLabelOf(shape.label_dtype);

  Progress progress(opts.progress_label, shape.samples * shape.SampleBytes(), opts.progress);
  uint64_t done = 0;
  for (;;) {
    RF_ASSIGN_OR_RETURN(SampleBlock b, source.Next(block));
    if (b.count == 0) break;
    for (uint64_t i = 0; labeled && i < b.count; ++i) {
      const int64_t v = b.labels[i];
      if (v < 0 || v > max_label) {
        const InputPosition at = source.LabelAt(b.first + i);
        std::string why = "label " + std::to_string(v) + " of sample " +
                          std::to_string(b.first + i) + " is outside [0, " +
                          std::to_string(max_label + 1) + ")";
        if (opts.num_classes != 0) why += " (--classes " + std::to_string(opts.num_classes) + ")";
        return std::move(Status::Corruption(at.path, why).WithOffset(at.offset));
      }
      StoreLabel(shape.label_dtype, v, labels.data(), i);
    }
    RF_RETURN_IF_ERROR(
        CheckFinite(source, b, shape.elem, b.samples, b.count * shape.SampleElems(), ""));
    const uint8_t* samples = b.samples;
    if (!passthrough) {
      const uint64_t elems = b.count * shape.SampleElems();
      if (ids) {
        const uint64_t bad =
            ConvertIntegers(shape.elem, b.samples, stored, converted.data(), elems);
        if (bad != elems) {
          const uint64_t sample = b.first + bad / shape.SampleElems();
          const InputPosition at = source.SampleAt(sample);
          return std::move(
              Status::Corruption(at.path, "value " + IntegerText(shape.elem, b.samples, bad) +
                                              " (element " +
                                              std::to_string(bad % shape.SampleElems()) +
                                              " of sample " + std::to_string(sample) +
                                              ") does not fit " + std::string(DTypeName(stored)))
                  .WithOffset(at.offset));
        }
      } else {
        ConvertElems(shape.elem, b.samples, stored, scale, converted.data(), elems);
        RF_RETURN_IF_ERROR(CheckFinite(source, b, ElemOf(stored), converted.data(), elems,
                                       std::string(DTypeName(stored))));
      }
      samples = converted.data();
    }
    const uint8_t* block_labels = labeled ? labels.data() : nullptr;
    if (!split) {
      RF_RETURN_IF_ERROR(train->Append(samples, block_labels, b.count));
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
        RF_RETURN_IF_ERROR(w.Append(samples + i * out_sample_bytes,
                                    labeled ? &labels[i * label_bytes] : nullptr, j - i));
        i = j;
      }
    }
    done += b.count;
    progress.Update(done * shape.SampleBytes());
  }
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
