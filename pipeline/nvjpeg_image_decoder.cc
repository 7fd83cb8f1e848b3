// NvjpegImageDecoder (pipeline/image_decoder.h): JPEG records decoded on the GPU by nvJPEG's
// batched decode (cuda/nvjpeg_library.h: loaded at run time), then cropped, resized, flipped,
// normalized and written in the output's dtype and layout by one kernel (decode/
// gpu_image_resample.h), into the loader's output buffer in GPU memory.
//
// A job, split into parts (up to kMaxLanes, of at least kMinPart records), each part on one of
// the decoder's threads (its lanes; Submit returns at once):
//   1. each record's frame header read on the host (decode/jpeg_image.h's ReadJpegFrame: no
//      start-of-image, no frame, a side over max_side: a bad record, before any allocation),
//      then nvJPEG's parse of its header and whether its batched decode takes it (the hardware
//      decoder takes baseline JPEGs of one scan; not 4:1:0 or 4:1:1, not progressive); a
//      record that does not end in an end-of-image marker is not given to nvJPEG;
//   2. those it takes, in groups whose decoded pixels fit the decode area (at least 512 MiB, or
//      the largest image), decoded whole as interleaved RGB into the area, on the decoder's
//      stream (only the records' JPEG bytes cross PCIe), then the crops' kernel from the area
//      into the output;
//   3. those it does not take, or that a group's decode failed on, decoded by the CPU decoder
//      (pipeline/cpu_image_decoder.cc: libjpeg-turbo on worker threads), which names a bad
//      record's fault, into host memory copied to their output samples.
// The crops are the CPU decoder's (CropFor: keyed by seed, epoch and sample index); the GPU
// resamples the full-size decode where the CPU may decode at a DCT scale, so the two agree to
// within the decoders' rounding (the measured tolerance: tests/pipeline/
// cuda_loader_images_test.cc).
//
// Streams: each lane's work runs on its own stream. Submit records an event on the consumer's
// stream (the loader's), and a lane's thread waits for it before it queues the part's decode
// (whatever the consumer's stream had queued on that buffer first: in the steady state it has
// passed); Wait makes the consumer's stream wait for each part's last work, without blocking the
// host.
//
// Memory (GPU), a lane: the decode area and the crops' table, grown to the largest group met and
// reused; nvJPEG's own buffers. Host: the fallback's staging, grown likewise.
//
// Thread safety: Submit and Wait from one thread (the loader's); the lanes do the rest; the job
// list (and the records' `bad` list) is under one lock, the CPU fallback under another.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "cuda/check.h"
#include "cuda/handles.h"
#include "cuda/nvjpeg_library.h"
#include "decode/gpu_image_resample.h"
#include "pipeline/image_decoder.h"

namespace rf {
namespace {

namespace nj = cuda::nvjpeg;

// The decode area's least size: a batch of 256 ImageNet-sized images (500 x 375 RGB) is 144 MB.
constexpr size_t kMinAreaBytes = size_t{512} << 20;
constexpr size_t kAreaAlign = 256;

decode::GpuImageOutput OutputOf(const ImageDecodeSpec& s) {
  decode::GpuImageOutput o;
  switch (s.output) {
    case DType::kUInt8:
      o.element = decode::GpuImageOutput::kUInt8;
      break;
    case DType::kBFloat16:
      o.element = decode::GpuImageOutput::kBFloat16;
      break;
    case DType::kFloat16:
      o.element = decode::GpuImageOutput::kFloat16;
      break;
    default:
      o.element = decode::GpuImageOutput::kFloat32;
  }
  o.size = s.size;
  o.channels_last = s.channels_last;
  o.normalize = s.normalize;
  for (int c = 0; c < 3; ++c) {
    o.mean[c] = s.mean[c];
    o.stddev[c] = s.stddev[c];
  }
  return o;
}

class NvjpegImageDecoder final : public ImageDecoder {
 public:
  static Result<std::unique_ptr<ImageDecoder>> Create(const ImageDecodeSpec& spec, int gpu,
                                                      cudaStream_t consumer, uint32_t threads) {
    RF_ASSIGN_OR_RETURN(const nj::Api* api, nj::Library());
    std::unique_ptr<NvjpegImageDecoder> d(new NvjpegImageDecoder(spec, gpu, consumer, api));
    RF_RETURN_IF_ERROR(d->Open(threads));
    for (auto& lane : d->lanes_)
      lane->thread = std::thread([p = d.get(), l = lane.get()] { p->Run(*l); });
    return std::unique_ptr<ImageDecoder>(std::move(d));
  }

