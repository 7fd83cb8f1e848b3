#include "tools/convert/synthetic_input.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <numbers>
#include <thread>
#include <vector>

#include "io/format.h"
#include "tools/convert/splitmix.h"

namespace rf::convert {
namespace {

__extension__ typedef unsigned __int128 Uint128;  // exact sample * classes

constexpr uint32_t kTemplateWeight = 96;                   // of 256; the rest is noise
constexpr uint64_t kMaxTemplateBytes = uint64_t{4} << 30;  // one uint8 template per class
constexpr uint32_t kMaxThreads = 1024;
constexpr uint64_t kTemplateStream = 0x7e3a5c1f00000000ull;
constexpr uint64_t kLabelSalt = 0xa0761d6478bd642full;

inline uint8_t Blend(uint8_t tmpl, uint8_t noise) {
  return static_cast<uint8_t>(
      (uint32_t{tmpl} * kTemplateWeight + uint32_t{noise} * (256 - kTemplateWeight)) >> 8);
}

// Sample `index` given its class's template, as uint8. Noise comes 64 bytes at a time (eight
// xoshiro words), so the blend loop has a fixed trip count and vectorizes.
void GenerateU8(const SyntheticOptions& o, const uint8_t* tmpl, uint64_t index, uint8_t* out,
                uint64_t elems) {
  constexpr uint64_t kLanes = 64;
  Xoshiro256 rng(o.seed, index);
  alignas(64) uint8_t noise[kLanes];
  for (uint64_t e = 0; e < elems; e += kLanes) {
    for (uint64_t w = 0; w < kLanes / 8; ++w) {
      const uint64_t r = rng.Next();
      std::memcpy(noise + 8 * w, &r, 8);
    }
    if (elems - e >= kLanes) {
      for (uint64_t j = 0; j < kLanes; ++j) out[e + j] = Blend(tmpl[e + j], noise[j]);
    } else {
      for (uint64_t j = 0; j < elems - e; ++j) out[e + j] = Blend(tmpl[e + j], noise[j]);
    }
  }
}

class SyntheticSource final : public SampleSource {
 public:
  explicit SyntheticSource(const SyntheticOptions& o) : o_(o) {
    shape_.dims = {o.channels, o.height, o.width};
    shape_.elem = ElemOf(o.dtype);
    shape_.samples = o.samples;
    shape_.num_classes = o.classes;
    shape_.label_dtype = o.classes <= 256     ? DType::kUInt8
                         : o.classes <= 65536 ? DType::kUInt16
                                              : DType::kInt32;
    elems_ = shape_.SampleElems();
    templates_.resize(uint64_t{o.classes} * elems_);
    for (uint32_t c = 0; c < o.classes; ++c) SyntheticTemplate(o, c, &templates_[c * elems_]);

    block_samples_ = std::max<uint64_t>(1, o.block_bytes / shape_.SampleBytes());
    total_blocks_ = (o.samples + block_samples_ - 1) / block_samples_;
    uint32_t threads =
        o.threads != 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    slots_.resize(threads + 2);
    for (Slot& s : slots_) {
      s.samples.resize(block_samples_ * shape_.SampleBytes());
      s.labels.resize(block_samples_);
    }
    for (uint32_t t = 0; t < threads; ++t) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~SyntheticSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  const SourceShape& shape() const override { return shape_; }

  // Copies out of the generator's ring: the block must outlive the slot, which the workers refill.
  Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buf) override {
    SampleBlock b;
    if (cur_ >= 0 && pos_ == BlockCount(static_cast<uint64_t>(cur_))) {
      std::lock_guard<std::mutex> lock(mu_);
      consumed_ = static_cast<uint64_t>(cur_) + 1;  // its slot may be refilled now
      cv_.notify_all();
    }
    if (cur_ < 0 || pos_ == BlockCount(static_cast<uint64_t>(cur_))) {
      if (static_cast<uint64_t>(cur_ + 1) >= total_blocks_) {
        b.first = o_.samples;
        return b;
      }
      ++cur_;
      pos_ = 0;
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return SlotOf(static_cast<uint64_t>(cur_)).ready == cur_; });
    }
    const Slot& s = SlotOf(static_cast<uint64_t>(cur_));
    const uint64_t n = std::min(max_samples, BlockCount(static_cast<uint64_t>(cur_)) - pos_);
    b.first = static_cast<uint64_t>(cur_) * block_samples_ + pos_;
    buf.bytes.assign(s.samples.data() + pos_ * shape_.SampleBytes(),
                     s.samples.data() + (pos_ + n) * shape_.SampleBytes());
    buf.labels.assign(s.labels.data() + pos_, s.labels.data() + pos_ + n);
    b.samples = buf.bytes.data();
    b.labels = buf.labels.data();
    b.count = n;
    pos_ += n;
    return b;
  }

