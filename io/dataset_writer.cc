#include "io/dataset_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "io/dataset.h"

namespace rf {

namespace {

// Issue 40, W5: the files the new dataset's name already names (NAME.rfd, shards of any count)
// that Finish would neither overwrite (one of the new files) nor replace (an older dataset of the
// name, not an input): left beside the new files, they would make the name ambiguous, and the
// dataset could not be opened by it (Dataset::Open refuses "2 datasets have this name"). Refused
// before anything is written, naming the file and why it stays.
Status CheckNameIsFree(const std::string& path, uint32_t shards,
                       const std::vector<std::string>& keep) {
  std::vector<std::string> ours;
  for (uint32_t s = 0; s < shards; ++s) ours.push_back(format::ShardPath(path, s, shards));
  for (const std::string& f : DatasetFilesNamed(path)) {
    if (std::find(ours.begin(), ours.end(), f) != ours.end()) continue;
    const bool input = std::any_of(keep.begin(), keep.end(),
                                   [&f](const std::string& k) { return IsSameFile(f, k); });
    if (!input && IsDatasetFile(f)) continue;  // an older dataset of the name: Finish replaces it
    const char* why = input               ? "it is an input"
                      : IsSymbolicLink(f) ? "a symbolic link, which the writer never removes"
                                          : "it is not a ringfeed dataset";
    const std::string written =
        shards == 1 ? path : "its " + std::to_string(shards) + " shards (" + ours[0] + ", ...)";
    return Status::Usage(f + " has the name of the dataset being written and would stay (" + why +
                         "), so " + written + " could not be opened as " + path +
                         ": move it, or write the dataset under another name");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(const std::string& path,
                                                             const DatasetSpec& spec,
                                                             const WriterOptions& opts) {
  if (!IsSampleDType(spec.sample_dtype)) {
    return Status::InvalidArgument(
        "sample dtype must be uint8, uint16, int32, int64, float16, bfloat16 or float32");
  }
  if (!IsLabelDType(spec.label_dtype))
    return Status::InvalidArgument("label dtype must be uint8, uint16 or int32");
  if (!spec.has_labels && (spec.label_dtype != DType::kUInt8 || spec.num_classes != 0))
    return Status::InvalidArgument("a dataset without labels has uint8 labels and 0 classes");
  format::Header header;
  header.sample_dtype = spec.sample_dtype;
  header.label_dtype = spec.label_dtype;
  header.record_kind = spec.record_kind;
  const bool records = header.variable();
  if (spec.record_kind == format::RecordKind::kTokens && IsImageDType(spec.sample_dtype))
    return Status::InvalidArgument("tokens records hold uint16, int32 or int64 ids, not " +
                                   std::string(DTypeName(spec.sample_dtype)));
  if ((spec.record_kind == format::RecordKind::kBytes ||
       spec.record_kind == format::RecordKind::kFields) &&
      spec.sample_dtype != DType::kUInt8)
    return Status::InvalidArgument(std::string(format::RecordKindName(spec.record_kind)) +
                                   " records are uint8");
  if (spec.record_kind == format::RecordKind::kFields) {
    // A label field's dtype is the dataset's label dtype, whatever the spec's entry says.
    header.fields = spec.fields;
    for (format::FieldSpec& f : header.fields) {
      if (f.kind == format::FieldKind::kLabel) f.dtype = spec.label_dtype;
    }
    RF_RETURN_IF_ERROR(format::CheckFields(header.fields, spec.has_labels, spec.label_dtype));
  } else if (!spec.fields.empty()) {
    return Status::InvalidArgument("fields are for samples of several fields (records fields)");
  }
  if (!spec.media_type.empty() && spec.record_kind != format::RecordKind::kBytes)
    return Status::InvalidArgument("a media type is for bytes records");
  if (!format::IsHeaderText(spec.media_type, format::kMaxMediaType))
    return Status::InvalidArgument("media type '" + spec.media_type +
                                   "': printable ASCII without spaces, at most " +
                                   std::to_string(format::kMaxMediaType) + " characters");
  header.media_type = spec.media_type;
  if (!format::IsHeaderText(spec.origin, format::kMaxOrigin))
    return Status::InvalidArgument("origin '" + spec.origin +
                                   "': printable ASCII without spaces, at most " +
                                   std::to_string(format::kMaxOrigin) + " characters");
  header.origin = spec.origin;
  if (!spec.class_names.empty()) {
    if (!spec.has_labels) return Status::InvalidArgument("class names for samples without labels");
    if (spec.num_classes != spec.class_names.size())
      return Status::InvalidArgument(std::to_string(spec.class_names.size()) + " class names for " +
                                     std::to_string(spec.num_classes) +
                                     " classes (give num_classes)");
    RF_RETURN_IF_ERROR(format::EncodeClassNames(spec.class_names).status());
  }
  if (records && (opts.max_record_bytes < DTypeSize(spec.sample_dtype) ||
                  opts.max_record_bytes > format::kMaxChunkTarget))
    return Status::InvalidArgument("the largest record must be from one element to " +
                                   std::to_string(format::kMaxChunkTarget) + " bytes, got " +
                                   std::to_string(opts.max_record_bytes));
  // Records: the shape is the largest record, set by Finish; one element until then.
  const std::vector<uint64_t> shape =
      records              ? std::vector<uint64_t>{1}
      : spec.shape.empty() ? std::vector<uint64_t>{spec.channels, spec.height, spec.width}
                           : spec.shape;
  RF_RETURN_IF_ERROR(format::SetSampleShape(shape, &header));
  if (opts.shards == 0 || opts.shards > 99999)
    return Status::InvalidArgument("shard count must be between 1 and 99999");
  header.version = opts.version != 0                  ? opts.version
                   : records                          ? format::kVersion
                   : opts.codec.codec != Codec::kNone ? 2
                                                      : 1;
  if (header.version < 2 && records)
    return Status::InvalidArgument("format version 1 holds tensor records only: write version 2");
  if (header.version < format::kOldestVersion || header.version > format::kVersion)
    return Status::InvalidArgument("format version " + std::to_string(header.version) +
                                   ": this build writes versions 1 to " +
                                   std::to_string(format::kVersion));
  if (header.version < 2 && opts.codec.codec != Codec::kNone)
    return Status::InvalidArgument("format version 1 has no compression: write version 2");
  if (header.version < 2 && !spec.origin.empty())
    return Status::InvalidArgument("format version 1 has no origin: write version 2");
  header.codec = opts.codec;
  {
    // Such a name is read as one shard of a set: a dataset written under it could not be opened.
    std::string base;
    uint32_t index = 0, count = 0;
    if (format::ParseShardName(BaseNameOf(path), &base, &index, &count)) {
      return Status::Usage(path + " is named like shard " + std::to_string(index) + " of " +
                           std::to_string(count) + " of " + base +
                           ", so it could not be opened as a dataset: name the dataset (" + base +
                           ") and give the shard count");
    }
  }

  RF_RETURN_IF_ERROR(CheckNameIsFree(path, opts.shards, opts.keep));

  std::unique_ptr<DatasetWriter> w(new DatasetWriter());
  w->path_ = path;
  w->spec_ = spec;
  w->opts_ = opts;
  w->header_ = header;
  w->spans_.resize(format::StoredFieldCount(header.fields));
  if (w->opts_.dataset_id == 0)
    w->opts_.dataset_id = std::random_device{}() * 0x9e3779b97f4a7c15ull | 1;
  w->sample_bytes_ = header.SampleBytes();
  const uint64_t per_sample = w->sample_bytes_ + DTypeSize(spec.label_dtype);
  w->chunk_samples_ = static_cast<uint32_t>(
      std::clamp<uint64_t>(opts.chunk_bytes / per_sample, 1, uint64_t{1} << 31));
  // Trim so the padded chunk does not spill past the requested size because of label alignment.
  while (opts.chunk_samples == 0 && w->chunk_samples_ > 1 &&
         format::LayoutFor(w->chunk_samples_, w->sample_bytes_, DTypeSize(spec.label_dtype))
                 .stored_bytes > std::max<uint64_t>(opts.chunk_bytes, format::kAlign)) {
    --w->chunk_samples_;
  }
  if (opts.chunk_samples != 0) w->chunk_samples_ = opts.chunk_samples;
  w->chunk_capacity_ =
      format::LayoutFor(w->chunk_samples_, w->sample_bytes_, DTypeSize(spec.label_dtype))
          .stored_bytes;
  if (records) {
    // A chunk's data stays within the target, or one record's chunk where a record is larger.
    w->chunk_samples_ = 0;  // the most records a chunk got: Finish writes it
    w->chunk_capacity_ = std::max<uint64_t>(
        format::RoundUp(opts.chunk_bytes, format::kAlign),
        format::RecordChunkBytes(1, DTypeSize(spec.label_dtype), opts.max_record_bytes));
  } else if (header.version >= 2 && w->chunk_capacity_ > format::MaxChunkDataBytes(header)) {
    return Status::InvalidArgument("chunks of " + std::to_string(w->chunk_samples_) +
                                   " samples are " + std::to_string(w->chunk_capacity_) +
                                   " bytes, more than the format's " +
                                   std::to_string(format::MaxChunkDataBytes(header)));
  }
  // Without a codec one thread checksums and writes; with one, every worker compresses, as many
  // as the memory bound lets (each holds a chunk and a compression buffer).
  const uint32_t wanted = opts.codec.codec == Codec::kNone ? 1
                          : opts.threads != 0
                              ? opts.threads
                              : std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 16);
  const uint32_t workers = static_cast<uint32_t>(std::max<uint64_t>(
      1, std::min<uint64_t>(wanted, kCompressMemory / (2 * w->chunk_capacity_))));
  // One buffer filling, one per worker, one queued.
  RF_ASSIGN_OR_RETURN(
      w->writes_, ChunkWriteQueue::Create(workers + 2, w->chunk_capacity_, opts.codec, workers));
  w->chunk_ = w->writes_->Acquire();
  // pending_labels_ grows with the samples given (Append), so memory follows the data: a 1 GiB
  // chunk target over 10 samples sized 63 MB of labels up front.
  w->sum_.assign(header.channels, 0.0);
  w->sumsq_.assign(header.channels, 0.0);

  const std::string name = BaseNameOf(path);
  RemoveStaleTemporaries(DirectoryOf(path),
                         [&name](std::string_view n) { return IsDatasetFileNamed(n, name); });
  for (uint32_t s = 0; s < opts.shards; ++s) {
    RF_ASSIGN_OR_RETURN(
        AtomicOutput out,
        AtomicOutput::Create(format::ShardPath(path, s, opts.shards), AtomicOutput::Stale::kLeave));
    w->shards_.push_back(Shard{std::move(out), format::kHeaderBytes, {}});
  }
  return w;
}

DatasetWriter::~DatasetWriter() = default;  // unfinished AtomicOutputs remove their temp files

std::vector<std::string> DatasetWriter::paths() const {
  std::vector<std::string> p;
  for (const Shard& s : shards_) p.push_back(s.out.final_path());
  return p;
}

size_t DatasetWriter::ChannelSumsPerSample() const {
  return IsImageDType(spec_.sample_dtype) ? 2 * size_t{header_.channels} : 0;
}

void DatasetWriter::ChannelSums(const void* samples, uint64_t n, double* out) const {
  if (!IsImageDType(spec_.sample_dtype)) return;  // ids: no statistics (io/format.h)
  const uint32_t channels = header_.channels;
  const uint64_t plane = uint64_t{header_.height} * header_.width;
  for (uint64_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < channels; ++c) {
      const uint64_t base = (i * channels + c) * plane;
      double* o = out + 2 * (i * channels + c);
      if (spec_.sample_dtype == DType::kUInt8) {
        // Integer sums vectorize and are exact.
        const uint8_t* p = static_cast<const uint8_t*>(samples) + base;
        uint64_t s = 0, q = 0;
        for (uint64_t k = 0; k < plane; ++k) {
          s += p[k];
          q += uint32_t{p[k]} * p[k];
        }
        o[0] = static_cast<double>(s);
        o[1] = static_cast<double>(q);
      } else if (spec_.sample_dtype == DType::kFloat32) {
        // The same sums as below without a call per element (LoadAsFloat of a float32 is itself).
        const auto* p = static_cast<const uint8_t*>(samples) + base * sizeof(float);
        double s = 0, q = 0;
        for (uint64_t k = 0; k < plane; ++k) {
          float f;
          std::memcpy(&f, p + k * sizeof f, sizeof f);
          const double v = f;
          s += v;
          q += v * v;
        }
        o[0] = s;
        o[1] = q;
      } else {
        double s = 0, q = 0;
        for (uint64_t k = 0; k < plane; ++k) {
          const double v = LoadAsFloat(spec_.sample_dtype, samples, base + k);
          s += v;
          q += v * v;
        }
        o[0] = s;
        o[1] = q;
      }
    }
  }
}

void DatasetWriter::AddChannelSums(const double* sums, uint64_t n) {
  const uint32_t channels = header_.channels;
  for (uint64_t i = 0; i < n; ++i) {
    for (uint32_t c = 0; c < channels; ++c) {
      sum_[c] += sums[2 * (i * channels + c)];
      sumsq_[c] += sums[2 * (i * channels + c) + 1];
    }
  }
}

Status DatasetWriter::CheckLabelsGiven(const void* labels, uint64_t n) {
  if (finished_) return Status::InvalidArgument("append after finish");
  if ((labels == nullptr) == spec_.has_labels) {
    return Status::InvalidArgument(spec_.has_labels
                                       ? "samples appended without their labels"
                                       : "labels appended to a dataset without labels");
  }
  // Labels are checked before anything is written, so a bad one names its sample exactly.
  int64_t most = max_label_;
  for (uint64_t i = 0; labels != nullptr && i < n; ++i) {
    const int64_t v = LoadLabel(spec_.label_dtype, labels, i);
    if (v < 0 || (spec_.num_classes != 0 && v >= spec_.num_classes)) {
      return Status::InvalidArgument("label " + std::to_string(v) + " of sample " +
                                     std::to_string(samples_ + i) + " is outside [0, " +
                                     std::to_string(spec_.num_classes) + ")");
    }
    most = std::max(most, v);
  }
  max_label_ = most;
  return Status::Ok();
}

Status DatasetWriter::Append(const void* samples, const void* labels, uint64_t n) {
  return Append(samples, labels, n, nullptr);
}

Status DatasetWriter::Append(const void* samples, const void* labels, uint64_t n,
                             const double* channel_sums) {
  if (header_.variable())
    return Status::InvalidArgument("records of any size are appended with AppendRecords");
  RF_RETURN_IF_ERROR(CheckLabelsGiven(labels, n));
  const size_t lb = DTypeSize(spec_.label_dtype);
  if (channel_sums != nullptr) {
    AddChannelSums(channel_sums, n);
  } else if (const size_t per = ChannelSumsPerSample(); per != 0) {
    // Sample by sample, so memory stays one sample's sums whatever n.
    std::vector<double> sums(per);
    for (uint64_t i = 0; i < n; ++i) {
      ChannelSums(static_cast<const uint8_t*>(samples) + i * sample_bytes_, 1, sums.data());
      AddChannelSums(sums.data(), 1);
    }
  }
  const auto* sp = static_cast<const uint8_t*>(samples);
  const auto* lp = static_cast<const uint8_t*>(labels);
  while (n > 0) {
    const uint32_t take = static_cast<uint32_t>(std::min<uint64_t>(n, chunk_samples_ - in_chunk_));
    if (pending_labels_.size() < (size_t{in_chunk_} + take) * lb) {
      pending_labels_.resize((size_t{in_chunk_} + take) * lb);  // at most a chunk's labels
    }
    std::memcpy(chunk_ + in_chunk_ * sample_bytes_, sp, take * sample_bytes_);
    if (lp != nullptr) {
      std::memcpy(pending_labels_.data() + in_chunk_ * lb, lp, take * lb);
      lp += take * lb;
    } else {
      std::memset(pending_labels_.data() + in_chunk_ * lb, 0, take * lb);
    }
    in_chunk_ += take;
    samples_ += take;
    sp += take * sample_bytes_;
    n -= take;
    if (in_chunk_ == chunk_samples_) RF_RETURN_IF_ERROR(FlushChunk());
  }
  return Status::Ok();
}

Status DatasetWriter::AppendRecords(const void* values, const uint64_t* offsets, const void* labels,
                                    uint64_t n) {
  if (!header_.variable())
    return Status::InvalidArgument("fixed-shape samples are appended with Append");
  const uint64_t elem = DTypeSize(spec_.sample_dtype);
  // Every record is checked before any is taken, so a bad call writes nothing.
  for (uint64_t i = 0; i < n; ++i) {
    const std::string which = "record " + std::to_string(samples_ + i);
    if (offsets[i + 1] <= offsets[i])
      return Status::InvalidArgument(which + (offsets[i + 1] == offsets[i]
                                                  ? " is empty (a record holds one element or more)"
                                                  : ": its offsets decrease"));
    const uint64_t elems = offsets[i + 1] - offsets[i];
    if (elems > opts_.max_record_bytes / elem)
      return Status::InvalidArgument(
          which + " is " + std::to_string(elems) + " elements of " + std::to_string(elem) +
          " bytes, more than the largest " + "record the writer takes (" +
          std::to_string(opts_.max_record_bytes) + " bytes; raise max_record_bytes)");
    if (!header_.fields.empty()) {  // a sample of several fields: its layout (io/fields.h)
      std::string why;
      if (!format::SplitSample(header_.fields, static_cast<const uint8_t*>(values) + offsets[i],
                               elems, spans_.data(), &why))
        return Status::InvalidArgument("sample " + std::to_string(samples_ + i) + ": " + why);
    }
  }
  RF_RETURN_IF_ERROR(CheckLabelsGiven(labels, n));
  const size_t lb = DTypeSize(spec_.label_dtype);
  const auto* lp = static_cast<const uint8_t*>(labels);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t bytes = (offsets[i + 1] - offsets[i]) * elem;
    const uint64_t payload = pending_records_.size();
    if (in_chunk_ > 0 &&
        format::RecordChunkBytes(in_chunk_ + 1, lb, payload + bytes) > opts_.chunk_bytes) {
      RF_RETURN_IF_ERROR(FlushRecordChunk());
    }
    const auto* src = static_cast<const uint8_t*>(values) + offsets[i] * elem;
    pending_records_.insert(pending_records_.end(), src, src + bytes);
    pending_ends_.push_back(pending_records_.size());
    pending_labels_.resize((size_t{in_chunk_} + 1) * lb);
    if (lp != nullptr) {
      std::memcpy(pending_labels_.data() + size_t{in_chunk_} * lb, lp + i * lb, lb);
    } else {
      std::memset(pending_labels_.data() + size_t{in_chunk_} * lb, 0, lb);
    }
    max_record_written_ = std::max(max_record_written_, bytes);
    ++in_chunk_;
    ++samples_;
  }
  return Status::Ok();
}

Status DatasetWriter::FlushRecordChunk() {
  if (in_chunk_ == 0) return Status::Ok();
  const size_t lb = DTypeSize(spec_.label_dtype);
  const format::RecordLayout l = format::RecordLayoutFor(in_chunk_, lb);
  const uint64_t data = format::RecordChunkBytes(in_chunk_, lb, pending_records_.size());
  uint8_t* c = chunk_;
  std::memset(c, 0, l.records_offset);
  auto* table = reinterpret_cast<uint64_t*>(c);  // queue buffers are page-aligned
  table[0] = 0;
  std::memcpy(table + 1, pending_ends_.data(), pending_ends_.size() * sizeof(uint64_t));
  std::memcpy(c + l.labels_offset, pending_labels_.data(), size_t{in_chunk_} * lb);
  std::memcpy(c + l.records_offset, pending_records_.data(), pending_records_.size());
  const uint64_t end = l.records_offset + pending_records_.size();
  std::memset(c + end, 0, data - end);

  Shard& s = shards_[chunks_ % shards_.size()];
  format::ChunkEntry e;
  e.index = chunks_;
  e.first_sample = samples_ - in_chunk_;
  e.data_bytes = data;
  e.record_bytes = pending_records_.size();
  e.sample_count = in_chunk_;
  RF_RETURN_IF_ERROR(writes_->Submit(c, &s.out.file(), e, &s.entries, &s.next_offset));
  chunk_samples_ = std::max(chunk_samples_, in_chunk_);
  ++chunks_;
  in_chunk_ = 0;
  pending_records_.clear();
  pending_ends_.clear();
  chunk_ = writes_->Acquire();
  return Status::Ok();
}

Status DatasetWriter::SetNumClasses(uint32_t n) {
  if (!spec_.has_labels) return Status::InvalidArgument("a dataset without labels has 0 classes");
  if (n == 0 || max_label_ >= int64_t{n}) {
    return Status::InvalidArgument("cannot set " + std::to_string(n) + " classes: label " +
                                   std::to_string(max_label_) + " was written");
  }
  spec_.num_classes = n;
  return Status::Ok();
}

Status DatasetWriter::SetMediaType(const std::string& media_type) {
  if (spec_.record_kind == format::RecordKind::kFields) {
    // Samples of several fields: their one image field's (an image media type for another).
    const int image = format::ImageFieldIndex(header_.fields);
    if (image < 0 || !format::IsImageMediaType(media_type))
      return Status::InvalidArgument(
          "a media type of samples of several fields is their one image field's, an image's");
    header_.fields[static_cast<size_t>(image)].media_type = media_type;
    spec_.fields = header_.fields;
    return Status::Ok();
  }
  if (spec_.record_kind != format::RecordKind::kBytes)
    return Status::InvalidArgument("a media type is for bytes records");
  if (!format::IsHeaderText(media_type, format::kMaxMediaType))
    return Status::InvalidArgument("media type '" + media_type + "': printable ASCII, at most " +
                                   std::to_string(format::kMaxMediaType) + " characters");
  spec_.media_type = media_type;
  header_.media_type = media_type;
  return Status::Ok();
}

Status DatasetWriter::FlushChunk() {
  if (in_chunk_ == 0) return Status::Ok();
  const size_t lb = DTypeSize(spec_.label_dtype);
  const format::ChunkLayout l = format::LayoutFor(in_chunk_, sample_bytes_, lb);
  uint8_t* c = chunk_;
  const uint64_t samples_end = uint64_t{in_chunk_} * sample_bytes_;
  std::memset(c + samples_end, 0, l.labels_offset - samples_end);
  std::memcpy(c + l.labels_offset, pending_labels_.data(), uint64_t{in_chunk_} * lb);
  std::memset(c + l.payload_bytes, 0, l.stored_bytes - l.payload_bytes);

  Shard& s = shards_[chunks_ % shards_.size()];
  format::ChunkEntry e;
  e.index = chunks_;
  e.first_sample = chunks_ * chunk_samples_;
  e.data_bytes = l.stored_bytes;
  e.record_bytes = samples_end;
  e.sample_count = in_chunk_;
  // The queue compresses, fills in the offset, sizes and checksum, writes, and appends the entry
  // to the shard's index.
  RF_RETURN_IF_ERROR(writes_->Submit(c, &s.out.file(), e, &s.entries, &s.next_offset));
  ++chunks_;
  in_chunk_ = 0;
  chunk_ = writes_->Acquire();
  return Status::Ok();
}

Status DatasetWriter::Finish() {
  if (finished_) return Status::Ok();
  RF_RETURN_IF_ERROR(header_.variable() ? FlushRecordChunk() : FlushChunk());
  RF_RETURN_IF_ERROR(writes_->Drain());
  if (samples_ == 0) return Status::InvalidArgument("no samples to write: " + path_);

  format::Header h = header_;
  h.dataset_id = opts_.dataset_id;
  h.shard_count = static_cast<uint32_t>(shards_.size());
  h.num_classes = !spec_.has_labels        ? 0
                  : spec_.num_classes != 0 ? spec_.num_classes
                                           : static_cast<uint32_t>(max_label_ + 1);
  h.total_samples = samples_;
  h.total_chunks = chunks_;
  h.chunk_samples = chunk_samples_;
  if (h.variable()) {  // the shape is the largest record
    RF_RETURN_IF_ERROR(
        format::SetSampleShape({max_record_written_ / DTypeSize(h.sample_dtype)}, &h));
  }
  const double per_channel = static_cast<double>(samples_) * h.height * h.width;
  for (uint32_t c = 0; c < h.channels; ++c) {
    if (!IsImageDType(h.sample_dtype) || h.variable()) {  // ids, records: the identity
      h.mean[c] = 0.f;
      h.stddev[c] = 1.f;
      continue;
    }
    const double mean = sum_[c] / per_channel;
    const double var = std::max(0.0, sumsq_[c] / per_channel - mean * mean);
    h.mean[c] = static_cast<float>(mean);
    h.stddev[c] = static_cast<float>(std::sqrt(var));
    // Every reader refuses such a header; better no dataset than one nothing can open. (The
    // converter refuses NaN and Inf earlier, naming the sample.)
    if (!std::isfinite(h.mean[c]) || !std::isfinite(h.stddev[c])) {
      return std::move(
          Status::InvalidArgument("the statistics of channel " + std::to_string(c) +
                                  " are not finite: the samples hold NaN or infinite values")
              .WithPath(path_));
    }
  }
  for (uint32_t i = 0; i < shards_.size(); ++i) {
    Shard& s = shards_[i];
    h.shard_index = i;
    h.shard_chunks = static_cast<uint32_t>(s.entries.size());
    h.shard_samples = 0;
    for (const auto& e : s.entries) h.shard_samples += e.sample_count;
    h.index_offset = s.next_offset;
    if (!spec_.class_names.empty()) {  // after the last chunk, before the index (format.h)
      RF_ASSIGN_OR_RETURN(const std::vector<uint8_t> names,
                          format::EncodeClassNames(spec_.class_names));
      h.names_offset = s.next_offset;
      h.names_bytes = names.size();
      h.names_checksum = Checksum(names.data(), names.size());
      RF_RETURN_IF_ERROR(s.out.file().WriteAt(names.data(), names.size(), h.names_offset));
      h.index_offset = format::RoundUp(h.names_offset + h.names_bytes, format::kAlign);
    }
    std::vector<uint8_t> index = format::EncodeIndex(s.entries, h.version);
    h.file_size = h.index_offset + index.size();
    RF_RETURN_IF_ERROR(s.out.file().WriteAt(index.data(), index.size(), h.index_offset));
    uint8_t head[format::kHeaderBytes];
    format::EncodeHeader(h, head);
    RF_RETURN_IF_ERROR(s.out.file().WriteAt(head, sizeof head, 0));
  }
  RF_RETURN_IF_ERROR(CommitShards());
  // Counted once committed, so a Finish retried after a failure counts nothing twice.
  bytes_ = data_bytes_ = compressed_chunks_ = 0;
  for (const Shard& s : shards_) {
    for (const auto& e : s.entries) {
      bytes_ += e.stored_bytes;
      data_bytes_ += e.data_bytes;
      compressed_chunks_ += e.compressed() ? 1 : 0;
    }
  }
  finished_ = true;
  return Status::Ok();
}

Status DatasetWriter::CommitShards() {
  // Everything that can fail for lack of space or a bad disk happens here, before any rename.
  for (Shard& s : shards_) RF_RETURN_IF_ERROR(s.out.Prepare());
  // Shard 0 last: until it is in place the set is incomplete under its final names, and readers
  // say so; a rename failing part-way takes back the shards already renamed.
  for (size_t i = shards_.size(); i-- > 0;) {
    Status st = shards_[i].out.Commit();
    if (st.ok()) continue;
    for (size_t j = i + 1; j < shards_.size(); ++j) ::unlink(shards_[j].out.final_path().c_str());
    return st;
  }
  // What the new dataset replaces: files named like it, never our own shards or a file to keep
  // (an input, by any name), and only ringfeed datasets: a text file named like a shard stays.
  std::vector<std::string> kept = paths();
  kept.insert(kept.end(), opts_.keep.begin(), opts_.keep.end());
  for (const std::string& f : DatasetFilesNamed(path_)) {
    const bool keep = std::any_of(kept.begin(), kept.end(),
                                  [&f](const std::string& k) { return IsSameFile(f, k); });
    if (keep || !IsDatasetFile(f)) continue;
    if (::unlink(f.c_str()) == 0) removed_.push_back(f);
  }
  return Status::Ok();
}

}  // namespace rf