  ~NvjpegImageDecoder() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (auto& lane : lanes_) {
      if (lane->thread.joinable()) lane->thread.join();
      if (lane->stream) (void)cudaStreamSynchronize(lane->stream.get());
      if (lane->jpeg_stream != nullptr) api_->JpegStreamDestroy(lane->jpeg_stream);
      if (lane->state != nullptr) api_->JpegStateDestroy(lane->state);
      if (lane->handle != nullptr) api_->Destroy(lane->handle);
    }
  }

  Status Submit(ImageJob* job) override {
    if (job->n == 0) return Status::InvalidArgument("an image job of 0 records");
    job->next = job->done = 0;
    job->bad.clear();
    Pending p;
    p.job = job;
    // Parts of at least kMinPart records, one a lane at most.
    p.parts = std::clamp<uint32_t>(job->n / kMinPart, 1, static_cast<uint32_t>(lanes_.size()));
    {
      std::lock_guard<std::mutex> lock(mu_);
      RF_RETURN_IF_ERROR(TakeEvent(&p.write_ok));
      for (uint32_t k = 0; k < p.parts; ++k) RF_RETURN_IF_ERROR(TakeEvent(&p.done[k]));
    }
    RF_CUDA_CHECK(cudaEventRecord(p.write_ok, consumer_));
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(p);
    }
    work_.notify_all();
    return Status::Ok();
  }

