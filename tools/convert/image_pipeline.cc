#include "tools/convert/image_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "decode/jpeg_reencode.h"
#include "decode/png_image.h"
#include "decode/webp_image.h"
#include "tools/convert/image_check.h"
#include "tools/convert/stage_threads.h"

namespace rf::convert {
namespace {

constexpr uint64_t kBudgetBytes = uint64_t{256} << 20;  // images in flight
constexpr size_t kKeepBytes = size_t{16} << 20;         // a slot's buffer kept for the next image

void Trim(std::vector<uint8_t>& v) {
  if (v.capacity() > kKeepBytes) std::vector<uint8_t>().swap(v);
}

// A worker's check of one image and, where the rules say, its re-encode.
class ImageCheck {
 public:
  explicit ImageCheck(const ImageRules& rules) : rules_(rules) {}

  Status Init() {
    if (rules_.max_side == 0) return Status::Ok();
    RF_ASSIGN_OR_RETURN(reencoder_, JpegReencoder::Create());
    return Status::Ok();
  }

  void Run(CheckedImage& c) {
    c.refused.clear();
    c.reencoded = false;
    c.reencoded_bytes.clear();
    if (!c.item.error.empty()) {
      c.refused = c.item.error;
      return;
    }
    const uint8_t* data = c.item.bytes.data();
    const size_t n = c.item.bytes.size();
    // Under max_side any size is read: what is larger is resized.
    c.refused =
        CheckImage(data, n, rules_.max_side == 0 ? rules_.max_image_side : 0x7fffffffu, &c.header);
    if (!c.refused.empty() || rules_.max_side == 0) return;
    const ImageSize size = FitWithin(c.header.height, c.header.width, rules_.max_side);
    if (size == ImageSize{c.header.height, c.header.width}) return;  // stored as it is
    const std::string why =
        c.header.codec == ImageCodec::kJpeg
            ? reencoder_->Reencode(data, n, size, rules_.quality, &c.reencoded_bytes)
            : ReencodeDecoded(c, size);
    if (!why.empty()) {
      c.refused = "its re-encode failed: " + why;
      return;
    }
    c.reencoded = true;
  }

 private:
  // A PNG's or WebP's whole decode, then its resize and encode.
  std::string ReencodeDecoded(CheckedImage& c, ImageSize size) {
    const uint8_t* data = c.item.bytes.data();
    const size_t n = c.item.bytes.size();
    const uint32_t h = c.header.height, w = c.header.width;
    if (uint64_t{h} * w * 3 > kMaxReencodeDecodeBytes) {
      return "a " + std::to_string(w) + "x" + std::to_string(h) +
             " image whose decode needs more than the 4096 MiB an image may take";
    }
    uint32_t channels = 3;
    std::string why;
    if (c.header.codec == ImageCodec::kPng) {
      PngHeader png;
      why = ReadPngHeader(data, n, 0x7fffffffu, &png);
      if (why.empty()) why = ReadPngRows(data, n, png, 0, h, &pixels_);
      channels = png.channels();
    } else {
      WebpHeader webp;
      uint32_t row0 = 0, col0 = 0;
      size_t pitch = 0;
      why = ReadWebpHeader(data, n, 0x7fffffffu, &webp);
      if (why.empty())
        why = ReadWebpRegion(data, n, webp, 0, h, 0, w, &pixels_, &row0, &col0, &pitch);
    }
    if (why.empty()) {
      why = reencoder_->ReencodePixels(pixels_.data(), {h, w}, channels, size, rules_.quality,
                                       &c.reencoded_bytes);
    }
    Trim(pixels_);
    return why;
  }

  const ImageRules& rules_;
  std::unique_ptr<JpegReencoder> reencoder_;
  std::vector<uint8_t> pixels_;  // a PNG's or WebP's decode, for its re-encode
};

class ImagePipeline {
 public:
  ImagePipeline(ImageSource& source, const ImageRules& rules, uint32_t threads)
      : source_(source), slots_(std::max<size_t>(8, size_t{4} * threads)) {
    for (uint32_t i = 0; i < threads; ++i) checks_.push_back(std::make_unique<ImageCheck>(rules));
  }

  Status Run(const std::function<Status(const CheckedImage&)>& sink) {
    for (auto& c : checks_) RF_RETURN_IF_ERROR(c->Init());
    stages_.Start([this] { ReadLoop(); });
    for (auto& c : checks_) stages_.Start([this, check = c.get()] { CheckLoop(*check); });
    Status st;
    stages_.Run([&] { st = SinkLoop(sink); });
    stages_.Stop();
    stages_.RethrowFailure();
    if (!st.ok()) return st;
    return read_status_;
  }

