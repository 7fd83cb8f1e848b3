// NvjpegImageDecoder (pipeline/images/nvjpeg_image_decoder.h): its making and ending, Submit and
// Wait, and the loops of its driver and finish threads. What a driver does to a job (steps 1 to 5
// of the header) is in pipeline/images/nvjpeg_job_steps.cc.
#include "pipeline/images/nvjpeg_image_decoder.h"

#include <algorithm>
#include <cstdio>

#include "core/clock.h"
#include "cuda/check.h"

namespace rf {
namespace {

namespace nj = cuda::nvjpeg;

// The rates the automatic share assumes (H100, 500 x 375 photographs at quality 90, 224 x 224
// random resized crops; 2026-11-27): one CPU thread's decode and crop, and the hardware decoder
// driven by one thread.
constexpr double kCpuImagesPerSecond = 400;
constexpr double kHardwareImagesPerSecond = 24000;

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
  o.channels = s.channels;
  o.normalize = s.normalize;
  for (uint32_t c = 0; c < s.channels; ++c) {
    o.mean[c] = s.mean[c];
    o.stddev[c] = s.stddev[c];
  }
  return o;
}

}  // namespace

Result<std::unique_ptr<ImageDecoder>> NvjpegImageDecoder::Create(const ImageDecodeSpec& spec,
                                                                 int gpu, cudaStream_t consumer,
                                                                 uint32_t threads,
                                                                 double cpu_share) {
  RF_ASSIGN_OR_RETURN(const nj::Api* api, nj::Library());
  std::unique_ptr<NvjpegImageDecoder> d(new NvjpegImageDecoder(spec, gpu, consumer, api));
  RF_RETURN_IF_ERROR(d->Open(threads, cpu_share));
  for (auto& driver : d->drivers_)
    driver->thread = std::thread([p = d.get(), r = driver.get()] { p->RunDriver(*r); });
  d->finish_thread_ = std::thread([p = d.get()] { p->RunFinish(); });
  return std::unique_ptr<ImageDecoder>(std::move(d));
}

NvjpegImageDecoder::~NvjpegImageDecoder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  for (auto& driver : drivers_)
    if (driver->thread.joinable()) driver->thread.join();
  if (finish_thread_.joinable()) finish_thread_.join();
  // The CPU workers may still write a job's pinned share: stopped before the jobs are freed.
  fallback_.reset();
  for (auto& driver : drivers_) {
    for (Set& set : driver->sets) {
      if (set.stream) (void)cudaStreamSynchronize(set.stream.get());
      if (set.state != nullptr) api_->JpegStateDestroy(set.state);
    }
    if (driver->jpeg_stream != nullptr) api_->JpegStreamDestroy(driver->jpeg_stream);
  }
  if (copy_stream_) (void)cudaStreamSynchronize(copy_stream_.get());
  if (handle_ != nullptr) api_->Destroy(handle_);
}

Status NvjpegImageDecoder::Submit(ImageJob* job) {
  if (job->n == 0) return Status::InvalidArgument("an image job of 0 records");
  job->next = job->done = 0;
  job->bad.clear();
  Pending* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      RF_ASSIGN_OR_RETURN(std::unique_ptr<Pending> made, MakePending());
      free_.push_back(made.get());
      pendings_.push_back(std::move(made));
    }
    p = free_.back();
    free_.pop_back();
  }
  p->job = job;
  p->submitted_ns = SteadyNowNs();
  p->status = Status::Ok();
  p->driven = p->finished = false;
  p->copies = p->late_copies = false;
  for (bool& on : p->decoded_on) on = false;
  p->bad.clear();
  RF_CUDA_CHECK(cudaEventRecord(p->write_ok.get(), consumer_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    to_decode_.push_back(p);
    to_finish_.push_back(p);
    jobs_.push_back(p);
  }
  work_.notify_all();
  return Status::Ok();
}