  Status Wait(ImageJob* job) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (jobs_.empty() || jobs_.front().job != job)
      return Status::InvalidArgument("nvJPEG decoder: Wait for a job not the oldest submitted");
    done_.wait(lock, [&] { return jobs_.front().finished == jobs_.front().parts; });
    Pending p = std::move(jobs_.front());
    jobs_.pop_front();
    free_events_.push_back(p.write_ok);
    lock.unlock();
    std::sort(job->bad.begin(), job->bad.end(),
              [](const BadRecord& a, const BadRecord& b) { return a.slot < b.slot; });
    Status s = p.status;
    for (uint32_t k = 0; k < p.parts && s.ok(); ++k) {
      const cudaError_t e = cudaStreamWaitEvent(consumer_, p.done[k], 0);
      if (e != cudaSuccess)
        s = cuda::Failure(cuda::Describe(e), "cudaStreamWaitEvent", __FILE__, __LINE__);
    }
    lock.lock();
    // Waited on by the consumer's stream (or never to be): free to record again.
    for (uint32_t k = 0; k < p.parts; ++k) free_events_.push_back(p.done[k]);
    return s;
  }

  const ImageDecodeSpec& spec() const override { return spec_; }
  int output_gpu() const override { return gpu_; }
  uint32_t threads() const override { return static_cast<uint32_t>(lanes_.size()); }
  double busy_seconds() const override { return busy_ns_.load() * 1e-9; }
  uint64_t records() const override { return records_.load(); }
  std::string Describe() const override {
    return std::string("jpeg decode by nvJPEG (") + (hardware_ ? "hardware decoder" : "CUDA") +
           ") on GPU " + std::to_string(gpu_) + " from " + std::to_string(lanes_.size()) +
           " thread" + (lanes_.size() == 1 ? "" : "s") + ", " +
           std::to_string(fallback_records_.load()) + " records so far on the CPU fallback (" +
           fallback_->Describe() + ")" + HostTimes();
  }

  // Where the lanes' host time went, a record: ", host time a record: 12.3 us reading
  // headers, 45.6 us in nvJPEG's decode calls" (empty before any record).
  std::string HostTimes() const {
    const uint64_t n = records_.load();
    if (n == 0) return "";
    char text[128];
    std::snprintf(text, sizeof text,
                  ", host time a record: %.1f us reading headers, %.1f us in nvJPEG's decode calls",
                  parse_ns_.load() * 1e-3 / n, nvjpeg_ns_.load() * 1e-3 / n);
    return text;
  }

  // The threads that drive nvJPEG, each with its own nvJPEG instance, decode state, stream and
  // decode area. One: on an H100 (2026-11-27) one thread's host work (nvJPEG's calls: about 40
  // us a 500 x 375 image) kept the hardware decoder about 90% busy, and with four, each on parts
  // of 64 images of a batch of 256, the decode stalled for good after 10 to 20 batches (with
  // parts of 16 it did not), whether the lanes shared one nvJPEG instance or had one each. The
  // cause is not found; the lanes stay one until it is.
  static constexpr uint32_t kMaxLanes = 1;
  // A job is split into parts of at least this many records, one a lane.
  static constexpr uint32_t kMinPart = 16;

 private:
  // A job submitted and not yet waited for: its parts, decoded by the lanes.
  struct Pending {
    ImageJob* job = nullptr;
    cudaEvent_t write_ok = nullptr;  // on the consumer's stream, at Submit
    uint32_t parts = 1, started = 0, finished = 0;
    cudaEvent_t done[kMaxLanes] = {};  // on each part's lane stream, after its last work
    Status status;                     // the first part's failure
  };
  // A record nvJPEG takes: its slot and size.
  struct Taken {
    uint32_t slot = 0;
    JpegFrame frame;
  };
  // One thread driving nvJPEG, and what it reuses from part to part.
  struct Lane {
    std::thread thread;
    nj::Handle handle = nullptr;
    nj::State state = nullptr;
    nj::Stream jpeg_stream = nullptr;
    uint32_t initialized = 0;  // the batch size nvJPEG's batched decode was initialized for
    cuda::CudaStream stream;
    cuda::DeviceBuffer area, crops;
    std::vector<Taken> taken;
    std::vector<uint32_t> cpu;
    std::vector<BadRecord> bad;
    std::vector<const unsigned char*> data;
    std::vector<size_t> lengths;
    std::vector<nj::Image> images;
    std::vector<decode::GpuCrop> host_crops;
    std::vector<uint8_t> fallback_bytes, fallback_out;
    std::vector<int64_t> fallback_offsets;
    std::vector<uint64_t> fallback_indices;
  };

  NvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu, cudaStream_t consumer,
                     const nj::Api* api)
      : spec_(spec),
        output_(OutputOf(spec)),
        sample_bytes_(spec.OutputSampleBytes()),
        gpu_(gpu),
        consumer_(consumer),
        api_(api) {}

  Status Open(uint32_t threads) {
    RF_CUDA_CHECK(cudaSetDevice(gpu_));
    const uint32_t lanes = std::clamp<uint32_t>(threads, 1, kMaxLanes);
    for (uint32_t i = 0; i < lanes; ++i) {
      auto lane = std::make_unique<Lane>();
      // Each lane its own nvJPEG instance: the hardware decoder where the GPU has one (A100,
      // H100), else nvJPEG's CUDA decode. (Lanes sharing one hardware instance stalled for good
      // at batches of 256 on an H100: 2026-11-27.)
      const bool hw =
          api_->CreateEx(nj::kBackendHardware, nullptr, nullptr, 0, &lane->handle) == nj::kSuccess;
      hardware_ = i == 0 ? hw : hardware_ && hw;
      nj::Code c = nj::kSuccess;
      if (!hw) {
        lane->handle = nullptr;
        c = api_->CreateEx(nj::kBackendDefault, nullptr, nullptr, 0, &lane->handle);
      }
      if (c == nj::kSuccess) c = api_->JpegStateCreate(lane->handle, &lane->state);
      if (c == nj::kSuccess) c = api_->JpegStreamCreate(lane->handle, &lane->jpeg_stream);
      lanes_.push_back(std::move(lane));  // the destructor frees what was made
      if (c != nj::kSuccess)
        return Status::Unsupported("nvJPEG (" + api_->path + "): " + nj::CodeName(c));
      RF_ASSIGN_OR_RETURN(lanes_.back()->stream, cuda::CreateStream());
    }
    RF_ASSIGN_OR_RETURN(fallback_, MakeCpuImageDecoder(spec_, threads));
    return Status::Ok();
  }

  // An event from the free list, or a new one (under mu_).
  Status TakeEvent(cudaEvent_t* e) {
    if (!free_events_.empty()) {
      *e = free_events_.back();
      free_events_.pop_back();
      return Status::Ok();
    }
    RF_ASSIGN_OR_RETURN(cuda::CudaEvent made, cuda::CreateEvent(false));
    events_.push_back(std::move(made));
    *e = events_.back().get();
    return Status::Ok();
  }

  void Run(Lane& lane) {
    (void)cudaSetDevice(gpu_);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Pending* p = nullptr;
      work_.wait(lock, [&] {
        if (stop_) return true;
        for (Pending& q : jobs_) {
          if (q.started < q.parts) {
            p = &q;
            return true;
          }
        }
        return false;
      });
      if (stop_) return;
      const uint32_t part = p->started++;
      ImageJob* job = p->job;
      const cudaEvent_t write_ok = p->write_ok, done = p->done[part];
      const uint32_t lo = static_cast<uint32_t>(uint64_t{job->n} * part / p->parts);
      const uint32_t hi = static_cast<uint32_t>(uint64_t{job->n} * (part + 1) / p->parts);
      lock.unlock();  // jobs_ is a deque: p stays valid while only its front is popped
      const uint64_t t0 = SteadyNowNs();
      lane.bad.clear();
      Status s = Decode(lane, *job, lo, hi, write_ok);
      if (s.ok()) {
        const cudaError_t e = cudaEventRecord(done, lane.stream.get());
        if (e != cudaSuccess)
          s = cuda::Failure(cuda::Describe(e), "cudaEventRecord", __FILE__, __LINE__);
      }
      busy_ns_ += SteadyNowNs() - t0;
      records_ += hi - lo;
      lock.lock();
      for (BadRecord& b : lane.bad) job->bad.push_back(std::move(b));
      if (!s.ok() && p->status.ok()) p->status = std::move(s);
      if (++p->finished == p->parts) done_.notify_all();
    }
  }

  // Records [lo, hi) of `job` on `lane`.
  Status Decode(Lane& lane, ImageJob& job, uint32_t lo, uint32_t hi, cudaEvent_t write_ok) {
    lane.taken.clear();
    lane.cpu.clear();
    const uint64_t t0 = SteadyNowNs();
    for (uint32_t i = lo; i < hi; ++i) {
      const uint8_t* data = job.bytes + job.offsets[i];
      const size_t n = static_cast<size_t>(job.offsets[i + 1] - job.offsets[i]);
      Taken t;
      t.slot = i;
      if (std::string why = ReadJpegFrame(data, n, spec_.max_side, &t.frame); !why.empty()) {
        lane.bad.push_back({i, std::move(why)});
        continue;
      }
      // A JPEG that does not end in its end-of-image marker (cut short) goes to the CPU decoder,
      // which decodes what the crop needs and names where it fails (decode/jpeg_image.h).
      const bool whole = n >= 2 && data[n - 2] == 0xff && data[n - 1] == 0xd9;
      int unsupported = 0;
      if (!whole ||
          api_->JpegStreamParseHeader(lane.handle, data, n, lane.jpeg_stream) != nj::kSuccess ||
          (hardware_ && (api_->DecodeBatchedSupported(lane.handle, lane.jpeg_stream,
                                                      &unsupported) != nj::kSuccess ||
                         unsupported != 0))) {
        lane.cpu.push_back(i);
        continue;
      }
      lane.taken.push_back(t);
    }
    parse_ns_ += SteadyNowNs() - t0;
    // The host waits until the consumer's stream has let go of the output (it has, unless the
    // consumer still holds the batch that buffer last held): nothing queued to nvJPEG may wait
    // on the consumer, whose progress may wait on another lane's decode behind it.
    RF_CUDA_CHECK(cudaEventSynchronize(write_ok));
    // Groups of the records taken, each as many as the area holds.
    for (size_t g = 0; g < lane.taken.size();) {
      size_t end = g, bytes = 0;
      while (end < lane.taken.size()) {
        const size_t b = ImageBytes(lane.taken[end].frame);
        if (end > g && bytes + b > std::max(kMinAreaBytes, lane.area.bytes())) break;
        bytes += b;
        ++end;
      }
      RF_RETURN_IF_ERROR(DecodeGroup(lane, job, g, end, bytes));
      g = end;
    }
    if (!lane.cpu.empty()) RF_RETURN_IF_ERROR(DecodeOnCpu(lane, job));
    return Status::Ok();
  }

  static size_t ImageBytes(const JpegFrame& f) {
    const size_t b = size_t{f.width} * 3 * f.height;
    return (b + kAreaAlign - 1) / kAreaAlign * kAreaAlign;
  }

  // lane.taken[g, end) (`bytes` of decoded pixels) through nvJPEG and the crops' kernel; a
  // group nvJPEG fails goes to lane.cpu.
  Status DecodeGroup(Lane& lane, ImageJob& job, size_t g, size_t end, size_t bytes) {
    const uint32_t n = static_cast<uint32_t>(end - g);
    if (lane.area.bytes() < bytes) {
      RF_CUDA_CHECK(cudaStreamSynchronize(lane.stream.get()));  // the old area's last reader
      lane.area = {};
      RF_ASSIGN_OR_RETURN(lane.area, cuda::DeviceBuffer::Allocate(std::max(bytes, kMinAreaBytes),
                                                                  "the nvJPEG decode area"));
    }
    if (lane.crops.bytes() < n * sizeof(decode::GpuCrop)) {
      RF_CUDA_CHECK(cudaStreamSynchronize(lane.stream.get()));
      lane.crops = {};
      RF_ASSIGN_OR_RETURN(
          lane.crops, cuda::DeviceBuffer::Allocate(
                          std::max<size_t>(n, 256) * sizeof(decode::GpuCrop), "the nvJPEG crops"));
    }
    lane.data.clear();
    lane.lengths.clear();
    lane.images.assign(n, nj::Image{});
    lane.host_crops.assign(n, decode::GpuCrop{});
    uint8_t* area = lane.area.as<uint8_t>();
    size_t at = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const Taken& t = lane.taken[g + k];
      lane.data.push_back(job.bytes + job.offsets[t.slot]);
      lane.lengths.push_back(static_cast<size_t>(job.offsets[t.slot + 1] - job.offsets[t.slot]));
      lane.images[k].channel[0] = area + at;
      lane.images[k].pitch[0] = size_t{t.frame.width} * 3;
      decode::GpuCrop& c = lane.host_crops[k];
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
    if (lane.initialized != n) {
      code = api_->DecodeBatchedInitialize(lane.handle, lane.state, static_cast<int>(n), 1,
                                           nj::kOutputRgbInterleaved);
      lane.initialized = code == nj::kSuccess ? n : 0;
    }
    if (code == nj::kSuccess) {
      code = api_->DecodeBatched(lane.handle, lane.state, lane.data.data(), lane.lengths.data(),
                                 lane.images.data(), lane.stream.get());
    }
    nvjpeg_ns_ += SteadyNowNs() - t0;
    if (code != nj::kSuccess) {
      // nvJPEG says only that the batch failed: the CPU decoder finds which record, and why.
      lane.initialized = 0;  // nvJPEG's rule: initialize again after a failed batch
      for (size_t k = g; k < end; ++k) lane.cpu.push_back(lane.taken[k].slot);
      return Status::Ok();
    }
    RF_CUDA_CHECK(cudaMemcpyAsync(lane.crops.data(), lane.host_crops.data(),
                                  n * sizeof(decode::GpuCrop), cudaMemcpyHostToDevice,
                                  lane.stream.get()));
    RF_CUDA_CHECK(decode::ResampleCropsOnGpu(area, lane.crops.as<decode::GpuCrop>(), n, output_,
                                             job.out, lane.stream.get()));
    return Status::Ok();
  }

  // lane.cpu's records through the CPU decoder (one lane's at a time), into host staging, then
  // copied to their samples.
  Status DecodeOnCpu(Lane& lane, ImageJob& job) {
    std::sort(lane.cpu.begin(), lane.cpu.end());
    lane.fallback_bytes.clear();
    lane.fallback_offsets.assign(1, 0);
    lane.fallback_indices.clear();
    for (uint32_t slot : lane.cpu) {
      const uint8_t* data = job.bytes + job.offsets[slot];
      lane.fallback_bytes.insert(lane.fallback_bytes.end(), data,
                                 data + (job.offsets[slot + 1] - job.offsets[slot]));
      lane.fallback_offsets.push_back(static_cast<int64_t>(lane.fallback_bytes.size()));
      lane.fallback_indices.push_back(job.indices[slot]);
    }
    lane.fallback_out.resize(lane.cpu.size() * sample_bytes_);
    ImageJob sub;
    sub.bytes = lane.fallback_bytes.data();
    sub.offsets = lane.fallback_offsets.data();
    sub.n = static_cast<uint32_t>(lane.cpu.size());
    sub.indices = lane.fallback_indices.data();
    sub.epoch = job.epoch;
    sub.out = lane.fallback_out.data();
    {
      std::lock_guard<std::mutex> one(fallback_mu_);  // its Submit and Wait: one thread's
      RF_RETURN_IF_ERROR(fallback_->Submit(&sub));
      RF_RETURN_IF_ERROR(fallback_->Wait(&sub));
    }
    fallback_records_ += sub.n;
    size_t b = 0;
    for (uint32_t k = 0; k < sub.n; ++k) {
      if (b < sub.bad.size() && sub.bad[b].slot == k) {
        lane.bad.push_back({lane.cpu[k], std::move(sub.bad[b].why)});
        ++b;
        continue;
      }
      // Pageable memory: the copy has read it when the call returns.
      RF_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(job.out) + lane.cpu[k] * sample_bytes_,
                                    lane.fallback_out.data() + k * sample_bytes_, sample_bytes_,
                                    cudaMemcpyHostToDevice, lane.stream.get()));
    }
    return Status::Ok();
  }

  const ImageDecodeSpec spec_;
  const decode::GpuImageOutput output_;
  const size_t sample_bytes_;
  const int gpu_;
  const cudaStream_t consumer_;
  const nj::Api* const api_;

  bool hardware_ = false;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::unique_ptr<ImageDecoder> fallback_;
  std::mutex fallback_mu_;

  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Pending> jobs_;  // submitted, not yet waited for; oldest first
  std::vector<cuda::CudaEvent> events_;
  std::vector<cudaEvent_t> free_events_;
  bool stop_ = false;
  std::atomic<uint64_t> busy_ns_{0}, records_{0}, fallback_records_{0};
  std::atomic<uint64_t> parse_ns_{0}, nvjpeg_ns_{0};  // the lanes' host time in each step
};

}  // namespace

Result<std::unique_ptr<ImageDecoder>> MakeNvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                             void* consumer_stream,
                                                             uint32_t fallback_threads) {
  return NvjpegImageDecoder::Create(spec, gpu, static_cast<cudaStream_t>(consumer_stream),
                                    fallback_threads);
}

}  // namespace rf