  InputPosition LabelAt(uint64_t sample) const override {
    return {"synthetic", sample};  // generated labels are always in range
  }
  InputPosition SampleAt(uint64_t sample) const override { return {"synthetic", sample}; }

  std::vector<std::string> input_paths() const override { return {}; }

 private:
  struct Slot {
    std::vector<uint8_t> samples;
    std::vector<int64_t> labels;
    int64_t ready = -1;  // the block this slot holds, once filled
  };

  uint64_t BlockCount(uint64_t block) const {
    return std::min(block_samples_, o_.samples - block * block_samples_);
  }
  Slot& SlotOf(uint64_t block) { return slots_[block % slots_.size()]; }

  void WorkerLoop() {
    for (;;) {
      uint64_t k;
      {
        std::unique_lock<std::mutex> lock(mu_);
        // Block k reuses the slot of block k - slots; it may start once that one is consumed.
        cv_.wait(lock, [&] {
          return stop_ || claimed_ >= total_blocks_ || claimed_ < consumed_ + slots_.size();
        });
        if (stop_ || claimed_ >= total_blocks_) return;
        k = claimed_++;
      }
      Fill(k, SlotOf(k));
      {
        std::lock_guard<std::mutex> lock(mu_);
        SlotOf(k).ready = static_cast<int64_t>(k);
      }
      cv_.notify_all();
    }
  }

  void Fill(uint64_t block, Slot& s) {
    const uint64_t n = BlockCount(block);
    const uint64_t bytes = shape_.SampleBytes();
    std::vector<uint8_t> tmp(o_.dtype == DType::kUInt8 ? 0 : elems_);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t index = block * block_samples_ + i;
      const uint32_t label = SyntheticLabel(o_, index);
      s.labels[i] = label;
      uint8_t* out = s.samples.data() + i * bytes;
      if (o_.dtype == DType::kUInt8) {
        GenerateU8(o_, &templates_[label * elems_], index, out, elems_);
      } else {
        GenerateU8(o_, &templates_[label * elems_], index, tmp.data(), elems_);
        ConvertElems(Elem::kU8, tmp.data(), o_.dtype, 1.f / 255.f, out, elems_);
      }
    }
  }

  SyntheticOptions o_;
  SourceShape shape_;
  uint64_t elems_ = 0;
  std::vector<uint8_t> templates_;
  uint64_t block_samples_ = 0;
  uint64_t total_blocks_ = 0;

  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;      // guarded by mu_
  uint64_t claimed_ = 0;   // blocks handed to workers; guarded by mu_
  uint64_t consumed_ = 0;  // blocks the consumer is done with; guarded by mu_
  int64_t cur_ = -1;       // consumer side only
  uint64_t pos_ = 0;       // consumer side only
};

}  // namespace

// The most bytes of samples a synthetic dataset may hold.
constexpr Uint128 kMaxSyntheticBytes = Uint128{1} << 62;

uint64_t SyntheticDatasetId(const SyntheticOptions& o) {
  uint64_t h = SplitMix64(o.seed ^ 0x53594e5448455449ull);
  for (uint64_t v : {o.samples, uint64_t{o.channels}, uint64_t{o.height}, uint64_t{o.width},
                     uint64_t{o.classes}, uint64_t{o.sorted}, static_cast<uint64_t>(o.dtype)}) {
    h = SplitMix64(h ^ v);
  }
  return h | 1;  // never 0, which asks the writer for a random id
}