Status NvjpegImageDecoder::Wait(ImageJob* job) {
  std::unique_lock<std::mutex> lock(mu_);
  if (jobs_.empty() || jobs_.front()->job != job)
    return Status::InvalidArgument("nvJPEG decoder: Wait for a job not the oldest submitted");
  Pending* p = jobs_.front();
  const uint64_t t0 = SteadyNowNs();
  done_.wait(lock, [&] { return p->finished; });
  jobs_.pop_front();
  lock.unlock();
  // The wait tells the auto share something only for a job submitted before the consumer's
  // last batch came: a job submitted just now (the first ones, or after a new epoch's start)
  // had no time to be decoded.
  const uint64_t t1 = SteadyNowNs();
  // Which decoder came last: the CPU threads where they finished the job's share after its
  // driver was done with the rest.
  if (adaptive_ && p->submitted_ns < last_wait_end_ns_)
    adaptive_->Waited(t1 - t0, p->share.n > 0 && p->share.done_ns > p->driven_ns);
  last_wait_end_ns_ = t1;
  job->bad = std::move(p->bad);
  std::sort(job->bad.begin(), job->bad.end(),
            [](const BadRecord& a, const BadRecord& b) { return a.slot < b.slot; });
  Status s = p->status;
  for (int k = 0; k < kSets && s.ok(); ++k)
    if (p->decoded_on[k]) s = WaitOn(p->decoded[k].get());
  if (s.ok() && p->copies) s = WaitOn(p->copied.get());
  lock.lock();
  // Waited on by the consumer's stream (or never to be): its events free to record again; its
  // pinned share is reused once its `copied` event has passed (its next driver waits).
  free_.push_back(p);
  return s;
}

std::string NvjpegImageDecoder::Describe() const {
  char share[160];
  if (adaptive_) {
    const uint64_t all = records_.load();
    std::snprintf(share, sizeof share,
                  "a share of each batch as the CPU threads keep up (from %.3f to 1; now %.3f, "
                  "%.3f of the records so far)",
                  adaptive_->floor(), adaptive_->share(),
                  all == 0 ? 0.0 : static_cast<double>(share_records_.load()) / all);
  } else {
    std::snprintf(share, sizeof share, "a share of %.3f of each batch", cpu_share_);
  }
  const size_t n = drivers_.size();
  return std::string("jpeg decode by nvJPEG (") + (hardware_ ? "hardware decoder" : "CUDA") +
         ") on GPU " + std::to_string(gpu_) + " from " +
         (n == 1 ? std::string("one thread") : std::to_string(n) + " threads") + ", " + share +
         " and what nvJPEG does not take on the CPU (" + fallback_->Describe() +
         "): " + std::to_string(share_records_.load()) + " records so far in the share, " +
         std::to_string(late_records_.load()) + " on the fallback" + HostTimes();
}

std::string NvjpegImageDecoder::HostTimes() const {
  const uint64_t n = nvjpeg_records_.load();
  if (n == 0) return "";
  char text[224];
  std::snprintf(text, sizeof text,
                ", %s busy %.3f s (%.3f s of it waiting for the GPU), a record to nvJPEG: %.1f "
                "us reading headers, %.1f us in nvJPEG's decode calls",
                drivers_.size() == 1 ? "the driver" : "the drivers", driver_busy_ns_.load() * 1e-9,
                gpu_wait_ns_.load() * 1e-9, parse_ns_.load() * 1e-3 / n,
                nvjpeg_ns_.load() * 1e-3 / n);
  return text;
}

double NvjpegImageDecoder::AutoCpuShare(uint32_t cpu, uint32_t drivers) {
  const double c = cpu * kCpuImagesPerSecond;
  return c / (c + drivers * kHardwareImagesPerSecond);
}

NvjpegImageDecoder::NvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu, cudaStream_t consumer,
                                       const nj::Api* api)
    : spec_(spec),
      output_(OutputOf(spec)),
      sample_bytes_(spec.OutputSampleBytes()),
      gpu_(gpu),
      consumer_(consumer),
      api_(api) {}

