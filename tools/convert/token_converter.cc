#include "tools/convert/token_converter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "io/dataset_writer.h"
#include "tools/convert/progress.h"
#include "tools/convert/record_output.h"
#include "tools/convert/token_ids.h"

namespace rf::convert {
namespace {

constexpr uint64_t kUInt16Ids = 65536;
constexpr uint64_t kInt32Ids = uint64_t{1} << 31;

// The dtype rule of token_converter.h. *first_pass says whether it read the input to decide.
Result<DType> ChooseDType(DocumentSource& src, const TokenConvertOptions& o, bool* first_pass) {
  *first_pass = false;
  if (o.dtype) {
    if (o.vocab_size && *o.vocab_size - 1 > MaxIdOf(*o.dtype)) {
      return Status::Usage("--vocab-size " + std::to_string(*o.vocab_size) + " names ids up to " +
                           std::to_string(*o.vocab_size - 1) + ", more than --dtype " +
                           std::string(DTypeName(*o.dtype)) + " holds");
    }
    return *o.dtype;
  }
  if (o.vocab_size) {
    if (*o.vocab_size <= kUInt16Ids) return DType::kUInt16;
    if (*o.vocab_size <= kInt32Ids) return DType::kInt32;
    return Status::Usage("--vocab-size " + std::to_string(*o.vocab_size) +
                         ": ids of 2^31 or more are stored only as int64, with --dtype int64");
  }
  if (src.ids_fit_uint16()) return DType::kUInt16;
  *first_pass = true;
  Progress progress("finding the id range", src.input_bytes(), o.progress);
  DType found = DType::kUInt16;
  for (;;) {
    RF_ASSIGN_OR_RETURN(DocumentBlock b, src.Next(o.block_bytes, o.max_record_bytes / 2));
    if (b.count == 0) break;
    const uint64_t n = b.offsets[b.count];
    if (FirstIdOutside(src.elem(), b.ids, n, kUInt16Ids - 1) != n) {
      found = DType::kInt32;  // or a negative id, which the conversion names
      break;
    }
    progress.Update(b.input_bytes_done);
  }
  progress.Finish();
  RF_RETURN_IF_ERROR(src.Rewind());
  return found;
}

// The one-line error for the id at `index` of block b's ids.
Status IdError(const DocumentSource& src, const DocumentBlock& b, uint64_t index, DType dtype,
               const TokenConvertOptions& o) {
  const uint64_t* end = b.offsets + b.count + 1;
  const uint64_t d = static_cast<uint64_t>(std::upper_bound(b.offsets, end, index) - b.offsets) - 1;
  const uint64_t j = index - b.offsets[d];
  const DocumentPosition at = src.IdAt(b.first + d, j);
  const Elem e = src.elem();
  const std::string which = "id " + IntegerText(e, b.ids, index) + " (id " + std::to_string(j) +
                            " of document " + std::to_string(b.first + d) + ")";
  std::string what;
  const bool negative = (e == Elem::kI8 || e == Elem::kI16 || e == Elem::kI32 || e == Elem::kI64) &&
                        LoadInteger(e, b.ids, index) < 0;
  if (negative) {
    what = which + " is negative";
  } else if (o.vocab_size &&
             FirstIdOutside(e, static_cast<const uint8_t*>(b.ids) + index * ElemSize(e), 1,
                            *o.vocab_size - 1) == 0) {
    what = which + " is not below --vocab-size " + std::to_string(*o.vocab_size);
  } else {
    what = which + " does not fit " + std::string(DTypeName(dtype));
    if (o.dtype) {
      what += " (--dtype " + std::string(DTypeName(dtype)) + ")";
    } else if (dtype == DType::kInt32) {
      what += " (ids of 2^31 or more are stored only as int64, with --dtype int64)";
    }
  }
  if (!at.detail.empty()) what = at.detail + ": " + what;
  return std::move(Status::InvalidArgument(what).WithPath(at.path).WithOffset(at.offset));
}

void StoreLabels(const int64_t* labels, uint64_t n, DType t, std::vector<uint8_t>* out) {
  out->resize(n * DTypeSize(t));
  for (uint64_t i = 0; i < n; ++i) StoreInteger(ElemOf(t), labels[i], out->data(), i);
}

}  // namespace

Result<TokenConvertSummary> ConvertDocuments(DocumentSource& src, const std::string& out_path,
                                             const TokenConvertOptions& o) {
  if (o.vocab_size && *o.vocab_size == 0) return Status::Usage("--vocab-size must be at least 1");
  const std::vector<std::string> inputs = src.input_paths();
  RF_RETURN_IF_ERROR(CheckRecordOutputs(out_path, o.shards, inputs));

  const auto start = std::chrono::steady_clock::now();
  TokenConvertSummary s;
  RF_ASSIGN_OR_RETURN(s.dtype, ChooseDType(src, o, &s.first_pass));
  const DType dtype = s.dtype;
  const uint64_t max_ids = o.max_record_bytes / DTypeSize(dtype);
  if (max_ids == 0) {
    return Status::Usage("--max-record-size " + std::to_string(o.max_record_bytes) +
                         " bytes holds no " + std::string(DTypeName(dtype)) + " id");
  }

  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kTokens;
  spec.sample_dtype = dtype;
  const std::optional<DocumentLabels> labels = src.labels();
  spec.has_labels = labels.has_value();
  if (labels) {
    spec.label_dtype = labels->dtype;
    spec.num_classes = labels->classes;
  }
  spec.origin = src.origin();
  WriterOptions w = RecordWriterOptions(o, inputs);
  w.max_record_bytes = max_ids * DTypeSize(dtype);  // whole ids
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                      DatasetWriter::Create(out_path, spec, w));

