// CpuImageDecoder (pipeline/images/image_decoder.h): image records (JPEG, PNG, WebP) decoded on
// worker threads, each with its own ImageRecordDecoder (decode/image_record.h: each codec's
// decoder, decoded region, taps), into host memory. The workers take records one at a time from the
// oldest job that has any left, so the batch the consumer waits for comes first and a thread never
// idles while a queued batch has a record to decode; a record takes about a millisecond, the
// queue's lock a fraction of a microsecond.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "decode/image_record.h"
#include "pipeline/images/image_decoder.h"

namespace rf {
namespace {

class CpuImageDecoder final : public ImageDecoder {
 public:
  static Result<std::unique_ptr<ImageDecoder>> Create(const ImageDecodeSpec& spec,
                                                      uint32_t threads) {
    if (threads == 0) return Status::InvalidArgument("an image decoder of 0 threads");
    std::unique_ptr<CpuImageDecoder> d(new CpuImageDecoder(spec));
    for (uint32_t t = 0; t < threads; ++t) {
      RF_ASSIGN_OR_RETURN(std::unique_ptr<ImageRecordDecoder> one,
                          ImageRecordDecoder::Create(spec));
      d->decoders_.push_back(std::move(one));
    }
    for (uint32_t t = 0; t < threads; ++t)
      d->workers_.emplace_back([p = d.get(), t] { p->Run(t); });
    return std::unique_ptr<ImageDecoder>(std::move(d));
  }

  ~CpuImageDecoder() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  Status Submit(ImageJob* job) override {
    if (job->n == 0) return Status::InvalidArgument("an image job of 0 records");
    job->next = job->done = 0;
    job->done_ns = 0;
    job->bad.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(job);
    }
    work_.notify_all();
    return Status::Ok();
  }

  Status Wait(ImageJob* job) override {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return job->done == job->n; });
    // Workers append as they finish, in any order.
    std::sort(job->bad.begin(), job->bad.end(),
              [](const BadRecord& a, const BadRecord& b) { return a.slot < b.slot; });
    return Status::Ok();
  }

  const ImageDecodeSpec& spec() const override { return spec_; }
  int output_gpu() const override { return -1; }
  uint32_t threads() const override { return static_cast<uint32_t>(workers_.size()); }
  double busy_seconds() const override { return busy_ns_.load() * 1e-9; }
  uint64_t records() const override { return records_.load(); }
  std::string Describe() const override {
    return "image decode on " + std::to_string(workers_.size()) + " CPU thread" +
           (workers_.size() == 1 ? "" : "s");
  }

 private:
  explicit CpuImageDecoder(const ImageDecodeSpec& spec)
      : spec_(spec), sample_bytes_(spec.OutputSampleBytes()) {}

  void Run(uint32_t t) {
    ImageRecordDecoder& decoder = *decoders_[t];
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      ImageJob* job = queue_.front();
      const uint32_t i = job->next++;
      if (job->next == job->n) queue_.pop_front();  // its last record is taken
      lock.unlock();
      const uint64_t t0 = SteadyNowNs();
      const uint8_t* record = job->bytes + job->offsets[i];
      const size_t bytes = static_cast<size_t>(job->offsets[i + 1] - job->offsets[i]);
      std::string why = decoder.Decode(record, bytes, job->epoch, job->indices[i],
                                       static_cast<uint8_t*>(job->out) + i * sample_bytes_);
      busy_ns_ += SteadyNowNs() - t0;
      ++records_;
      lock.lock();
      if (!why.empty()) job->bad.push_back({i, std::move(why)});
      if (++job->done == job->n) {
        job->done_ns = SteadyNowNs();
        done_.notify_all();
      }
    }
  }

  const ImageDecodeSpec spec_;
  const size_t sample_bytes_;
  std::vector<std::unique_ptr<ImageRecordDecoder>> decoders_;  // one a worker
  std::vector<std::thread> workers_;

  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<ImageJob*> queue_;  // jobs with records not yet taken, oldest first
  bool stop_ = false;
  std::atomic<uint64_t> busy_ns_{0};
  std::atomic<uint64_t> records_{0};
};

}  // namespace

Result<std::unique_ptr<ImageDecoder>> MakeCpuImageDecoder(const ImageDecodeSpec& spec,
                                                          uint32_t threads) {
  return CpuImageDecoder::Create(spec, threads);
}

}  // namespace rf
