#include "pipeline/images/image_stage.h"

#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "pipeline/output/batch_decode.h"

namespace rf {
namespace {

// The global chunk holding global sample `index` (chunks are in sample order).
size_t ChunkOf(const Dataset& d, uint64_t index) {
  size_t lo = 0, hi = d.chunk_count();
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (d.chunk(mid).first_sample <= index) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

Result<std::unique_ptr<ImageStage>> ImageStage::Create(
    const std::vector<const Dataset*>& datasets, TrainingSource& source, LoaderDevice& device,
    std::shared_ptr<OutputPool> pool, std::unique_ptr<ImageDecoder> decoder, uint32_t batch,
    uint32_t depth, bool skip_bad_records, std::shared_ptr<const FieldSplit> fields) {
  if (depth == 0 || batch == 0) return Status::InvalidArgument("an image stage of depth 0");
  if (datasets.empty()) return Status::InvalidArgument("an image stage of no dataset");
  std::unique_ptr<ImageStage> s(new ImageStage(datasets, source, device, std::move(pool),
                                               std::move(decoder), skip_bad_records));
  s->fields_ = std::move(fields);
  uint64_t first = 0;
  for (const Dataset* d : datasets) {
    s->firsts_.push_back(first);
    first += d->sample_count();
  }
  if (const MixtureState* m = source.mixture_state(); m != nullptr) {
    s->mixture_ = true;
    s->mark_ = *m;
  }
  const ImageDecodeSpec& spec = s->decoder_->spec();
  s->sample_bytes_ = spec.OutputSampleBytes();
  s->sample_shape_ = spec.SampleShape();
  // The decoder writes the pool's buffers where they are in its memory; else a host buffer a
  // slot, copied to the batch's.
  s->staged_ = s->decoder_->output_gpu() != device.gpu();
  // The decoder writes the GPU's memory itself (nvJPEG): the labels are made on the host and
  // copied, and a skipped record's samples are moved up on the GPU.
  s->gpu_out_ = !s->staged_ && device.gpu() >= 0;
  for (uint32_t i = 0; i < depth; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->indices.reserve(batch);
    slot->keys.reserve(batch);
    slot->offsets.reserve(size_t{batch} + 1);
    if (s->staged_) slot->staging.resize(size_t{batch} * s->sample_bytes_);
    if (s->staged_ || s->gpu_out_) slot->labels.resize(batch);
    s->free_.push_back(slot.get());
    s->slots_.push_back(std::move(slot));
  }
  return s;
}

ImageStage::~ImageStage() { Drain(); }

void ImageStage::Drain() {
  while (!in_flight_.empty()) {
    Slot* s = in_flight_.front();
    in_flight_.pop_front();
    (void)decoder_->Wait(&s->job);
    s->out.reset();  // back to the pool
    free_.push_back(s);
  }
}

void ImageStage::SourceRestored() {
  Drain();
  if (const MixtureState* m = source_.mixture_state(); m != nullptr) mark_ = *m;
  ahead_ = false;
}

Status ImageStage::StartEpoch(uint64_t epoch, uint64_t position) {
  Drain();
  failure_ = Status::Ok();
  if (mixture_ && ahead_) {
    // The stream goes on from the last batch handed out, not from the batches dropped.
    RF_RETURN_IF_ERROR(source_.RewindMixture(mark_));
    ahead_ = false;
  }
  source_done_ = false;
  if (epoch != skipped_.epoch) skipped_ = SkippedRecords{epoch, 0, {}};
  RF_RETURN_IF_ERROR(source_.StartEpoch(epoch, position));
  position_ = position;
  return Status::Ok();
}

Status ImageStage::Fill() {
  while (!source_done_ && !free_.empty()) {
    const uint64_t position = source_.position();
    RF_ASSIGN_OR_RETURN(const Batch b, source_.Next());
    if (b.n == 0) {
      source_done_ = true;
      break;
    }
    ahead_ = true;
    Slot& s = *free_.back();
    // The source's batch is valid until its next call: its records, offsets (elements of uint8:
    // bytes), indices and keys are copied; the vectors grow to the largest batch and stay there.
    if (fields_) {
      // Samples of several fields: the whole samples kept for the other fields (laid out at the
      // hand-out, once the bad records are known), the image field's bytes decoded.
      s.records.assign(static_cast<const uint8_t*>(b.samples),
                       static_cast<const uint8_t*>(b.samples) + b.values_bytes);
      RF_RETURN_IF_ERROR(fields_->Split(s.records.data(), b.offsets, b.n, &s.spans));
      fields_->TakeDecoded(s.records.data(), s.spans, &s.bytes, &s.offsets);
    } else {
      s.bytes.assign(static_cast<const uint8_t*>(b.samples),
                     static_cast<const uint8_t*>(b.samples) + b.values_bytes);
      s.offsets.assign(b.offsets, b.offsets + b.n + 1);
    }
    s.indices = source_.batch_samples();
    if (b.sample_indices != nullptr) {
      s.keys.assign(b.sample_indices, b.sample_indices + b.n);
    } else {
      s.keys = s.indices;
    }
    if (mixture_) s.mixture = *source_.mixture_state();
    s.position = position;
    std::vector<int64_t> shape{b.n};
    shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
    RF_ASSIGN_OR_RETURN(s.out, pool_->Acquire(b.n, decoder_->spec().output, std::move(shape)));
    if (fields_) {  // room for the other fields after the images (before anything is written)
      RF_RETURN_IF_ERROR(
          pool_->Reserve(*s.out, ImagesBytes(b.n) + fields_->AreaBound(b.offsets, b.n)));
    }
    DecodeLabelsOnHost(b.label_dtype, b.labels, b.n,
                       staged_ || gpu_out_ ? s.labels.data() : s.out->labels());
    ImageJob& job = s.job;
    job.bytes = s.bytes.data();
    job.offsets = s.offsets.data();
    job.n = b.n;
    job.indices = s.keys.data();
    job.epoch = b.epoch;
    job.out = staged_ ? static_cast<void*>(s.staging.data()) : s.out->samples();
    RF_RETURN_IF_ERROR(decoder_->Submit(&job));
    free_.pop_back();
    in_flight_.push_back(&s);
  }
  return Status::Ok();
}

Result<std::shared_ptr<LoadedBatch>> ImageStage::Next() {
  RF_RETURN_IF_ERROR(failure_);
  for (;;) {
    if (Status st = Fill(); !st.ok()) {
      failure_ = st;
      return st;
    }
    if (in_flight_.empty()) return std::shared_ptr<LoadedBatch>();  // the epoch is over
    Slot& s = *in_flight_.front();
    in_flight_.pop_front();
    const uint64_t t0 = SteadyNowNs();
    Status st = decoder_->Wait(&s.job);
    decoder_wait_ns_ += SteadyNowNs() - t0;
    if (st.ok()) st = Settle(s);
    std::shared_ptr<LoadedBatch> out = std::move(s.out);
    const uint32_t span = s.job.n;
    free_.push_back(&s);
    if (!st.ok()) {
      failure_ = st;
      return st;
    }
    position_ = s.position + span;
    if (mixture_) {
      mark_ = s.mixture;
      ahead_ = !in_flight_.empty();  // else the source stands where this batch left it
    }
    if (out->size() == 0) continue;  // every record of the batch was bad, and skipped
    out->SetPlace(s.job.epoch, s.position, span);
    if (staged_) {
      RF_RETURN_IF_ERROR(
          device_.PutBytes(s.staging.data(), out->samples(), size_t{out->size()} * sample_bytes_));
    }
    if (staged_ || gpu_out_) {
      RF_RETURN_IF_ERROR(
          device_.PutBytes(s.labels.data(), out->labels(), size_t{out->size()} * sizeof(int64_t)));
    }
    if (fields_) RF_RETURN_IF_ERROR(PutFields(s, *out));
    return out;
  }
}

Status ImageStage::Settle(Slot& s) {
  LoadedBatch& out = *s.out;
  const ImageJob& job = s.job;
  out.mutable_indices() = s.indices;
  if (job.bad.empty()) return Status::Ok();
  if (!skip_) {
    const BadRecord& first = job.bad.front();
    return BadRecordStatus(s.indices[first.slot],
                           static_cast<size_t>(s.offsets[first.slot + 1] - s.offsets[first.slot]),
                           first.why);
  }
  // The good samples moved up over the bad ones, in order: outputs, labels, indices.
  uint8_t* samples = static_cast<uint8_t*>(job.out);
  int64_t* labels = staged_ || gpu_out_ ? s.labels.data() : out.labels();
  uint32_t kept = 0;
  size_t b = 0;
  for (uint32_t i = 0; i < job.n; ++i) {
    if (b < job.bad.size() && job.bad[b].slot == i) {
      ++skipped_.count;
      ++skipped_total_;
      if (skipped_.named.size() < kNamedSkips)
        skipped_.named.push_back(NameRecord(s.indices[i]) + ": " + job.bad[b].why);
      ++b;
      continue;
    }
    if (kept != i) {
      if (gpu_out_) {  // on the loader's stream, after the decode (Wait ordered it so)
        RF_RETURN_IF_ERROR(device_.MoveWithin(samples + size_t{kept} * sample_bytes_,
                                              samples + size_t{i} * sample_bytes_, sample_bytes_));
      } else {
        std::memmove(samples + size_t{kept} * sample_bytes_, samples + size_t{i} * sample_bytes_,
                     sample_bytes_);
      }
      labels[kept] = labels[i];
      out.mutable_indices()[kept] = out.mutable_indices()[i];
    }
    ++kept;
  }
  out.Truncate(kept);
  return Status::Ok();
}

Status ImageStage::PutFields(Slot& s, LoadedBatch& out) {
  // The samples kept: all, or those not skipped (job.bad in slot order).
  const ImageJob& job = s.job;
  const uint32_t* keep = nullptr;
  if (!job.bad.empty()) {
    s.keep.clear();
    size_t b = 0;
    for (uint32_t i = 0; i < job.n; ++i) {
      if (b < job.bad.size() && job.bad[b].slot == i) {
        ++b;
      } else {
        s.keep.push_back(i);
      }
    }
    keep = s.keep.data();
  }
  fields_->Layout(s.records.data(), s.spans, keep, out.size(), &s.area, &s.parts);
  uint8_t* area = static_cast<uint8_t*>(out.samples()) + ImagesBytes(job.n);
  if (!s.area.empty()) RF_RETURN_IF_ERROR(device_.PutBytes(s.area.data(), area, s.area.size()));
  fields_->Describe(out, area, s.parts, out.size());
  return Status::Ok();
}

size_t ImageStage::ImagesBytes(uint32_t n) const {
  const size_t a = FieldSplit::kFieldAlign;
  return (size_t{n} * sample_bytes_ + a - 1) / a * a;
}

std::pair<const Dataset*, uint64_t> ImageStage::Locate(uint64_t index) const {
  size_t i = datasets_.size() - 1;
  while (i > 0 && firsts_[i] > index) --i;
  return {datasets_[i], index - firsts_[i]};
}

std::string ImageStage::NameRecord(uint64_t index) const {
  const auto [dataset, local] = Locate(index);
  const ChunkLocation& c = dataset->chunk(ChunkOf(*dataset, local));
  return "sample " + std::to_string(index) + " (" + dataset->shard_path(c.shard) + " chunk " +
         std::to_string(c.entry.index) + " record " +
         std::to_string(c.entry.first_sample + (local - c.first_sample)) + ")";
}

Status ImageStage::BadRecordStatus(uint64_t index, size_t bytes, const std::string& why) const {
  const auto [dataset, local] = Locate(index);
  const size_t global = ChunkOf(*dataset, local);
  const ChunkLocation& c = dataset->chunk(global);
  const uint64_t in_chunk = local - c.first_sample;
  std::string what = "record " + std::to_string(c.entry.first_sample + in_chunk) + " (sample " +
                     std::to_string(local) + " of the dataset" +
                     (mixture_ ? ", " + std::to_string(index) + " of the mixture" : "") +
                     "), an image record of " + std::to_string(bytes) +
                     " bytes, does not decode: " + why;
  // The record's own byte: read from its chunk's record table (an error's path only; a raw
  // chunk's record lies at its own byte of the file, a compressed chunk's only in its data).
  uint64_t offset = c.entry.offset;
  std::vector<uint8_t> chunk(c.entry.data_bytes);
  if (dataset->ReadChunk(global, chunk.data()).ok()) {
    uint64_t start = 0;
    std::memcpy(&start, chunk.data() + in_chunk * sizeof(uint64_t), sizeof start);
    const uint64_t in_data = dataset->RecordsOffset(global) + start;
    if (c.entry.compressed()) {
      what += " (byte " + std::to_string(in_data) + " of the chunk's data)";
    } else {
      offset += in_data;
    }
  }
  what += "; skip_bad_records (--skip-bad-records) skips such records";
  return std::move(Status::Corruption(dataset->shard_path(c.shard), what)
                       .WithChunk(c.entry.index)
                       .WithOffset(offset));
}

std::string ImageStage::Describe() const {
  const ImageDecodeSpec& spec = decoder_->spec();
  return "images " + std::to_string(spec.size) + "x" + std::to_string(spec.size) + " (" +
         (spec.crop == ImageCrop::kCenter ? "centre crop" : "random resized crop and flip") +
         "), " + decoder_->Describe() + ", " + std::to_string(slots_.size()) + " batches ahead";
}

std::string SkippedRecords::Text(uint64_t shown_epoch) const {
  if (count == 0) return "";
  std::string s = std::to_string(count) + " bad image record" + (count == 1 ? "" : "s") +
                  " skipped in epoch " + std::to_string(shown_epoch) + ": ";
  for (size_t i = 0; i < named.size(); ++i) s += (i == 0 ? "" : "; ") + named[i];
  if (count > named.size()) s += "; and " + std::to_string(count - named.size()) + " more";
  return s;
}

}  // namespace rf