  const Elem elem = src.elem();
  const uint64_t max_id =
      o.vocab_size ? std::min(*o.vocab_size - 1, MaxIdOf(dtype)) : MaxIdOf(dtype);
  const bool passthrough = ElemAsDType(elem) == dtype;
  const bool check = !IdsAlwaysWithin(elem, max_id);
  std::vector<uint8_t> converted, label_bytes;
  std::vector<uint64_t> kept;  // the block's offsets without its empty documents
  std::vector<int64_t> kept_labels;
  Progress progress("converting", src.input_bytes(), o.progress);
  for (;;) {
    RF_ASSIGN_OR_RETURN(DocumentBlock b, src.Next(o.block_bytes, max_ids));
    if (b.count == 0) break;
    const uint64_t n = b.offsets[b.count];
    const uint8_t* values = b.ids;
    uint64_t bad = n;
    if (!passthrough) {
      converted.resize(n * DTypeSize(dtype));
      bad = ConvertIds(elem, b.ids, dtype, converted.data(), n, max_id);
      values = converted.data();
    } else if (check) {
      bad = FirstIdOutside(elem, b.ids, n, max_id);
    }
    if (bad != n) return IdError(src, b, bad, dtype, o);

    const uint64_t* offsets = b.offsets;
    const int64_t* block_labels = b.labels;
    uint64_t count = b.count;
    if (std::adjacent_find(b.offsets, b.offsets + b.count + 1) != b.offsets + b.count + 1) {
      // Empty documents: their offsets repeat; each is dropped with its label.
      kept.assign(1, 0);
      kept_labels.clear();
      for (uint64_t i = 0; i < b.count; ++i) {
        if (b.offsets[i + 1] == b.offsets[i]) {
          ++s.empty_skipped;
          continue;
        }
        kept.push_back(b.offsets[i + 1]);
        if (b.labels != nullptr) kept_labels.push_back(b.labels[i]);
      }
      offsets = kept.data();
      block_labels = b.labels != nullptr ? kept_labels.data() : nullptr;
      count = kept.size() - 1;
    }
    if (count == 0) continue;
    const void* label_data = nullptr;
    if (labels) {
      StoreLabels(block_labels, count, labels->dtype, &label_bytes);
      label_data = label_bytes.data();
    }
    RF_RETURN_IF_ERROR(writer->AppendRecords(values, offsets, label_data, count));
    s.documents += count;
    s.ids += n;
    progress.Update(b.input_bytes_done);
  }
  if (s.documents == 0) {
    const std::string input = inputs.empty() ? "input" : inputs.front();
    return Status::InvalidArgument(input + ": no document holds an id (" +
                                   std::to_string(s.empty_skipped) +
                                   " empty ones skipped); a dataset holds one record at least");
  }
  RF_ASSIGN_OR_RETURN(RecordOutput written, FinishRecordOutput(*writer, out_path));
  progress.Finish();
  s.seconds = std::chrono::duration<double>(written.finished - start).count();
  s.bytes = written.bytes;
  s.paths = std::move(written.paths);
  s.removed = std::move(written.removed);
  s.chunks = written.chunks;
  s.input_bytes = src.input_bytes();
  return s;
}

std::string TokenConvertReport(const TokenConvertSummary& s) {
  char line[512];
  const double mb = static_cast<double>(s.input_bytes) / 1e6;
  std::snprintf(line, sizeof line,
                "wrote %s: %llu documents, %llu ids as %s, %llu chunks, %.1f MB stored; %.1f MB of "
                "input in %.2f s (%.1f MB/s)%s\n",
                s.paths.front().c_str(), static_cast<unsigned long long>(s.documents),
                static_cast<unsigned long long>(s.ids), std::string(DTypeName(s.dtype)).c_str(),
                static_cast<unsigned long long>(s.chunks), static_cast<double>(s.bytes) / 1e6, mb,
                s.seconds, s.seconds > 0 ? mb / s.seconds : 0.0,
                s.first_pass ? ", a first pass finding the dtype included" : "");
  std::string out = line;
  if (s.empty_skipped != 0) {
    out += "skipped " + std::to_string(s.empty_skipped) + " empty document" +
           (s.empty_skipped == 1 ? "" : "s") + " (a record holds one id at least)\n";
  }
  return out + RemovedReport(s.removed);
}

}  // namespace rf::convert
