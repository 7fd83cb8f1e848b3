// NvjpegImageDecoder (pipeline/images/image_decoder.h): JPEG records decoded on the GPU by nvJPEG's
// batched decode (cuda/nvjpeg_library.h: loaded at run time), then cropped, resized, flipped,
// normalized and written in the output's dtype and layout by one kernel (decode/
// gpu_image_resample.h), into the loader's output buffer in GPU memory; a share of each batch
// decoded on CPU threads at the same time.
//
// A job (Submit returns at once) goes through two threads:
//   a driver thread (kDrivers of them where the threads allow: each takes the oldest job not yet
//   taken, so two jobs are in nvJPEG's calls at once; each driver has its own decode states,
//   sets and scratch, the nvJPEG handle is shared, as nvJPEG allows)
//     1. the CPU share: the k = round(n x share) records of the job whose key (Philox block
//        kShareBlock of (seed, epoch, sample index)) is smallest are handed to the CPU decoder
//        (pipeline/images/cpu_image_decoder.cc: libjpeg-turbo on worker threads, at a DCT scale
//        where the crop allows), into pinned host memory. Which records go is a function of the
//        share, the seed, the epoch and the indices alone: at a fixed share (cpu_share from 0 to
//        1) a run repeats bit for bit. The share is the job's at the time its driver takes it:
//        the fixed one, or auto's (pipeline/images/cpu_share.h), which follows the consumer's
//        waits;
//     2. the others: each record's frame header read on the host (decode/jpeg_image.h's
//        ReadJpegFrame: no start-of-image, no frame, a side over max_side: a bad record, before
//        any allocation), then nvJPEG's parse of its header and whether its batched decode
//        takes it (the hardware decoder takes baseline JPEGs of one scan; not 4:1:0 or 4:1:1,
//        not progressive); a record that does not end in an end-of-image marker is not given to
//        nvJPEG;
//     3. those it takes, in groups whose decoded pixels fit a decode area (at least 160 MiB, or
//        the largest image), decoded whole as interleaved RGB into the area (only the records'
//        JPEG bytes cross PCIe), then the crops' kernel from the area into the output. Groups
//        alternate between two sets (an nvJPEG decode state, a stream, a decode area each), so
//        that nvJPEG takes the next group while the crops' kernel still reads this one's area;
//     4. those it does not take, or that a group's decode failed on, decoded by the CPU decoder
//        there and then (rare), which names a bad record's fault, copied to their samples;
//   the finish thread, in submission order, once a job's driver is done with it
//     5. waits for the CPU share (step 1), then copies its samples into the output on the copy
//        stream.
// The drivers and the CPU share are what let the loader pass the hardware decoder's rate from
// one thread: a driver spends its time in nvJPEG's calls (about 40 us a 500 x 375 image on an
// H100, 2026-11-27), and the CPU threads would otherwise idle. auto (a negative cpu_share):
// AdaptiveCpuShare (pipeline/images/cpu_share.h), from the share at which the two decoders finish a
// batch together (AutoCpuShare: kCpuImagesPerSecond a thread against kHardwareImagesPerSecond a
// driver) up to 1 while the consumer finds its batches ready, since nvJPEG's per-image work slows a
// model on the same GPU; Wait tells it how long the consumer waited, and whether the CPU threads
// finished their part of that job after its driver (the CPU decoder's done_ns against the job's
// driven_ns).
//
// The crops are the CPU decoder's (CropFor: keyed by seed, epoch and sample index); the GPU
// resamples the full-size decode where the CPU may decode at a DCT scale, so the two agree to
// within the decoders' rounding (the measured tolerance: tests/pipeline/
// cuda_loader_images_test.cc).
//
// Streams and the host waits nvJPEG needs: nvJPEG's hardware decoder writes the decode area when
// DecodeBatched is called, not when its stream reaches the call (seen on H100s with nvJPEG 12.3
// to 13.2: meta-pytorch/torchcodec#1634). So a driver waits on the host, before each
// DecodeBatched, for the event recorded after its set's area's last reader (that set's previous
// crops' kernel), and before the first write of a job's output, for the job's write_ok event
// (recorded on the consumer's stream at Submit: the consumer has let go of that buffer). In the
// steady state both have long passed. Wait makes the consumer's stream wait for the job's events
// on the sets' streams and the copy stream, without blocking the host.
//
// Memory (GPU): two decode areas and crops' tables a driver, grown to the largest group met and
// reused; nvJPEG's own buffers. Host: a job's CPU share in pinned memory (k samples), reused
// from job to job once its copies are done; the late fallback's staging, grown likewise.
//
// Thread safety: Submit and Wait from one thread (the loader's). The job queue is under one lock;
// a job's fields are written by its driver, then the finish thread, then read by Wait, each
// handing it on under that lock. The CPU decoder takes Submit and Wait from every driver and the
// finish thread (pipeline/images/cpu_image_decoder.cc: each job waited for by itself).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/augment.h"
#include "core/clock.h"
#include "core/resized_crop.h"
#include "cuda/check.h"
#include "cuda/handles.h"
#include "cuda/nvjpeg_library.h"
#include "decode/gpu_image_resample.h"
#include "pipeline/images/cpu_share.h"
#include "pipeline/images/image_decoder.h"

