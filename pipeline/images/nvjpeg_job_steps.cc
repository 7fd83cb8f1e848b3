// NvjpegImageDecoder (pipeline/images/nvjpeg_image_decoder.h): what a driver does to a job, the
// header's steps 1 to 4 (Decode, from its driver thread), and step 5 (FinishShare, from the finish
// thread); the subsets of a job the CPU decoder takes.
#include <algorithm>
#include <cmath>

#include "core/augment.h"
#include "core/clock.h"
#include "core/resized_crop.h"
#include "cuda/check.h"
#include "decode/image_record.h"
#include "pipeline/images/nvjpeg_image_decoder.h"

namespace rf {
namespace {

namespace nj = cuda::nvjpeg;

// The decode area's least size: a batch of 256 ImageNet-sized images (500 x 375 RGB) is 144 MB.
constexpr size_t kMinAreaBytes = size_t{160} << 20;
constexpr size_t kAreaAlign = 256;
// The Philox block of a sample's draws that picks the CPU share (core/augment.h uses blocks 0
// to 10, core/resized_crop.h 16 to 26).
constexpr uint32_t kShareBlock = 27;

}  // namespace

ImageJob NvjpegImageDecoder::Subset::Gather(const ImageJob& job, const std::vector<uint32_t>& slots,
                                            void* out) {
  bytes.clear();
  offsets.assign(1, 0);
  indices.clear();
  for (uint32_t slot : slots) {
    const uint8_t* data = job.bytes + job.offsets[slot];
    bytes.insert(bytes.end(), data, data + (job.offsets[slot + 1] - job.offsets[slot]));
    offsets.push_back(static_cast<int64_t>(bytes.size()));
    indices.push_back(job.indices[slot]);
  }
  ImageJob sub;
  sub.bytes = bytes.data();
  sub.offsets = offsets.data();
  sub.n = static_cast<uint32_t>(slots.size());
  sub.indices = indices.data();
  sub.epoch = job.epoch;
  sub.out = out;
  return sub;
}

Status NvjpegImageDecoder::Decode(Driver& d, Pending& p) {
  ImageJob& job = *p.job;
  d.taken.clear();
  d.late.clear();
  p.share.n = 0;
  d.write_ok_waited = false;
  RF_RETURN_IF_ERROR(SubmitShare(d, p));
  const uint64_t t0 = SteadyNowNs();
  size_t s = 0;  // the next of the share's slots (ascending)
  for (uint32_t i = 0; i < job.n; ++i) {
    if (s < p.share_slots.size() && p.share_slots[s] == i) {
      ++s;
      continue;
    }
    const uint8_t* data = job.bytes + job.offsets[i];
    const size_t n = static_cast<size_t>(job.offsets[i + 1] - job.offsets[i]);
    Taken t;
    t.slot = i;
    // PNG, WebP and whatever else is not a JPEG go to the CPU decoder, which decodes them or
    // names what they are (decode/image_record.h).
    if (SniffImageCodec(data, n) != ImageCodec::kJpeg) {
      d.late.push_back(i);
      continue;
    }
    if (std::string why = ReadJpegFrame(data, n, spec_.max_side, &t.frame); !why.empty()) {
      std::string named = "JPEG: ";
      named += why;
      p.bad.push_back({i, std::move(named)});
      continue;
    }
    // CMYK and YCCK JPEGs become RGB as PIL makes them (decode/jpeg_image.h): on the CPU.
    if (t.frame.components == 4) {
      d.late.push_back(i);
      continue;
    }
    // A JPEG that does not end in its end-of-image marker (cut short) goes to the CPU decoder,
    // which decodes what the crop needs and names where it fails (decode/jpeg_image.h).
    const bool whole = n >= 2 && data[n - 2] == 0xff && data[n - 1] == 0xd9;
    int unsupported = 0;
    if (!whole || api_->JpegStreamParseHeader(handle_, data, n, d.jpeg_stream) != nj::kSuccess ||
        (hardware_ &&
         (api_->DecodeBatchedSupported(handle_, d.jpeg_stream, &unsupported) != nj::kSuccess ||
          unsupported != 0))) {
      d.late.push_back(i);
      continue;
    }
    d.taken.push_back(t);
  }
  parse_ns_ += SteadyNowNs() - t0;
  nvjpeg_records_ += d.taken.size();
  // Groups of the records taken, each as many as the area holds.
  for (size_t g = 0; g < d.taken.size();) {
    size_t end = g, bytes = 0;
    while (end < d.taken.size()) {
      const size_t b = ImageBytes(d.taken[end].frame);
      if (end > g && bytes + b > std::max(kMinAreaBytes, d.sets[d.next_set].area.bytes())) break;
      bytes += b;
      ++end;
    }
    RF_RETURN_IF_ERROR(DecodeGroup(d, p, g, end, bytes));
    g = end;
  }
  if (!d.late.empty()) RF_RETURN_IF_ERROR(DecodeLate(d, p));
  RF_RETURN_IF_ERROR(WaitWriteOk(d, p));  // the finish thread's copies come after it
  return Status::Ok();
}

Status NvjpegImageDecoder::WaitWriteOk(Driver& d, Pending& p) {
  if (!d.write_ok_waited) RF_RETURN_IF_ERROR(HostWait(p.write_ok.get()));
  d.write_ok_waited = true;
  return Status::Ok();
}

Status NvjpegImageDecoder::HostWait(cudaEvent_t e) {
  const uint64_t t0 = SteadyNowNs();
  const cudaError_t r = cudaEventSynchronize(e);
  gpu_wait_ns_ += SteadyNowNs() - t0;
  if (r != cudaSuccess)
    return cuda::Failure(cuda::Describe(r), "cudaEventSynchronize", __FILE__, __LINE__);
  return Status::Ok();
}

Status NvjpegImageDecoder::SubmitShare(Driver& d, Pending& p) {
  ImageJob& job = *p.job;
  p.share_slots.clear();
  const double share = adaptive_ ? adaptive_->share() : cpu_share_;
  const uint32_t k =
      static_cast<uint32_t>(std::min<double>(job.n, std::floor(job.n * share + 0.5)));
  if (k == 0) return Status::Ok();
  d.keys.clear();
  for (uint32_t i = 0; i < job.n; ++i) {
    const auto draws = augment::Draws(spec_.seed, job.epoch, job.indices[i], kShareBlock);
    d.keys.push_back({(uint64_t{draws.v[0]} << 32) | draws.v[1], i});
  }
  std::nth_element(d.keys.begin(), d.keys.begin() + (k - 1), d.keys.end());
  for (uint32_t j = 0; j < k; ++j) p.share_slots.push_back(d.keys[j].second);
  std::sort(p.share_slots.begin(), p.share_slots.end());
  // The previous job's copies from this pinned share have read it.
  RF_RETURN_IF_ERROR(HostWait(p.copied.get()));
  if (p.share_out.bytes() < size_t{k} * sample_bytes_) {
    p.share_out = {};
    RF_ASSIGN_OR_RETURN(p.share_out,
                        cuda::PinnedBuffer::Allocate(size_t{job.n} * sample_bytes_,
                                                     "the CPU share of nvJPEG's batches"));
  }
  p.share = p.share_records.Gather(job, p.share_slots, p.share_out.data());  // k records
  share_records_ += k;
  Status s = fallback_->Submit(&p.share);
  if (!s.ok()) p.share.n = 0;  // nothing for the finish thread to wait for
  return s;
}

Status NvjpegImageDecoder::FinishShare(Pending& p) {
  RF_RETURN_IF_ERROR(fallback_->Wait(&p.share));
  const auto* from = p.share_out.as<uint8_t>();
  auto* out = static_cast<uint8_t*>(p.job->out);
  size_t b = 0;
  for (uint32_t k = 0; k < p.share.n;) {
    if (b < p.share.bad.size() && p.share.bad[b].slot == k) {
      p.bad.push_back({p.share_slots[k], std::move(p.share.bad[b].why)});
      ++b;
      ++k;
      continue;
    }
    uint32_t end = k + 1;  // a run of slots, none bad
    while (end < p.share.n && p.share_slots[end] == p.share_slots[end - 1] + 1 &&
           !(b < p.share.bad.size() && p.share.bad[b].slot == end))
      ++end;
    RF_CUDA_CHECK(cudaMemcpyAsync(out + p.share_slots[k] * sample_bytes_, from + k * sample_bytes_,
                                  (end - k) * sample_bytes_, cudaMemcpyHostToDevice,
                                  copy_stream_.get()));
    k = end;
  }
  return Status::Ok();
}

size_t NvjpegImageDecoder::ImageBytes(const JpegFrame& f) {
  const size_t b = size_t{f.width} * 3 * f.height;
  return (b + kAreaAlign - 1) / kAreaAlign * kAreaAlign;
}

Status NvjpegImageDecoder::DecodeGroup(Driver& d, Pending& p, size_t g, size_t end, size_t bytes) {
  const ImageJob& job = *p.job;
  const uint32_t n = static_cast<uint32_t>(end - g);
  const uint32_t which = d.next_set;
  d.next_set = (d.next_set + 1) % kSets;
  Set& set = d.sets[which];
  // The set's area's last reader (its crops' kernel before) is done: nvJPEG's hardware decoder
  // writes it when DecodeBatched is called (see the top of this file).
  RF_RETURN_IF_ERROR(HostWait(set.area_free.get()));
  if (set.area.bytes() < bytes) {
    set.area = {};
    RF_ASSIGN_OR_RETURN(set.area, cuda::DeviceBuffer::Allocate(std::max(bytes, kMinAreaBytes),
                                                               "the nvJPEG decode area"));
  }
  if (set.crops.bytes() < n * sizeof(decode::GpuCrop)) {
    set.crops = {};
    RF_ASSIGN_OR_RETURN(
        set.crops, cuda::DeviceBuffer::Allocate(std::max<size_t>(n, 256) * sizeof(decode::GpuCrop),
                                                "the nvJPEG crops"));
  }
  d.data.clear();
  d.lengths.clear();
  d.images.assign(n, nj::Image{});
  d.host_crops.assign(n, decode::GpuCrop{});
  uint8_t* area = set.area.as<uint8_t>();
  size_t at = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const Taken& t = d.taken[g + k];
    d.data.push_back(job.bytes + job.offsets[t.slot]);
    d.lengths.push_back(static_cast<size_t>(job.offsets[t.slot + 1] - job.offsets[t.slot]));
    d.images[k].channel[0] = area + at;
    d.images[k].pitch[0] = size_t{t.frame.width} * 3;
    decode::GpuCrop& c = d.host_crops[k];
    c.offset = at;
    c.pitch = t.frame.width * 3;
    c.slot = t.slot;
    const CropBox box =
        CropFor(spec_, job.epoch, job.indices[t.slot], t.frame.height, t.frame.width);
    const AxisWindow ry =
        CropAxisWindow(box.top, box.height, box.resized_height, t.frame.height, spec_.size);
    const AxisWindow rx =
        CropAxisWindow(box.left, box.width, box.resized_width, t.frame.width, spec_.size);
    c.rows = {ry.origin, ry.step, ry.lo, ry.hi};
    c.cols = {rx.origin, rx.step, rx.lo, rx.hi};
    c.flip = box.flip ? 1 : 0;
    at += ImageBytes(t.frame);
  }
  const uint64_t t0 = SteadyNowNs();
  nj::Code code = nj::kSuccess;
  if (set.initialized != n) {
    code = api_->DecodeBatchedInitialize(handle_, set.state, static_cast<int>(n), 1,
                                         nj::kOutputRgbInterleaved);
    set.initialized = code == nj::kSuccess ? n : 0;
  }
  if (code == nj::kSuccess) {
    code = api_->DecodeBatched(handle_, set.state, d.data.data(), d.lengths.data(), d.images.data(),
                               set.stream.get());
  }
  nvjpeg_ns_ += SteadyNowNs() - t0;
  if (code != nj::kSuccess) {
    // nvJPEG says only that the batch failed: the CPU decoder finds which record, and why.
    set.initialized = 0;  // nvJPEG's rule: initialize again after a failed batch
    for (size_t k = g; k < end; ++k) d.late.push_back(d.taken[k].slot);
    return Status::Ok();
  }
  RF_RETURN_IF_ERROR(WaitWriteOk(d, p));
  RF_CUDA_CHECK(cudaMemcpyAsync(set.crops.data(), d.host_crops.data(), n * sizeof(decode::GpuCrop),
                                cudaMemcpyHostToDevice, set.stream.get()));
  RF_CUDA_CHECK(decode::ResampleCropsOnGpu(area, set.crops.as<decode::GpuCrop>(), n, output_,
                                           job.out, set.stream.get()));
  RF_CUDA_CHECK(cudaEventRecord(set.area_free.get(), set.stream.get()));
  RF_CUDA_CHECK(cudaEventRecord(p.decoded[which].get(), set.stream.get()));
  p.decoded_on[which] = true;
  return Status::Ok();
}

Status NvjpegImageDecoder::DecodeLate(Driver& d, Pending& p) {
  ImageJob& job = *p.job;
  std::sort(d.late.begin(), d.late.end());
  d.late_out.resize(d.late.size() * sample_bytes_);
  ImageJob sub = d.late_records.Gather(job, d.late, d.late_out.data());
  RF_RETURN_IF_ERROR(fallback_->Submit(&sub));
  RF_RETURN_IF_ERROR(fallback_->Wait(&sub));
  late_records_ += sub.n;
  RF_RETURN_IF_ERROR(WaitWriteOk(d, p));
  size_t b = 0;
  for (uint32_t k = 0; k < sub.n; ++k) {
    if (b < sub.bad.size() && sub.bad[b].slot == k) {
      p.bad.push_back({d.late[k], std::move(sub.bad[b].why)});
      ++b;
      continue;
    }
    // Pageable memory: the copy has read it when the call returns.
    RF_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(job.out) + d.late[k] * sample_bytes_,
                                  d.late_out.data() + k * sample_bytes_, sample_bytes_,
                                  cudaMemcpyHostToDevice, copy_stream_.get()));
    p.late_copies = true;
  }
  return Status::Ok();
}

}  // namespace rf