 private:
  enum class State { kFree, kRead, kChecked };
  struct Slot {
    CheckedImage image;
    State state = State::kFree;
  };

  void NotifyAll() {
    freed_.notify_all();
    read_cv_.notify_all();
    checked_.notify_all();
  }

  Slot& SlotOf(uint64_t seq) { return slots_[seq % slots_.size()]; }

  void ReadLoop() {
    for (uint64_t seq = 0;; ++seq) {
      Slot& s = SlotOf(seq);
      {
        std::unique_lock lock(mu_);
        freed_.wait(lock, [&] {
          return stages_.stopped() ||
                 (s.state == State::kFree && (in_flight_ < kBudgetBytes || seq == sunk_));
        });
        if (stages_.stopped()) return;
      }
      // The slot is this thread's until it is marked read.
      Result<bool> more = source_.Next(&s.image.item);
      const bool end = !more.ok() || !*more;
      {
        std::lock_guard lock(mu_);
        if (end) {
          if (!more.ok()) read_status_ = more.status();
          read_end_ = seq;
          reading_ = false;
        } else {
          s.state = State::kRead;
          in_flight_ += s.image.item.bytes.size();
          read_ = seq + 1;
        }
      }
      if (end) {  // every worker ends, and the sink at read_end_
        read_cv_.notify_all();
        checked_.notify_one();
        return;
      }
      read_cv_.notify_one();
    }
  }

  void CheckLoop(ImageCheck& check) {
    for (;;) {
      Slot* s = nullptr;
      {
        std::unique_lock lock(mu_);
        read_cv_.wait(lock, [&] { return stages_.stopped() || taken_ < read_ || !reading_; });
        if (stages_.stopped() || taken_ == read_) return;  // stopped, or every image read is taken
        s = &SlotOf(taken_++);
      }
      check.Run(s->image);  // the slot is this thread's until it is marked checked
      {
        std::lock_guard lock(mu_);
        s->state = State::kChecked;
      }
      checked_.notify_one();  // the sink alone waits there
    }
  }

  Status SinkLoop(const std::function<Status(const CheckedImage&)>& sink) {
    for (uint64_t seq = 0;; ++seq) {
      Slot& s = SlotOf(seq);
      {
        std::unique_lock lock(mu_);
        checked_.wait(lock, [&] {
          return stages_.stopped() || s.state == State::kChecked || (!reading_ && seq == read_end_);
        });
        if (s.state != State::kChecked) return Status::Ok();  // stopped, or the end
      }
      const Status st = sink(s.image);  // the slot is this thread's until it is marked free
      const uint64_t bytes = s.image.item.bytes.size();
      Trim(s.image.item.bytes);
      Trim(s.image.reencoded_bytes);
      {
        std::lock_guard lock(mu_);
        s.state = State::kFree;
        in_flight_ -= bytes;
        sunk_ = seq + 1;
      }
      freed_.notify_one();  // the reader alone waits there
      if (!st.ok()) return st;
    }
  }

  ImageSource& source_;
  std::vector<std::unique_ptr<ImageCheck>> checks_;
  std::vector<Slot> slots_;

  // Guarded by mu_. Each stage waits on its own condition, so that an image wakes one thread a
  // step (a wake-up of every worker an image would cost more than the check of a stored one):
  // the reader on freed_ (a slot let go of), the workers on read_cv_ (an image read, or the end),
  // the sink on checked_ (an image checked, or the end). A stop wakes every one.
  std::mutex mu_;
  std::condition_variable freed_, read_cv_, checked_;
  bool reading_ = true;
  uint64_t read_ = 0;       // images read: slots [0, read_) were read
  uint64_t read_end_ = 0;   // where reading ended (valid once reading_ is false)
  uint64_t taken_ = 0;      // images a worker has taken
  uint64_t sunk_ = 0;       // images the sink has let go of
  uint64_t in_flight_ = 0;  // bytes of the images read and not yet let go of
  Status read_status_;
  // The reader and the workers (the sink is the caller); their stop flag and failure guarded by
  // mu_. Last: its threads are joined before anything they use is destroyed.
  StageThreads stages_{mu_, [this] { NotifyAll(); }};
};

}  // namespace

Status RunImagePipeline(ImageSource& source, const ImageRules& rules, uint32_t threads,
                        const std::function<Status(const CheckedImage&)>& sink) {
  ImagePipeline p(source, rules, std::max<uint32_t>(1, threads));
  return p.Run(sink);
}

}  // namespace rf::convert
