// NvjpegImageDecoder (pipeline/image_decoder.h): JPEG records decoded on the GPU by nvJPEG's
// batched decode (cuda/nvjpeg_library.h: loaded at run time), then cropped, resized, flipped,
// normalized and written in the output's dtype and layout by one kernel (decode/
// gpu_image_resample.h), into the loader's output buffer in GPU memory.
//
// A job, on the decoder's own thread (Submit returns at once):
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
// Streams: the decoder's work runs on its own stream. Submit records an event on the consumer's
// stream (the loader's) and the decoder's stream waits for it before it writes the job's output
// (whatever the consumer's stream had queued on that buffer first); Wait makes the consumer's
// stream wait for the job's last work. Neither blocks the host on the GPU.
//
// Memory (GPU): the decode area and the crops' table, grown to the largest group met and reused;
// nvJPEG's own buffers. Host: the fallback's staging, grown likewise.
//
// Thread safety: Submit and Wait from one thread (the loader's); the decoder's thread does the
// rest; the job list is under one lock.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
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
    d->thread_ = std::thread([p = d.get()] { p->Run(); });
    return std::unique_ptr<ImageDecoder>(std::move(d));
  }

  ~NvjpegImageDecoder() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (stream_) (void)cudaStreamSynchronize(stream_.get());
    if (jpeg_stream_ != nullptr) api_->JpegStreamDestroy(jpeg_stream_);
    if (state_ != nullptr) api_->JpegStateDestroy(state_);
    if (handle_ != nullptr) api_->Destroy(handle_);
  }

  Status Submit(ImageJob* job) override {
    if (job->n == 0) return Status::InvalidArgument("an image job of 0 records");
    job->next = job->done = 0;
    job->bad.clear();
    Pending p;
    p.job = job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      RF_RETURN_IF_ERROR(TakeEvent(&p.write_ok));
      RF_RETURN_IF_ERROR(TakeEvent(&p.done));
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
    done_.wait(lock, [&] { return jobs_.front().finished; });
    Pending p = jobs_.front();
    jobs_.pop_front();
    free_events_.push_back(p.write_ok);
    lock.unlock();
    std::sort(job->bad.begin(), job->bad.end(),
              [](const BadRecord& a, const BadRecord& b) { return a.slot < b.slot; });
    Status s = p.status;
    if (s.ok()) {
      const cudaError_t e = cudaStreamWaitEvent(consumer_, p.done, 0);
      if (e != cudaSuccess)
        s = cuda::Failure(cuda::Describe(e), "cudaStreamWaitEvent", __FILE__, __LINE__);
    }
    lock.lock();
    free_events_.push_back(p.done);  // waited on by the consumer's stream: free to record again
    return s;
  }

  const ImageDecodeSpec& spec() const override { return spec_; }
  int output_gpu() const override { return gpu_; }
  uint32_t threads() const override { return 1; }
  double busy_seconds() const override { return busy_ns_.load() * 1e-9; }
  uint64_t records() const override { return records_.load(); }
  std::string Describe() const override {
    return std::string("jpeg decode by nvJPEG (") + (hardware_ ? "hardware decoder" : "CUDA") +
           ") on GPU " + std::to_string(gpu_) + ", " + std::to_string(fallback_records_.load()) +
           " records so far on the CPU fallback (" + fallback_->Describe() + ")";
  }

 private:
  // A job submitted and not yet waited for.
  struct Pending {
    ImageJob* job = nullptr;
    cudaEvent_t write_ok = nullptr;  // on the consumer's stream, at Submit
    cudaEvent_t done = nullptr;      // on the decoder's stream, after the job's last work
    bool started = false, finished = false;
    Status status;
  };
  // A record nvJPEG takes: its slot and size.
  struct Taken {
    uint32_t slot = 0;
    JpegFrame frame;
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
    // The hardware decoder where the GPU has one (A100, H100), else nvJPEG's CUDA decode.
    hardware_ = api_->CreateEx(nj::kBackendHardware, nullptr, nullptr, 0, &handle_) == nj::kSuccess;
    if (!hardware_) {
      handle_ = nullptr;
      const nj::Code c = api_->CreateEx(nj::kBackendDefault, nullptr, nullptr, 0, &handle_);
      if (c != nj::kSuccess)
        return Status::Unsupported("nvJPEG (" + api_->path +
                                   "): nvjpegCreateEx: " + nj::CodeName(c));
    }
    nj::Code c = api_->JpegStateCreate(handle_, &state_);
    if (c == nj::kSuccess) c = api_->JpegStreamCreate(handle_, &jpeg_stream_);
    if (c != nj::kSuccess)
      return Status::Unsupported("nvJPEG (" + api_->path + "): state: " + nj::CodeName(c));
    RF_ASSIGN_OR_RETURN(stream_, cuda::CreateStream());
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

  void Run() {
    (void)cudaSetDevice(gpu_);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Pending* p = nullptr;
      work_.wait(lock, [&] {
        if (stop_) return true;
        for (Pending& q : jobs_) {
          if (!q.started) {
            p = &q;
            return true;
          }
        }
        return false;
      });
      if (stop_) return;
      p->started = true;
      ImageJob* job = p->job;
      const cudaEvent_t write_ok = p->write_ok, done = p->done;
      lock.unlock();  // jobs_ is a deque: p stays valid while only its front is popped
      const uint64_t t0 = SteadyNowNs();
      Status s = Decode(*job, write_ok);
      if (s.ok()) {
        const cudaError_t e = cudaEventRecord(done, stream_.get());
        if (e != cudaSuccess)
          s = cuda::Failure(cuda::Describe(e), "cudaEventRecord", __FILE__, __LINE__);
      }
      busy_ns_ += SteadyNowNs() - t0;
      records_ += job->n;
      lock.lock();
      p->status = std::move(s);
      p->finished = true;
      done_.notify_all();
    }
  }

  Status Decode(ImageJob& job, cudaEvent_t write_ok) {
    taken_.clear();
    cpu_.clear();
    for (uint32_t i = 0; i < job.n; ++i) {
      const uint8_t* data = job.bytes + job.offsets[i];
      const size_t n = static_cast<size_t>(job.offsets[i + 1] - job.offsets[i]);
      Taken t;
      t.slot = i;
      if (std::string why = ReadJpegFrame(data, n, spec_.max_side, &t.frame); !why.empty()) {
        job.bad.push_back({i, std::move(why)});
        continue;
      }
      // A JPEG that does not end in its end-of-image marker (cut short) goes to the CPU decoder,
      // which decodes what the crop needs and names where it fails (decode/jpeg_image.h).
      const bool whole = n >= 2 && data[n - 2] == 0xff && data[n - 1] == 0xd9;
      int unsupported = 0;
      if (!whole || api_->JpegStreamParseHeader(handle_, data, n, jpeg_stream_) != nj::kSuccess ||
          (hardware_ &&
           (api_->DecodeBatchedSupported(handle_, jpeg_stream_, &unsupported) != nj::kSuccess ||
            unsupported != 0))) {
        cpu_.push_back(i);
        continue;
      }
      taken_.push_back(t);
    }
    RF_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), write_ok, 0));
    // Groups of the records taken, each as many as the area holds.
    for (size_t g = 0; g < taken_.size();) {
      size_t end = g, bytes = 0;
      while (end < taken_.size()) {
        const size_t b = ImageBytes(taken_[end].frame);
        if (end > g && bytes + b > std::max(kMinAreaBytes, area_.bytes())) break;
        bytes += b;
        ++end;
      }
      RF_RETURN_IF_ERROR(DecodeGroup(job, g, end, bytes));
      g = end;
    }
    if (!cpu_.empty()) RF_RETURN_IF_ERROR(DecodeOnCpu(job));
    return Status::Ok();
  }

  static size_t ImageBytes(const JpegFrame& f) {
    const size_t b = size_t{f.width} * 3 * f.height;
    return (b + kAreaAlign - 1) / kAreaAlign * kAreaAlign;
  }

  // taken_[g, end) (`bytes` of decoded pixels) through nvJPEG and the crops' kernel; a group
  // nvJPEG fails goes to cpu_.
  Status DecodeGroup(ImageJob& job, size_t g, size_t end, size_t bytes) {
    const uint32_t n = static_cast<uint32_t>(end - g);
    if (area_.bytes() < bytes) {
      RF_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the old area's last reader
      area_ = {};
      RF_ASSIGN_OR_RETURN(area_, cuda::DeviceBuffer::Allocate(std::max(bytes, kMinAreaBytes),
                                                              "the nvJPEG decode area"));
    }
    if (crops_.bytes() < n * sizeof(decode::GpuCrop)) {
      RF_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      crops_ = {};
      RF_ASSIGN_OR_RETURN(
          crops_, cuda::DeviceBuffer::Allocate(std::max<size_t>(n, 256) * sizeof(decode::GpuCrop),
                                               "the nvJPEG crops"));
    }
    data_.clear();
    lengths_.clear();
    images_.assign(n, nj::Image{});
    host_crops_.assign(n, decode::GpuCrop{});
    uint8_t* area = area_.as<uint8_t>();
    size_t at = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const Taken& t = taken_[g + k];
      data_.push_back(job.bytes + job.offsets[t.slot]);
      lengths_.push_back(static_cast<size_t>(job.offsets[t.slot + 1] - job.offsets[t.slot]));
      images_[k].channel[0] = area + at;
      images_[k].pitch[0] = size_t{t.frame.width} * 3;
      decode::GpuCrop& c = host_crops_[k];
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
    nj::Code code = nj::kSuccess;
    if (initialized_ != n) {
      code = api_->DecodeBatchedInitialize(handle_, state_, static_cast<int>(n), 1,
                                           nj::kOutputRgbInterleaved);
      initialized_ = code == nj::kSuccess ? n : 0;
    }
    if (code == nj::kSuccess) {
      code = api_->DecodeBatched(handle_, state_, data_.data(), lengths_.data(), images_.data(),
                                 stream_.get());
    }
    if (code != nj::kSuccess) {
      // nvJPEG says only that the batch failed: the CPU decoder finds which record, and why.
      initialized_ = 0;  // nvJPEG's rule: initialize again after a failed batch
      ++failed_groups_;
      for (size_t k = g; k < end; ++k) cpu_.push_back(taken_[k].slot);
      return Status::Ok();
    }
    RF_CUDA_CHECK(cudaMemcpyAsync(crops_.data(), host_crops_.data(), n * sizeof(decode::GpuCrop),
                                  cudaMemcpyHostToDevice, stream_.get()));
    RF_CUDA_CHECK(decode::ResampleCropsOnGpu(area, crops_.as<decode::GpuCrop>(), n, output_,
                                             job.out, stream_.get()));
    return Status::Ok();
  }

  // cpu_'s records through the CPU decoder, into host staging, then copied to their samples.
  Status DecodeOnCpu(ImageJob& job) {
    std::sort(cpu_.begin(), cpu_.end());
    fallback_bytes_.clear();
    fallback_offsets_.assign(1, 0);
    fallback_indices_.clear();
    for (uint32_t slot : cpu_) {
      const uint8_t* data = job.bytes + job.offsets[slot];
      fallback_bytes_.insert(fallback_bytes_.end(), data,
                             data + (job.offsets[slot + 1] - job.offsets[slot]));
      fallback_offsets_.push_back(static_cast<int64_t>(fallback_bytes_.size()));
      fallback_indices_.push_back(job.indices[slot]);
    }
    fallback_out_.resize(cpu_.size() * sample_bytes_);
    ImageJob sub;
    sub.bytes = fallback_bytes_.data();
    sub.offsets = fallback_offsets_.data();
    sub.n = static_cast<uint32_t>(cpu_.size());
    sub.indices = fallback_indices_.data();
    sub.epoch = job.epoch;
    sub.out = fallback_out_.data();
    RF_RETURN_IF_ERROR(fallback_->Submit(&sub));
    RF_RETURN_IF_ERROR(fallback_->Wait(&sub));
    fallback_records_ += sub.n;
    size_t b = 0;
    for (uint32_t k = 0; k < sub.n; ++k) {
      if (b < sub.bad.size() && sub.bad[b].slot == k) {
        job.bad.push_back({cpu_[k], std::move(sub.bad[b].why)});
        ++b;
        continue;
      }
      // Pageable memory: the copy has read it when the call returns.
      RF_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(job.out) + cpu_[k] * sample_bytes_,
                                    fallback_out_.data() + k * sample_bytes_, sample_bytes_,
                                    cudaMemcpyHostToDevice, stream_.get()));
    }
    return Status::Ok();
  }

  const ImageDecodeSpec spec_;
  const decode::GpuImageOutput output_;
  const size_t sample_bytes_;
  const int gpu_;
  const cudaStream_t consumer_;
  const nj::Api* const api_;

  // nvJPEG's and the GPU's (the decoder's thread's, after Open).
  nj::Handle handle_ = nullptr;
  nj::State state_ = nullptr;
  nj::Stream jpeg_stream_ = nullptr;
  bool hardware_ = false;
  uint32_t initialized_ = 0;  // the batch size nvJPEG's batched decode was initialized for
  cuda::CudaStream stream_;
  cuda::DeviceBuffer area_, crops_;
  std::unique_ptr<ImageDecoder> fallback_;
  // Per job (the decoder's thread).
  std::vector<Taken> taken_;
  std::vector<uint32_t> cpu_;
  std::vector<const unsigned char*> data_;
  std::vector<size_t> lengths_;
  std::vector<nj::Image> images_;
  std::vector<decode::GpuCrop> host_crops_;
  std::vector<uint8_t> fallback_bytes_, fallback_out_;
  std::vector<int64_t> fallback_offsets_;
  std::vector<uint64_t> fallback_indices_;
  uint64_t failed_groups_ = 0;

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Pending> jobs_;  // submitted, not yet waited for; oldest first
  std::vector<cuda::CudaEvent> events_;
  std::vector<cudaEvent_t> free_events_;
  bool stop_ = false;
  std::atomic<uint64_t> busy_ns_{0}, records_{0}, fallback_records_{0};
};

}  // namespace

Result<std::unique_ptr<ImageDecoder>> MakeNvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                             void* consumer_stream,
                                                             uint32_t fallback_threads) {
  return NvjpegImageDecoder::Create(spec, gpu, static_cast<cudaStream_t>(consumer_stream),
                                    fallback_threads);
}

}  // namespace rf
