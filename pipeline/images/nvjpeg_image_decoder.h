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
//     2. the others: each record's codec by its first bytes (decode/image_record.h: a PNG, a
//        WebP or bytes of no codec go to the CPU decoder, step 4), a JPEG's frame header read on
//        the host (decode/jpeg_image.h's ReadJpegFrame: no frame, a kind not decoded, a side over
//        max_side: a bad record, before any allocation), then nvJPEG's parse of its header and
//        whether its batched decode takes it (the hardware decoder takes baseline JPEGs of one
//        scan; not 4:1:0 or 4:1:1, not progressive); a record that does not end in an
//        end-of-image marker, and a CMYK one (whose RGB is PIL's, step 4), is not given to
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
//
// This header is the decoder's own, for its two files: nvjpeg_image_decoder.cc (making and ending
// it, Submit and Wait, its threads' loops) and nvjpeg_job_steps.cc (steps 1 to 5 above). The
// loader makes one through image_decoder.h's MakeNvjpegImageDecoder.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.h"
#include "cuda/handles.h"
#include "cuda/nvjpeg_library.h"
#include "decode/gpu_image_resample.h"
#include "pipeline/images/cpu_share.h"
#include "pipeline/images/image_decoder.h"

namespace rf {

class NvjpegImageDecoder final : public ImageDecoder {
 public:
  static Result<std::unique_ptr<ImageDecoder>> Create(const ImageDecodeSpec& spec, int gpu,
                                                      cudaStream_t consumer, uint32_t threads,
                                                      double cpu_share);

  ~NvjpegImageDecoder() override;

  Status Submit(ImageJob* job) override;
  Status Wait(ImageJob* job) override;
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
  std::string Describe() const override;

  // Where the drivers' time went, a record they gave nvJPEG: ", the drivers busy 1.23 s (0.012 s of
  // it waiting for the GPU), a record: 12.3 us reading headers, 45.6 us in nvJPEG's decode
  // calls" (empty before any; summed over the drivers). The waits for the GPU: for the consumer
  // to let go of an output buffer, for a decode area's last reader, for a pinned share's last
  // copy.
  std::string HostTimes() const;

  // The share of each batch the CPU threads decode where none is given: what `cpu` threads at
  // kCpuImagesPerSecond add to `drivers` drivers at kHardwareImagesPerSecond each.
  static double AutoCpuShare(uint32_t cpu, uint32_t drivers);

  // The drivers where `threads` are given: two where the threads leave the CPU decoder at least
  // two (a driver takes a core), else one.
  static uint32_t DriversFor(uint32_t threads) { return threads >= 4 ? kDrivers : 1; }

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
    cuda::nvjpeg::State state = nullptr;
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
    ImageJob Gather(const ImageJob& job, const std::vector<uint32_t>& slots, void* out);
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
    cuda::nvjpeg::Stream jpeg_stream = nullptr;  // the headers' parse
    bool write_ok_waited = false;                // for the job it drives
    std::vector<Taken> taken;
    std::vector<uint32_t> late;
    std::vector<std::pair<uint64_t, uint32_t>> keys;
    std::vector<const unsigned char*> data;
    std::vector<size_t> lengths;
    std::vector<cuda::nvjpeg::Image> images;
    std::vector<decode::GpuCrop> host_crops;
    Subset late_records;
    std::vector<uint8_t> late_out;
    std::thread thread;
  };

  NvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu, cudaStream_t consumer,
                     const cuda::nvjpeg::Api* api);

  Status Open(uint32_t threads, double cpu_share);
  static Result<std::unique_ptr<Pending>> MakePending();
  Status WaitOn(cudaEvent_t e);

  // The loop of the drivers and the finish thread: takes `queue`'s front job once `ready(job)`,
  // runs `step(job)` on it without the lock, keeps its failure, then `hand_on(job)` under the
  // lock.
  template <typename Ready, typename Step, typename HandOn>
  void Serve(std::deque<Pending*>& queue, Ready ready, Step step, HandOn hand_on);

  void RunDriver(Driver& d);
  // In submission order, each job once its driver is done with it.
  void RunFinish();

  // The job's records through the steps above, up to the CPU share's submission (the finish
  // thread does the rest).
  Status Decode(Driver& d, Pending& p);

  // The job's output may be written: the consumer's stream has passed write_ok (once a job).
  Status WaitWriteOk(Driver& d, Pending& p);

  // A driver waits on the host for `e` (the GPU's progress), and counts the time.
  Status HostWait(cudaEvent_t e);

  // Step 1: the CPU share chosen, its bytes gathered and submitted to the CPU decoder.
  Status SubmitShare(Driver& d, Pending& p);

  // Step 5 (the finish thread): the CPU share decoded, its samples copied into the output (runs
  // of consecutive slots in one copy each) on the copy stream.
  Status FinishShare(Pending& p);

  // A decoded image's bytes in the decode area (interleaved RGB, aligned).
  static size_t ImageBytes(const JpegFrame& f);

  // d.taken[g, end) of `p` (`bytes` of decoded pixels) through nvJPEG and the crops' kernel; a
  // group nvJPEG fails goes to d.late.
  Status DecodeGroup(Driver& d, Pending& p, size_t g, size_t end, size_t bytes);

  // Step 4: d.late's records through the CPU decoder, there and then, into host staging, copied
  // to their samples.
  Status DecodeLate(Driver& d, Pending& p);

  const ImageDecodeSpec spec_;
  const decode::GpuImageOutput output_;
  const size_t sample_bytes_;
  const int gpu_;
  const cudaStream_t consumer_;
  const cuda::nvjpeg::Api* const api_;

  // nvJPEG's instance (shared by the drivers) and the drivers.
  bool hardware_ = false;
  double cpu_share_ = 0;                        // a fixed share
  std::unique_ptr<AdaptiveCpuShare> adaptive_;  // else this one's (set at Open)
  uint64_t last_wait_end_ns_ = 0;               // when Wait last returned (the loader's thread)
  cuda::nvjpeg::Handle handle_ = nullptr;
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

}  // namespace rf