Status NvjpegImageDecoder::Open(uint32_t threads, double cpu_share) {
  RF_CUDA_CHECK(cudaSetDevice(gpu_));
  // The hardware decoder where the GPU has one (A100, H100), else nvJPEG's CUDA decode.
  hardware_ = api_->CreateEx(nj::kBackendHardware, nullptr, nullptr, 0, &handle_) == nj::kSuccess;
  nj::Code c = nj::kSuccess;
  if (!hardware_) {
    handle_ = nullptr;
    c = api_->CreateEx(nj::kBackendDefault, nullptr, nullptr, 0, &handle_);
  }
  const uint32_t drivers = DriversFor(threads);
  for (uint32_t i = 0; i < drivers; ++i) drivers_.push_back(std::make_unique<Driver>());
  for (auto& driver : drivers_) {
    for (Set& set : driver->sets)
      if (c == nj::kSuccess) c = api_->JpegStateCreate(handle_, &set.state);
    if (c == nj::kSuccess) c = api_->JpegStreamCreate(handle_, &driver->jpeg_stream);
  }
  if (c != nj::kSuccess)
    return Status::Unsupported("nvJPEG (" + api_->path + "): " + nj::CodeName(c));
  for (auto& driver : drivers_) {
    for (Set& set : driver->sets) {
      // At the highest priority: the crops' kernel frees the decode area the set's next
      // DecodeBatched waits for, and should not queue behind the model's kernels.
      RF_ASSIGN_OR_RETURN(set.stream, cuda::CreateStream(true));
      RF_ASSIGN_OR_RETURN(set.area_free, cuda::CreateEvent(false));
    }
  }
  RF_ASSIGN_OR_RETURN(copy_stream_, cuda::CreateStream());
  // Each driver takes a core of the `threads`.
  const uint32_t cpu = threads > drivers + 1 ? threads - drivers : 1;
  RF_ASSIGN_OR_RETURN(fallback_, MakeCpuImageDecoder(spec_, cpu));
  if (cpu_share < 0) {
    adaptive_ = std::make_unique<AdaptiveCpuShare>(AutoCpuShare(cpu, drivers));
  } else {
    cpu_share_ = std::min(cpu_share, 1.0);
  }
  return Status::Ok();
}

Result<std::unique_ptr<NvjpegImageDecoder::Pending>> NvjpegImageDecoder::MakePending() {
  auto p = std::make_unique<Pending>();
  RF_ASSIGN_OR_RETURN(p->write_ok, cuda::CreateEvent(false));
  for (cuda::CudaEvent& e : p->decoded) {
    RF_ASSIGN_OR_RETURN(e, cuda::CreateEvent(false));
  }
  RF_ASSIGN_OR_RETURN(p->copied, cuda::CreateEvent(false));
  return p;
}

Status NvjpegImageDecoder::WaitOn(cudaEvent_t e) {
  const cudaError_t r = cudaStreamWaitEvent(consumer_, e, 0);
  if (r != cudaSuccess)
    return cuda::Failure(cuda::Describe(r), "cudaStreamWaitEvent", __FILE__, __LINE__);
  return Status::Ok();
}

template <typename Ready, typename Step, typename HandOn>
void NvjpegImageDecoder::Serve(std::deque<Pending*>& queue, Ready ready, Step step,
                               HandOn hand_on) {
  (void)cudaSetDevice(gpu_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || (!queue.empty() && ready(*queue.front())); });
    if (stop_) return;
    Pending* p = queue.front();
    queue.pop_front();
    lock.unlock();
    Status s = step(*p);
    lock.lock();
    if (!s.ok() && p->status.ok()) p->status = std::move(s);
    hand_on(p);
  }
}

void NvjpegImageDecoder::RunDriver(Driver& d) {
  Serve(
      to_decode_, [](const Pending&) { return true; },
      [this, &d](Pending& p) {
        const uint64_t t0 = SteadyNowNs();
        Status s = Decode(d, p);
        p.driven_ns = SteadyNowNs();
        driver_busy_ns_ += p.driven_ns - t0;
        records_ += p.job->n;
        return s;
      },
      [this](Pending* p) {
        p->driven = true;
        work_.notify_all();
      });
}

void NvjpegImageDecoder::RunFinish() {
  Serve(
      to_finish_, [](const Pending& p) { return p.driven; },
      [this](Pending& p) {
        Status s = p.share.n == 0 ? Status::Ok() : FinishShare(p);
        if (s.ok() && (p.share.n > 0 || p.late_copies)) {
          const cudaError_t e = cudaEventRecord(p.copied.get(), copy_stream_.get());
          if (e != cudaSuccess)
            return cuda::Failure(cuda::Describe(e), "cudaEventRecord", __FILE__, __LINE__);
          p.copies = true;
        }
        return s;
      },
      [this](Pending* p) {
        p->finished = true;
        done_.notify_all();
      });
}

Result<std::unique_ptr<ImageDecoder>> MakeNvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                             void* consumer_stream,
                                                             uint32_t threads, double cpu_share) {
  return NvjpegImageDecoder::Create(spec, gpu, static_cast<cudaStream_t>(consumer_stream), threads,
                                    cpu_share);
}

}  // namespace rf
