// NvjpegImageDecoder (pipeline/image_decoder.h): JPEG records decoded on the GPU by nvJPEG's
// batched decode (cuda/nvjpeg_library.h: loaded at run time), then cropped, resized, flipped,
// normalized and written in the output's dtype and layout by one kernel (decode/
// gpu_image_resample.h), into the loader's output buffer in GPU memory; a share of each batch
// decoded on CPU threads at the same time.
//
// A job (Submit returns at once) goes through two threads, in submission order:
//   the decode thread
//     1. the CPU share: the k = round(n x cpu_share) records of the job whose key (Philox block
//        kShareBlock of (seed, epoch, sample index)) is smallest are handed to the CPU decoder
//        (pipeline/cpu_image_decoder.cc: libjpeg-turbo on worker threads, at a DCT scale where
//        the crop allows), into pinned host memory. Which records go is a function of the
//        share, the seed, the epoch and the indices alone, never of timing: a run repeats bit
//        for bit, as long as the share is the same;
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
//   the finish thread
//     5. waits for the CPU share (step 1), then copies its samples into the output on the copy
//        stream.
// The CPU share is what lets the loader pass the hardware decoder's own rate: the decode thread
// spends its time in nvJPEG's calls (about 40 us a 500 x 375 image on an H100, 2026-11-27), and
// the CPU threads would otherwise idle. auto (a negative cpu_share): the share the CPU threads
// can carry at the measured rates, kCpuImagesPerSecond a thread against kHardwareImagesPerSecond
// (AutoCpuShare).
//
// The crops are the CPU decoder's (CropFor: keyed by seed, epoch and sample index); the GPU
// resamples the full-size decode where the CPU may decode at a DCT scale, so the two agree to
// within the decoders' rounding (the measured tolerance: tests/pipeline/
// cuda_loader_images_test.cc).
//
// Streams and the host waits nvJPEG needs: nvJPEG's hardware decoder writes the decode area when
// DecodeBatched is called, not when its stream reaches the call (seen on H100s with nvJPEG 12.3
// to 13.2: meta-pytorch/torchcodec#1634). So the decode thread waits on the host, before each
// DecodeBatched, for the event recorded after its set's area's last reader (that set's previous
// crops' kernel), and before the first write of a job's output, for the job's write_ok event
// (recorded on the consumer's stream at Submit: the consumer has let go of that buffer). In the
// steady state both have long passed. Wait makes the consumer's stream wait for the job's events
// on the sets' streams and the copy stream, without blocking the host.
//
// Memory (GPU): two decode areas and crops' tables, grown to the largest group met and reused;
// nvJPEG's own buffers. Host: a job's CPU share in pinned memory (k samples), reused
// from job to job once its copies are done; the late fallback's staging, grown likewise.
//
// Thread safety: Submit and Wait from one thread (the loader's). The job queue is under one lock;
// a job's fields are written by the decode thread, then the finish thread, then read by Wait,
// each handing it on under that lock.
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
#include "pipeline/image_decoder.h"

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
    d->decode_thread_ = std::thread([p = d.get()] { p->RunDecode(); });
    d->finish_thread_ = std::thread([p = d.get()] { p->RunFinish(); });
    return std::unique_ptr<ImageDecoder>(std::move(d));
  }

  ~NvjpegImageDecoder() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    if (decode_thread_.joinable()) decode_thread_.join();
    if (finish_thread_.joinable()) finish_thread_.join();
    // The CPU workers may still write a job's pinned share: stopped before the jobs are freed.
    fallback_.reset();
    for (Set& set : sets_) {
      if (set.stream) (void)cudaStreamSynchronize(set.stream.get());
      if (set.state != nullptr) api_->JpegStateDestroy(set.state);
    }
    if (copy_stream_) (void)cudaStreamSynchronize(copy_stream_.get());
    if (jpeg_stream_ != nullptr) api_->JpegStreamDestroy(jpeg_stream_);
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
    p->status = Status::Ok();
    p->finished = false;
    p->copies = p->late_copies = false;
    for (bool& on : p->decoded_on) on = false;
    p->bad.clear();
    RF_CUDA_CHECK(cudaEventRecord(p->write_ok.get(), consumer_));
    {
      std::lock_guard<std::mutex> lock(mu_);
      to_decode_.push_back(p);
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
    done_.wait(lock, [&] { return p->finished; });
    jobs_.pop_front();
    lock.unlock();
    job->bad = std::move(p->bad);
    std::sort(job->bad.begin(), job->bad.end(),
              [](const BadRecord& a, const BadRecord& b) { return a.slot < b.slot; });
    Status s = p->status;
    for (int k = 0; k < kSets && s.ok(); ++k)
      if (p->decoded_on[k]) s = WaitOn(p->decoded[k].get());
    if (s.ok() && p->copies) s = WaitOn(p->copied.get());
    lock.lock();
    // Waited on by the consumer's stream (or never to be): its events free to record again; its
    // pinned share is reused once its `copied` event has passed (the decode thread waits).
    free_.push_back(p);
    return s;
  }

  const ImageDecodeSpec& spec() const override { return spec_; }
  int output_gpu() const override { return gpu_; }
  // The decode thread and the CPU decoder's threads.
  uint32_t threads() const override { return 1 + fallback_->threads(); }
  double busy_seconds() const override {
    return decode_busy_ns_.load() * 1e-9 + fallback_->busy_seconds();
  }
  uint64_t records() const override { return records_.load(); }
  std::string Describe() const override {
    char share[64];
    std::snprintf(share, sizeof share, "%.3f", cpu_share_);
    return std::string("jpeg decode by nvJPEG (") + (hardware_ ? "hardware decoder" : "CUDA") +
           ") on GPU " + std::to_string(gpu_) + " from one thread, a share of " + share +
           " of each batch and what nvJPEG does not take on the CPU (" + fallback_->Describe() +
           "): " + std::to_string(share_records_.load()) + " records so far in the share, " +
           std::to_string(late_records_.load()) + " on the fallback" + HostTimes();
  }

  // Where the decode thread's time went, a record it gave nvJPEG: ", decode thread busy 1.23 s,
  // a record: 12.3 us reading headers, 45.6 us in nvJPEG's decode calls" (empty before any).
  std::string HostTimes() const {
    const uint64_t n = nvjpeg_records_.load();
    if (n == 0) return "";
    char text[160];
    std::snprintf(text, sizeof text,
                  ", decode thread busy %.3f s, a record to nvJPEG: %.1f us reading headers, "
                  "%.1f us in nvJPEG's decode calls",
                  decode_busy_ns_.load() * 1e-9, parse_ns_.load() * 1e-3 / n,
                  nvjpeg_ns_.load() * 1e-3 / n);
    return text;
  }

  // The share of each batch the CPU threads decode where none is given: what `threads` threads
  // at kCpuImagesPerSecond add to the hardware decoder's kHardwareImagesPerSecond.
  static double AutoCpuShare(uint32_t threads) {
    const double cpu = threads * kCpuImagesPerSecond;
    return cpu / (cpu + kHardwareImagesPerSecond);
  }

 private:
  // What one batched decode uses, in turn with the other set, so that nvJPEG can take the next
  // group while the crops' kernel reads this one's area: its decode state, the batch size it
  // was initialized for, its stream, its decode area and crops' table (grown to the largest
  // group met), and the event after the area's last reader. With one set, nvJPEG's calls took
  // 63 us of the decode thread a record, with two 40 (H100, 100,000 photographs of 500 x 375,
  // auto share, 2026-11-27).
  static constexpr int kSets = 2;
  struct Set {
    nj::State state = nullptr;
    uint32_t initialized = 0;
    cuda::CudaStream stream;
    cuda::CudaEvent area_free;
    cuda::DeviceBuffer area, crops;
  };
  // A job submitted and not yet waited for, and what it reuses from job to job.
  struct Pending {
    ImageJob* job = nullptr;
    cuda::CudaEvent write_ok;        // on the consumer's stream, at Submit
    cuda::CudaEvent decoded[kSets];  // on each set's stream, after the job's last work there
    bool decoded_on[kSets] = {};     // recorded for this job
    cuda::CudaEvent copied;          // on the copy stream, after the job's copies from host
    bool late_copies = false;        // the decode thread queued copies there
    bool copies = false;             // `copied` recorded for this job
    bool finished = false;           // the finish thread is done with it
    Status status;                   // the first failure
    std::vector<BadRecord> bad;
    // The CPU share: its records' slots (ascending), bytes, offsets and indices, its job and
    // its output (pinned).
    std::vector<uint32_t> share_slots;
    std::vector<uint8_t> share_bytes;
    std::vector<int64_t> share_offsets;
    std::vector<uint64_t> share_indices;
    ImageJob share;
    cuda::PinnedBuffer share_out;
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

  Status Open(uint32_t threads, double cpu_share) {
    RF_CUDA_CHECK(cudaSetDevice(gpu_));
    // The hardware decoder where the GPU has one (A100, H100), else nvJPEG's CUDA decode.
    hardware_ = api_->CreateEx(nj::kBackendHardware, nullptr, nullptr, 0, &handle_) == nj::kSuccess;
    nj::Code c = nj::kSuccess;
    if (!hardware_) {
      handle_ = nullptr;
      c = api_->CreateEx(nj::kBackendDefault, nullptr, nullptr, 0, &handle_);
    }
    for (Set& set : sets_)
      if (c == nj::kSuccess) c = api_->JpegStateCreate(handle_, &set.state);
    if (c == nj::kSuccess) c = api_->JpegStreamCreate(handle_, &jpeg_stream_);
    if (c != nj::kSuccess)
      return Status::Unsupported("nvJPEG (" + api_->path + "): " + nj::CodeName(c));
    for (Set& set : sets_) {
      // At the highest priority: the crops' kernel frees the decode area the set's next
      // DecodeBatched waits for, and should not queue behind the model's kernels.
      RF_ASSIGN_OR_RETURN(set.stream, cuda::CreateStream(true));
      RF_ASSIGN_OR_RETURN(set.area_free, cuda::CreateEvent(false));
    }
    RF_ASSIGN_OR_RETURN(copy_stream_, cuda::CreateStream());
    // The decode thread takes a core of the `threads`.
    const uint32_t cpu = threads > 2 ? threads - 1 : 1;
    RF_ASSIGN_OR_RETURN(fallback_, MakeCpuImageDecoder(spec_, cpu));
    cpu_share_ = cpu_share < 0 ? AutoCpuShare(cpu) : std::min(cpu_share, 1.0);
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

  // The loop of the decode and the finish thread: takes `queue`'s jobs in order, runs
  // `step(job)` on each without the lock, keeps its failure, then `hand_on(job)` under the lock.
  template <typename Step, typename HandOn>
  void Serve(std::deque<Pending*>& queue, Step step, HandOn hand_on) {
    (void)cudaSetDevice(gpu_);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue.empty(); });
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

  void RunDecode() {
    Serve(
        to_decode_,
        [this](Pending& p) {
          const uint64_t t0 = SteadyNowNs();
          Status s = Decode(p);
          decode_busy_ns_ += SteadyNowNs() - t0;
          records_ += p.job->n;
          return s;
        },
        [this](Pending* p) {
          to_finish_.push_back(p);
          work_.notify_all();
        });
  }

  void RunFinish() {
    Serve(
        to_finish_,
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
  Status Decode(Pending& p) {
    ImageJob& job = *p.job;
    taken_.clear();
    late_.clear();
    p.share.n = 0;
    write_ok_waited_ = false;
    RF_RETURN_IF_ERROR(SubmitShare(p));
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
      if (!whole || api_->JpegStreamParseHeader(handle_, data, n, jpeg_stream_) != nj::kSuccess ||
          (hardware_ &&
           (api_->DecodeBatchedSupported(handle_, jpeg_stream_, &unsupported) != nj::kSuccess ||
            unsupported != 0))) {
        late_.push_back(i);
        continue;
      }
      taken_.push_back(t);
    }
    parse_ns_ += SteadyNowNs() - t0;
    nvjpeg_records_ += taken_.size();
    // Groups of the records taken, each as many as the area holds.
    for (size_t g = 0; g < taken_.size();) {
      size_t end = g, bytes = 0;
      while (end < taken_.size()) {
        const size_t b = ImageBytes(taken_[end].frame);
        if (end > g && bytes + b > std::max(kMinAreaBytes, sets_[next_set_].area.bytes())) break;
        bytes += b;
        ++end;
      }
      RF_RETURN_IF_ERROR(DecodeGroup(p, g, end, bytes));
      g = end;
    }
    if (!late_.empty()) RF_RETURN_IF_ERROR(DecodeLate(p));
    RF_RETURN_IF_ERROR(WaitWriteOk(p));  // the finish thread's copies come after it
    return Status::Ok();
  }

  // The job's output may be written: the consumer's stream has passed write_ok (once a job).
  Status WaitWriteOk(Pending& p) {
    if (!write_ok_waited_) RF_CUDA_CHECK(cudaEventSynchronize(p.write_ok.get()));
    write_ok_waited_ = true;
    return Status::Ok();
  }

  // Step 1: the CPU share chosen, its bytes gathered and submitted to the CPU decoder.
  Status SubmitShare(Pending& p) {
    ImageJob& job = *p.job;
    p.share_slots.clear();
    const uint32_t k =
        static_cast<uint32_t>(std::min<double>(job.n, std::floor(job.n * cpu_share_ + 0.5)));
    if (k == 0) return Status::Ok();
    keys_.clear();
    for (uint32_t i = 0; i < job.n; ++i) {
      const auto d = augment::Draws(spec_.seed, job.epoch, job.indices[i], kShareBlock);
      keys_.push_back({(uint64_t{d.v[0]} << 32) | d.v[1], i});
    }
    std::nth_element(keys_.begin(), keys_.begin() + (k - 1), keys_.end());
    for (uint32_t j = 0; j < k; ++j) p.share_slots.push_back(keys_[j].second);
    std::sort(p.share_slots.begin(), p.share_slots.end());
    // The previous job's copies from this pinned share have read it.
    RF_CUDA_CHECK(cudaEventSynchronize(p.copied.get()));
    if (p.share_out.bytes() < size_t{k} * sample_bytes_) {
      p.share_out = {};
      RF_ASSIGN_OR_RETURN(p.share_out,
                          cuda::PinnedBuffer::Allocate(size_t{job.n} * sample_bytes_,
                                                       "the CPU share of nvJPEG's batches"));
    }
    p.share_bytes.clear();
    p.share_offsets.assign(1, 0);
    p.share_indices.clear();
    for (uint32_t slot : p.share_slots) {
      const uint8_t* data = job.bytes + job.offsets[slot];
      p.share_bytes.insert(p.share_bytes.end(), data,
                           data + (job.offsets[slot + 1] - job.offsets[slot]));
      p.share_offsets.push_back(static_cast<int64_t>(p.share_bytes.size()));
      p.share_indices.push_back(job.indices[slot]);
    }
    p.share = ImageJob{};
    p.share.bytes = p.share_bytes.data();
    p.share.offsets = p.share_offsets.data();
    p.share.n = k;
    p.share.indices = p.share_indices.data();
    p.share.epoch = job.epoch;
    p.share.out = p.share_out.data();
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

  // taken_[g, end) of `p` (`bytes` of decoded pixels) through nvJPEG and the crops' kernel; a
  // group nvJPEG fails goes to late_.
  Status DecodeGroup(Pending& p, size_t g, size_t end, size_t bytes) {
    const ImageJob& job = *p.job;
    const uint32_t n = static_cast<uint32_t>(end - g);
    const uint32_t which = next_set_;
    next_set_ = (next_set_ + 1) % kSets;
    Set& set = sets_[which];
    // The set's area's last reader (its crops' kernel before) is done: nvJPEG's hardware decoder
    // writes it when DecodeBatched is called (see the top of this file).
    RF_CUDA_CHECK(cudaEventSynchronize(set.area_free.get()));
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
    data_.clear();
    lengths_.clear();
    images_.assign(n, nj::Image{});
    host_crops_.assign(n, decode::GpuCrop{});
    uint8_t* area = set.area.as<uint8_t>();
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
    const uint64_t t0 = SteadyNowNs();
    nj::Code code = nj::kSuccess;
    if (set.initialized != n) {
      code = api_->DecodeBatchedInitialize(handle_, set.state, static_cast<int>(n), 1,
                                           nj::kOutputRgbInterleaved);
      set.initialized = code == nj::kSuccess ? n : 0;
    }
    if (code == nj::kSuccess) {
      code = api_->DecodeBatched(handle_, set.state, data_.data(), lengths_.data(), images_.data(),
                                 set.stream.get());
    }
    nvjpeg_ns_ += SteadyNowNs() - t0;
    if (code != nj::kSuccess) {
      // nvJPEG says only that the batch failed: the CPU decoder finds which record, and why.
      set.initialized = 0;  // nvJPEG's rule: initialize again after a failed batch
      for (size_t k = g; k < end; ++k) late_.push_back(taken_[k].slot);
      return Status::Ok();
    }
    RF_RETURN_IF_ERROR(WaitWriteOk(p));
    RF_CUDA_CHECK(cudaMemcpyAsync(set.crops.data(), host_crops_.data(), n * sizeof(decode::GpuCrop),
                                  cudaMemcpyHostToDevice, set.stream.get()));
    RF_CUDA_CHECK(decode::ResampleCropsOnGpu(area, set.crops.as<decode::GpuCrop>(), n, output_,
                                             job.out, set.stream.get()));
    RF_CUDA_CHECK(cudaEventRecord(set.area_free.get(), set.stream.get()));
    RF_CUDA_CHECK(cudaEventRecord(p.decoded[which].get(), set.stream.get()));
    p.decoded_on[which] = true;
    return Status::Ok();
  }

  // Step 4: late_'s records through the CPU decoder, there and then, into host staging, copied to
  // their samples.
  Status DecodeLate(Pending& p) {
    ImageJob& job = *p.job;
    std::sort(late_.begin(), late_.end());
    late_bytes_.clear();
    late_offsets_.assign(1, 0);
    late_indices_.clear();
    for (uint32_t slot : late_) {
      const uint8_t* data = job.bytes + job.offsets[slot];
      late_bytes_.insert(late_bytes_.end(), data,
                         data + (job.offsets[slot + 1] - job.offsets[slot]));
      late_offsets_.push_back(static_cast<int64_t>(late_bytes_.size()));
      late_indices_.push_back(job.indices[slot]);
    }
    late_out_.resize(late_.size() * sample_bytes_);
    ImageJob sub;
    sub.bytes = late_bytes_.data();
    sub.offsets = late_offsets_.data();
    sub.n = static_cast<uint32_t>(late_.size());
    sub.indices = late_indices_.data();
    sub.epoch = job.epoch;
    sub.out = late_out_.data();
    RF_RETURN_IF_ERROR(fallback_->Submit(&sub));
    RF_RETURN_IF_ERROR(fallback_->Wait(&sub));
    late_records_ += sub.n;
    RF_RETURN_IF_ERROR(WaitWriteOk(p));
    size_t b = 0;
    for (uint32_t k = 0; k < sub.n; ++k) {
      if (b < sub.bad.size() && sub.bad[b].slot == k) {
        p.bad.push_back({late_[k], std::move(sub.bad[b].why)});
        ++b;
        continue;
      }
      // Pageable memory: the copy has read it when the call returns.
      RF_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(job.out) + late_[k] * sample_bytes_,
                                    late_out_.data() + k * sample_bytes_, sample_bytes_,
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

  // nvJPEG's instance and the decode thread's reusables (that thread's alone once it runs).
  bool hardware_ = false;
  double cpu_share_ = 0;
  nj::Handle handle_ = nullptr;
  nj::Stream jpeg_stream_ = nullptr;  // the headers' parse
  Set sets_[kSets];
  uint32_t next_set_ = 0;
  cuda::CudaStream copy_stream_;  // the copies from host memory (the CPU's samples)
  bool write_ok_waited_ = false;
  std::vector<Taken> taken_;
  std::vector<uint32_t> late_;
  std::vector<std::pair<uint64_t, uint32_t>> keys_;
  std::vector<const unsigned char*> data_;
  std::vector<size_t> lengths_;
  std::vector<nj::Image> images_;
  std::vector<decode::GpuCrop> host_crops_;
  std::vector<uint8_t> late_bytes_, late_out_;
  std::vector<int64_t> late_offsets_;
  std::vector<uint64_t> late_indices_;

  std::mutex mu_;
  std::condition_variable work_, done_;
  std::vector<std::unique_ptr<Pending>> pendings_;  // every job's bookkeeping, made as needed
  std::vector<Pending*> free_;                      // not in flight
  std::deque<Pending*> jobs_;                       // submitted, not yet waited for; oldest first
  std::deque<Pending*> to_decode_, to_finish_;      // each thread's queue
  bool stop_ = false;
  // Declared after the jobs: destroyed (its workers stopped) before them; the destructor resets
  // it first anyway.
  std::unique_ptr<ImageDecoder> fallback_;
  std::thread decode_thread_, finish_thread_;
  std::atomic<uint64_t> decode_busy_ns_{0}, records_{0}, share_records_{0}, late_records_{0};
  std::atomic<uint64_t> parse_ns_{0}, nvjpeg_ns_{0}, nvjpeg_records_{0};
};

}  // namespace

Result<std::unique_ptr<ImageDecoder>> MakeNvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                             void* consumer_stream,
                                                             uint32_t threads, double cpu_share) {
  return NvjpegImageDecoder::Create(spec, gpu, static_cast<cudaStream_t>(consumer_stream), threads,
                                    cpu_share);
}

}  // namespace rf