namespace rf {
namespace {

namespace nj = cuda::nvjpeg;

// The decode area's least size: a batch of 256 ImageNet-sized images (500 x 375 RGB) is 144 MB.
constexpr size_t kMinAreaBytes = size_t{160} << 20;
constexpr size_t kAreaAlign = 256;
// The Philox block of a sample's draws that picks the CPU share (core/augment.h uses blocks 0
// to 10, core/resized_crop.h 16 to 26).
constexpr uint32_t kShareBlock = 27;
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
                                                      cudaStream_t consumer, uint32_t threads,
                                                      double cpu_share) {
    RF_ASSIGN_OR_RETURN(const nj::Api* api, nj::Library());
    std::unique_ptr<NvjpegImageDecoder> d(new NvjpegImageDecoder(spec, gpu, consumer, api));
    RF_RETURN_IF_ERROR(d->Open(threads, cpu_share));
    for (auto& driver : d->drivers_)
      driver->thread = std::thread([p = d.get(), r = driver.get()] { p->RunDriver(*r); });
    d->finish_thread_ = std::thread([p = d.get()] { p->RunFinish(); });
    return std::unique_ptr<ImageDecoder>(std::move(d));
  }

  ~NvjpegImageDecoder() override {
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

  Status Submit(ImageJob* job) override {
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

  Status Wait(ImageJob* job) override {
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

  const ImageDecodeSpec& spec() const override { return spec_; }
  int output_gpu() const override { return gpu_; }
  // The drivers and the CPU decoder's threads.
  uint32_t threads() const override {
    return static_cast<uint32_t>(drivers_.size()) + fallback_->threads();
  }
  double busy_seconds() const override {
    return driver_busy_ns_.load() * 1e-9 + fallback_->busy_seconds();
  }
  uint64_t records() const override { return records_.load(); }
  std::string Describe() const override {
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

  // Where the drivers' time went, a record they gave nvJPEG: ", the drivers busy 1.23 s (0.012 s of
  // it waiting for the GPU), a record: 12.3 us reading headers, 45.6 us in nvJPEG's decode
  // calls" (empty before any; summed over the drivers). The waits for the GPU: for the consumer
  // to let go of an output buffer, for a decode area's last reader, for a pinned share's last
  // copy.
  std::string HostTimes() const {
    const uint64_t n = nvjpeg_records_.load();
    if (n == 0) return "";
    char text[224];
    std::snprintf(text, sizeof text,
                  ", %s busy %.3f s (%.3f s of it waiting for the GPU), a record to nvJPEG: %.1f "
                  "us reading headers, %.1f us in nvJPEG's decode calls",
                  drivers_.size() == 1 ? "the driver" : "the drivers",
                  driver_busy_ns_.load() * 1e-9, gpu_wait_ns_.load() * 1e-9,
                  parse_ns_.load() * 1e-3 / n, nvjpeg_ns_.load() * 1e-3 / n);
    return text;
  }

  // The drivers where `threads` are given: two where the threads leave the CPU decoder at least
  // two (a driver takes a core), else one.
  static uint32_t DriversFor(uint32_t threads) { return threads >= 4 ? kDrivers : 1; }

  // The share of each batch the CPU threads decode where none is given: what `cpu` threads at
  // kCpuImagesPerSecond add to `drivers` drivers at kHardwareImagesPerSecond each.
  static double AutoCpuShare(uint32_t cpu, uint32_t drivers) {
    const double c = cpu * kCpuImagesPerSecond;
    return c / (c + drivers * kHardwareImagesPerSecond);
  }

 private:
  // What one batched decode uses, in turn with the driver's other set, so that nvJPEG can take the
  // next group while the crops' kernel reads this one's area: its decode state, the batch size it
  // was initialized for, its stream, its decode area and crops' table (grown to the largest group
  // met), and the event after the area's last reader. With one set, nvJPEG's calls took 63 us of
  // the decode thread a record, with two 40 (H100, 100,000 photographs of 500 x 375, auto share,
  // 2026-11-27).
  static constexpr int kSets = 2;
  // The drivers at most: one job in nvJPEG's calls while another is.
  static constexpr uint32_t kDrivers = 2;
  struct Set {
    nj::State state = nullptr;
    uint32_t initialized = 0;
    cuda::CudaStream stream;
    cuda::CudaEvent area_free;
    cuda::DeviceBuffer area, crops;
  };
  // Some of a job's records gathered for the CPU decoder as a job of their own: their bytes back to
  // back, offsets and keys, reused from job to job.
  struct Subset {
    std::vector<uint8_t> bytes;
    std::vector<int64_t> offsets;
    std::vector<uint64_t> indices;

    // `job`'s records at `slots` (ascending) as a job of their own, to be decoded into `out`
    // (room for slots.size() samples). It points into this subset: valid until the next Gather.
    ImageJob Gather(const ImageJob& job, const std::vector<uint32_t>& slots, void* out) {
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
  };
  // A job submitted and not yet waited for, and what it reuses from job to job.
  struct Pending {
    ImageJob* job = nullptr;
    uint64_t submitted_ns = 0;       // when Submit took it
    cuda::CudaEvent write_ok;        // on the consumer's stream, at Submit
    cuda::CudaEvent decoded[kSets];  // on each of its driver's sets' streams, after its work there
    bool decoded_on[kSets] = {};     // recorded for this job
    cuda::CudaEvent copied;          // on the copy stream, after the job's copies from host
    bool late_copies = false;        // its driver queued copies there
    bool copies = false;             // `copied` recorded for this job
    bool driven = false;             // its driver is done with it
    uint64_t driven_ns = 0;          // when (SteadyNowNs)
    bool finished = false;           // the finish thread is done with it
    Status status;                   // the first failure
    std::vector<BadRecord> bad;
    // The CPU share: its records' slots (ascending), their bytes and keys, its job and its output
    // (pinned).
    std::vector<uint32_t> share_slots;
    Subset share_records;
    ImageJob share;
    cuda::PinnedBuffer share_out;
  };
  // A record nvJPEG takes: its slot and size.
  struct Taken {
    uint32_t slot = 0;
    JpegFrame frame;
  };
  // A driver: its thread, its sets and header parser, and the scratch of the job it drives (its
  // thread's alone once it runs).
  struct Driver {
    Set sets[kSets];
    uint32_t next_set = 0;
    nj::Stream jpeg_stream = nullptr;  // the headers' parse
    bool write_ok_waited = false;      // for the job it drives
    std::vector<Taken> taken;
    std::vector<uint32_t> late;
    std::vector<std::pair<uint64_t, uint32_t>> keys;
    std::vector<const unsigned char*> data;
    std::vector<size_t> lengths;
    std::vector<nj::Image> images;
    std::vector<decode::GpuCrop> host_crops;
    Subset late_records;
    std::vector<uint8_t> late_out;
    std::thread thread;
  };

  NvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu, cudaStream_t consumer,
                     const nj::Api* api)
      : spec_(spec),
        output_(OutputOf(spec)),
        sample_bytes_(spec.OutputSampleBytes()),
        gpu_(gpu),
        consumer_(consumer),
        api_(api) {}

  Status Open(uint32_t threads, double cpu_share) {
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

  static Result<std::unique_ptr<Pending>> MakePending() {
    auto p = std::make_unique<Pending>();
    RF_ASSIGN_OR_RETURN(p->write_ok, cuda::CreateEvent(false));
    for (cuda::CudaEvent& e : p->decoded) {
      RF_ASSIGN_OR_RETURN(e, cuda::CreateEvent(false));
    }
    RF_ASSIGN_OR_RETURN(p->copied, cuda::CreateEvent(false));
    return p;
  }

  Status WaitOn(cudaEvent_t e) {
    const cudaError_t r = cudaStreamWaitEvent(consumer_, e, 0);
    if (r != cudaSuccess)
      return cuda::Failure(cuda::Describe(r), "cudaStreamWaitEvent", __FILE__, __LINE__);
    return Status::Ok();
  }

  // The loop of the drivers and the finish thread: takes `queue`'s front job once `ready(job)`,
  // runs `step(job)` on it without the lock, keeps its failure, then `hand_on(job)` under the
  // lock.
  template <typename Ready, typename Step, typename HandOn>
  void Serve(std::deque<Pending*>& queue, Ready ready, Step step, HandOn hand_on) {
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

  void RunDriver(Driver& d) {
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

  // In submission order, each job once its driver is done with it.
  void RunFinish() {
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

  // The job's records through the steps above, up to the CPU share's submission (the finish
  // thread does the rest).
  Status Decode(Driver& d, Pending& p) {
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
      if (std::string why = ReadJpegFrame(data, n, spec_.max_side, &t.frame); !why.empty()) {
        p.bad.push_back({i, std::move(why)});
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

  // The job's output may be written: the consumer's stream has passed write_ok (once a job).
  Status WaitWriteOk(Driver& d, Pending& p) {
    if (!d.write_ok_waited) RF_RETURN_IF_ERROR(HostWait(p.write_ok.get()));
    d.write_ok_waited = true;
    return Status::Ok();
  }

  // A driver waits on the host for `e` (the GPU's progress), and counts the time.
  Status HostWait(cudaEvent_t e) {
    const uint64_t t0 = SteadyNowNs();
    const cudaError_t r = cudaEventSynchronize(e);
    gpu_wait_ns_ += SteadyNowNs() - t0;
    if (r != cudaSuccess)
      return cuda::Failure(cuda::Describe(r), "cudaEventSynchronize", __FILE__, __LINE__);
    return Status::Ok();
  }

  // Step 1: the CPU share chosen, its bytes gathered and submitted to the CPU decoder.
  Status SubmitShare(Driver& d, Pending& p) {
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

  // Step 5 (the finish thread): the CPU share decoded, its samples copied into the output (runs
  // of consecutive slots in one copy each) on the copy stream.
  Status FinishShare(Pending& p) {
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
      RF_CUDA_CHECK(cudaMemcpyAsync(out + p.share_slots[k] * sample_bytes_,
                                    from + k * sample_bytes_, (end - k) * sample_bytes_,
                                    cudaMemcpyHostToDevice, copy_stream_.get()));
      k = end;
    }
    return Status::Ok();
  }

  static size_t ImageBytes(const JpegFrame& f) {
    const size_t b = size_t{f.width} * 3 * f.height;
    return (b + kAreaAlign - 1) / kAreaAlign * kAreaAlign;
  }

  // d.taken[g, end) of `p` (`bytes` of decoded pixels) through nvJPEG and the crops' kernel; a
  // group nvJPEG fails goes to d.late.
  Status DecodeGroup(Driver& d, Pending& p, size_t g, size_t end, size_t bytes) {
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
          set.crops, cuda::DeviceBuffer::Allocate(
                         std::max<size_t>(n, 256) * sizeof(decode::GpuCrop), "the nvJPEG crops"));
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
      code = api_->DecodeBatched(handle_, set.state, d.data.data(), d.lengths.data(),
                                 d.images.data(), set.stream.get());
    }
    nvjpeg_ns_ += SteadyNowNs() - t0;
    if (code != nj::kSuccess) {
      // nvJPEG says only that the batch failed: the CPU decoder finds which record, and why.
      set.initialized = 0;  // nvJPEG's rule: initialize again after a failed batch
      for (size_t k = g; k < end; ++k) d.late.push_back(d.taken[k].slot);
      return Status::Ok();
    }
    RF_RETURN_IF_ERROR(WaitWriteOk(d, p));
    RF_CUDA_CHECK(cudaMemcpyAsync(set.crops.data(), d.host_crops.data(),
                                  n * sizeof(decode::GpuCrop), cudaMemcpyHostToDevice,
                                  set.stream.get()));
    RF_CUDA_CHECK(decode::ResampleCropsOnGpu(area, set.crops.as<decode::GpuCrop>(), n, output_,
                                             job.out, set.stream.get()));
    RF_CUDA_CHECK(cudaEventRecord(set.area_free.get(), set.stream.get()));
    RF_CUDA_CHECK(cudaEventRecord(p.decoded[which].get(), set.stream.get()));
    p.decoded_on[which] = true;
    return Status::Ok();
  }

  // Step 4: d.late's records through the CPU decoder, there and then, into host staging, copied
  // to their samples.
  Status DecodeLate(Driver& d, Pending& p) {
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

  const ImageDecodeSpec spec_;
  const decode::GpuImageOutput output_;
  const size_t sample_bytes_;
  const int gpu_;
  const cudaStream_t consumer_;
  const nj::Api* const api_;

  // nvJPEG's instance (shared by the drivers) and the drivers.
  bool hardware_ = false;
  double cpu_share_ = 0;                        // a fixed share
  std::unique_ptr<AdaptiveCpuShare> adaptive_;  // else this one's (set at Open)
  uint64_t last_wait_end_ns_ = 0;               // when Wait last returned (the loader's thread)
  nj::Handle handle_ = nullptr;
  std::vector<std::unique_ptr<Driver>> drivers_;
  cuda::CudaStream copy_stream_;  // the copies from host memory (the CPU's samples)

  std::mutex mu_;
  std::condition_variable work_, done_;
  std::vector<std::unique_ptr<Pending>> pendings_;  // every job's bookkeeping, made as needed
  std::vector<Pending*> free_;                      // not in flight
  std::deque<Pending*> jobs_;                       // submitted, not yet waited for; oldest first
  // The drivers' queue (jobs not yet taken) and the finish thread's (jobs not yet finished, in
  // submission order).
  std::deque<Pending*> to_decode_, to_finish_;
  bool stop_ = false;
  // Declared after the jobs: destroyed (its workers stopped) before them; the destructor resets
  // it first anyway.
  std::unique_ptr<ImageDecoder> fallback_;
  std::thread finish_thread_;
  std::atomic<uint64_t> driver_busy_ns_{0}, records_{0}, share_records_{0}, late_records_{0};
  std::atomic<uint64_t> parse_ns_{0}, nvjpeg_ns_{0}, nvjpeg_records_{0}, gpu_wait_ns_{0};
};

}  // namespace

Result<std::unique_ptr<ImageDecoder>> MakeNvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                             void* consumer_stream,
                                                             uint32_t threads, double cpu_share) {
  return NvjpegImageDecoder::Create(spec, gpu, static_cast<cudaStream_t>(consumer_stream), threads,
                                    cpu_share);
}

}  // namespace rf