uint32_t SyntheticLabel(const SyntheticOptions& o, uint64_t sample) {
  if (o.sorted) {
    return static_cast<uint32_t>(static_cast<Uint128>(sample) * o.classes / o.samples);
  }
  const uint64_t h = SplitMix64(SplitMix64(o.seed ^ kLabelSalt) + sample);
  return static_cast<uint32_t>(((h >> 32) * o.classes) >> 32);
}

void SyntheticTemplate(const SyntheticOptions& o, uint32_t label, uint8_t* out) {
  Xoshiro256 rng(o.seed, kTemplateStream + label);
  constexpr int kWaves = 3;
  const double two_pi = 2 * std::numbers::pi;
  for (uint32_t c = 0; c < o.channels; ++c) {
    double fx[kWaves], fy[kWaves], phase[kWaves];
    for (int k = 0; k < kWaves; ++k) {
      fx[k] = (rng.Uniform() * 6 - 3) / o.width;  // up to three cycles across the image
      fy[k] = (rng.Uniform() * 6 - 3) / o.height;
      phase[k] = rng.Uniform() * two_pi;
    }
    for (uint32_t y = 0; y < o.height; ++y) {
      for (uint32_t x = 0; x < o.width; ++x) {
        double v = 0;
        for (int k = 0; k < kWaves; ++k) v += std::sin(two_pi * (fx[k] * x + fy[k] * y) + phase[k]);
        const double unit = 0.5 + 0.5 * v / kWaves;
        out[(uint64_t{c} * o.height + y) * o.width + x] =
            static_cast<uint8_t>(std::lround(std::clamp(unit, 0.0, 1.0) * 255));
      }
    }
  }
}

Result<std::unique_ptr<SampleSource>> MakeSyntheticSource(const SyntheticOptions& o) {
  if (o.samples == 0) return Status::InvalidArgument("--samples must be at least 1");
  if (o.classes == 0) return Status::InvalidArgument("--classes must be at least 1");
  if (!IsImageDType(o.dtype)) {
    return Status::InvalidArgument("--dtype must be uint8, float16, bfloat16 or float32");
  }
  if (o.channels == 0 || o.height == 0 || o.width == 0) {
    return Status::InvalidArgument("--shape needs C,H,W all at least 1");
  }
  // Everything the source allocates is sized from these, so each size is checked before it is
  // computed: the sample (64 x 2^29 x 2^29 wrapped to 0 elements and crashed; 3 x 999999999 x
  // 999999999 threw length_error), one template per class, one block per thread.
  const std::vector<uint64_t> shape = {o.channels, o.height, o.width};
  if (Status st = format::CheckSampleShape(shape, o.dtype); !st.ok()) {
    return Status::Usage("--shape: " + st.message());
  }
  if (o.classes > format::MaxClassesFor(DType::kInt32)) {
    return Status::Usage("--classes " + std::to_string(o.classes) + ": at most " +
                         std::to_string(format::MaxClassesFor(DType::kInt32)));
  }
  const uint64_t elems = uint64_t{o.channels} * o.height * o.width;  // checked above
  // The dataset's bytes: 2^64-1 samples wrapped the block count to 0 ("input ended after 0 of
  // ... samples"). A file's offsets are 64-bit; 2^62 bytes is past any disk.
  const Uint128 total = static_cast<Uint128>(o.samples) * elems * DTypeSize(o.dtype);
  if (total > kMaxSyntheticBytes) {
    return Status::Usage("--samples " + std::to_string(o.samples) + " of " +
                         format::ShapeText(shape) + " " + std::string(DTypeName(o.dtype)) +
                         " make more than 2^62 bytes, more than a dataset holds");
  }
  if (static_cast<Uint128>(o.classes) * elems > kMaxTemplateBytes) {
    return Status::Usage("--classes " + std::to_string(o.classes) + " with samples of " +
                         format::ShapeText(shape) +
                         ": the generator keeps a template per class, more than " +
                         std::to_string(kMaxTemplateBytes >> 30) + " GiB of them");
  }
  if (o.threads > kMaxThreads) {
    return Status::Usage("--threads " + std::to_string(o.threads) + ": at most " +
                         std::to_string(kMaxThreads));
  }
  return std::unique_ptr<SampleSource>(new SyntheticSource(o));
}

}  // namespace rf::convert
