#include "tools/convert/block_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "tools/convert/elem_type.h"
#include "tools/convert/stage_threads.h"

namespace rf::convert {
namespace {

constexpr uint32_t kMaxBlocks = 4;
// A worker decodes and converts a batch of samples at a time, sized to stay in its core's L2;
// blocks are handed out in pieces of a few batches.
constexpr uint64_t kBatchBytes = 512 << 10;
constexpr uint64_t kPieceBytes = 2 << 20;

void StoreLabel(DType t, int64_t v, void* base, size_t i) {
  switch (t) {
    case DType::kUInt8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      return;
    case DType::kUInt16:
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v);
      return;
    default:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      return;
  }
}

// The first thing wrong with a range of samples, kept as facts: the message is made on the
// calling thread once the others have stopped (it asks the source where the sample is).
struct Problem {
  enum Kind { kNone, kLabel, kNonFinite, kOverflow, kNoFit };
  Kind kind = kNone;
  uint64_t sample = 0;   // in the input
  uint64_t element = 0;  // within the sample
  int64_t label = 0;     // kLabel
  std::string value;     // kNoFit: the value as text
};

struct Piece {
  uint64_t begin = 0, end = 0;  // samples of the block
  Problem input;                // a NaN or infinite input value
  Problem output;               // a value the stored dtype cannot hold
};

// One block of the ring. The reader owns it from `free` until it queues the pieces, the workers
// own their pieces until `ready`, then the sink's thread until it sets `free` again; the flags
// and pieces_left are guarded by the pipeline's mutex.
struct Slot {
  BlockBuffers in;
  SampleBlock block;
  std::vector<uint8_t> out;     // converted samples (empty: the block's own bytes are stored)
  std::vector<uint8_t> labels;  // in the label dtype
  std::vector<double> sums;
  std::vector<Piece> pieces;
  Status read_error;
  Problem label_problem;
  size_t pieces_left = 0;
  bool free = true, ready = false, end = false;
};

class BlockPipeline {
 public:
  BlockPipeline(SampleSource& source, const BlockConversion& conv, const DatasetWriter& sums,
                const PipelineOptions& options)
      : source_(source), conv_(conv), sums_(sums), per_sum_(sums.ChannelSumsPerSample()) {
    const SourceShape& shape = source.shape();
    elems_ = shape.SampleElems();
    in_bytes_ = shape.SampleBytes();
    out_bytes_ = elems_ * DTypeSize(conv.stored);
    const BlockPlan plan = PlanBlocks(shape, conv.stored, options.memory_budget, per_sum_);
    block_samples_ = plan.samples;
    slots_.resize(plan.blocks);
    batch_ = std::max<uint64_t>(1, kBatchBytes / in_bytes_);
    if (batch_ >= 16) batch_ = batch_ / 16 * 16;  // whole stripes of the transpose (transpose.h)
    piece_ = batch_ * std::max<uint64_t>(1, kPieceBytes / (batch_ * in_bytes_));
    // The stored bytes are a copy unless they are the bytes read, as read.
    copy_out_ = !conv.passthrough || source.decodes();
    stages_.Start([this] { ReadLoop(); });
    for (uint32_t i = 0; i < std::max<uint32_t>(1, options.threads); ++i) {
      stages_.Start([this] { WorkLoop(); });
    }
  }

  ~BlockPipeline() { stages_.Stop(); }

  Status Run(const std::function<Status(const ConvertedBlock&)>& sink) {
    for (uint64_t seq = 0;; ++seq) {
      Slot& s = slots_[seq % slots_.size()];
      {
        std::unique_lock lock(mu_);
        ready_cv_.wait(lock, [&] { return s.ready || stages_.failed(); });
      }
      stages_.RethrowFailure();
      if (!s.read_error.ok()) return Stopped(s.read_error);
      if (s.end) break;
      const Problem* p = &s.label_problem;
      for (const Piece& piece : s.pieces) {  // a bad input value before any conversion failure
        if (p->kind == Problem::kNone) p = &piece.input;
      }
      for (const Piece& piece : s.pieces) {
        if (p->kind == Problem::kNone) p = &piece.output;
      }
      if (p->kind != Problem::kNone) {
        stages_.Stop();
        return Describe(*p);
      }
      ConvertedBlock b;
      b.first = s.block.first;
      b.count = s.block.count;
      b.samples = copy_out_ ? s.out.data() : s.block.samples;
      b.labels = conv_.labeled ? s.labels.data() : nullptr;
      b.channel_sums = s.sums.data();
      if (Status st = sink(b); !st.ok()) return Stopped(st);
      {
        std::lock_guard lock(mu_);
        s.ready = false;
        s.free = true;
      }
      free_cv_.notify_one();
    }
    stages_.Stop();
    stages_.RethrowFailure();
    return Status::Ok();
  }

 private:
  void NotifyAll() {
    free_cv_.notify_all();
    work_cv_.notify_all();
    ready_cv_.notify_all();
  }

  Status Stopped(const Status& st) {
    stages_.Stop();
    return st;
  }

  void MarkReady(Slot& s) {
    {
      std::lock_guard lock(mu_);
      s.ready = true;
    }
    ready_cv_.notify_one();
  }

  void ReadLoop() {
    for (uint64_t seq = 0;; ++seq) {
      Slot& s = slots_[seq % slots_.size()];
      {
        std::unique_lock lock(mu_);
        free_cv_.wait(lock, [&] { return s.free || stages_.stopped(); });
        if (stages_.stopped()) return;
        s.free = false;
      }
      Result<SampleBlock> r = source_.Read(block_samples_, s.in);
      if (!r.ok()) {
        s.read_error = r.status();
        return MarkReady(s);
      }
      s.block = *r;
      if (s.block.count == 0) {
        s.end = true;
        return MarkReady(s);
      }
      if (!CheckLabels(s)) return MarkReady(s);
      const uint64_t n = s.block.count;
      if (copy_out_) s.out.resize(n * out_bytes_);
      s.sums.resize(n * per_sum_);
      s.pieces.clear();
      for (uint64_t b = 0; b < n; b += piece_) {
        Piece& p = s.pieces.emplace_back();
        p.begin = b;
        p.end = std::min(n, b + piece_);
      }
      {
        std::lock_guard lock(mu_);
        s.pieces_left = s.pieces.size();
        for (Piece& p : s.pieces) work_.push_back({&s, &p});
      }
      work_cv_.notify_all();
    }
  }

  // Checks the block's labels and stores them in the label dtype; false on a bad one.
  bool CheckLabels(Slot& s) {
    if (!conv_.labeled) return true;
    const SampleBlock& b = s.block;
    s.labels.resize(b.count * DTypeSize(conv_.label_dtype));
    for (uint64_t i = 0; i < b.count; ++i) {
      const int64_t v = b.labels[i];
      if (v < 0 || v > conv_.max_label) {
        s.label_problem.kind = Problem::kLabel;
        s.label_problem.sample = b.first + i;
        s.label_problem.label = v;
        return false;
      }
      StoreLabel(conv_.label_dtype, v, s.labels.data(), i);
    }
    return true;
  }

  void WorkLoop() {
    std::vector<uint8_t> scratch;
    for (;;) {
      std::pair<Slot*, Piece*> job;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] { return !work_.empty() || stages_.stopped(); });
        if (stages_.stopped()) return;
        job = work_.front();
        work_.pop_front();
      }
      Convert(*job.first, *job.second, scratch);
      if (scratch.capacity() > 4 * kBatchBytes)
        std::vector<uint8_t>().swap(scratch);  // a huge sample's
      bool done;
      {
        std::lock_guard lock(mu_);
        done = --job.first->pieces_left == 0;
        if (done) job.first->ready = true;
      }
      if (done) ready_cv_.notify_one();
    }
  }

  // Decodes, checks and converts the piece's samples a batch at a time, and sums them. After a
  // value the stored dtype cannot hold, only the input is still checked: a NaN later in the block
  // is the error a whole-block check would report first.
  void Convert(Slot& s, Piece& p, std::vector<uint8_t>& scratch) {
    const SampleBlock& b = s.block;
    const SourceShape& shape = source_.shape();
    for (uint64_t m0 = p.begin; m0 < p.end; m0 += batch_) {
      const uint64_t m1 = std::min(p.end, m0 + batch_);
      const uint64_t elems = (m1 - m0) * elems_;
      uint8_t* out = copy_out_ ? s.out.data() + m0 * out_bytes_ : nullptr;
      const uint8_t* in;
      if (conv_.passthrough) {
        in = source_.Decode(b, m0, m1, out);  // straight into the stored samples
      } else {
        if (source_.decodes()) scratch.resize((m1 - m0) * in_bytes_);
        in = source_.Decode(b, m0, m1, scratch.data());
      }
      if (const uint64_t bad = FirstNonFinite(shape.elem, in, elems); bad != elems) {
        p.input = At(Problem::kNonFinite, b.first + m0, bad);
        return;
      }
      if (p.output.kind != Problem::kNone) continue;
      if (!conv_.passthrough) {
        if (conv_.ids) {
          if (const uint64_t bad = ConvertIntegers(shape.elem, in, conv_.stored, out, elems);
              bad != elems) {
            p.output = At(Problem::kNoFit, b.first + m0, bad);
            p.output.value = IntegerText(shape.elem, in, bad);
            continue;
          }
        } else {
          ConvertElems(shape.elem, in, conv_.stored, conv_.scale, out, elems);
          if (const uint64_t bad = FirstNonFinite(ElemOf(conv_.stored), out, elems); bad != elems) {
            p.output = At(Problem::kOverflow, b.first + m0, bad);
            continue;
          }
        }
        in = out;
      }
      if (per_sum_ != 0) sums_.ChannelSums(in, m1 - m0, s.sums.data() + m0 * per_sum_);
    }
  }

  // The problem at element `bad` of the elements that start at sample `first`.
  Problem At(Problem::Kind kind, uint64_t first, uint64_t bad) const {
    Problem p;
    p.kind = kind;
    p.sample = first + bad / elems_;
    p.element = bad % elems_;
    return p;
  }

  // The one-line error of a problem, naming the file and the byte where the sample (or label)
  // starts. Called once every thread has stopped.
  Status Describe(const Problem& p) const {
    if (p.kind == Problem::kLabel) {
      const InputPosition at = source_.LabelAt(p.sample);
      std::string why = "label " + std::to_string(p.label) + " of sample " +
                        std::to_string(p.sample) + " is outside [0, " +
                        std::to_string(conv_.max_label + 1) + ")";
      if (conv_.classes_flag != 0) why += " (--classes " + std::to_string(conv_.classes_flag) + ")";
      return std::move(Status::Corruption(at.path, why).WithOffset(at.offset));
    }
    const InputPosition at = source_.SampleAt(p.sample);
    const std::string stored = std::string(DTypeName(conv_.stored));
    std::string why;
    if (p.kind == Problem::kNoFit) {
      why = "value " + p.value + " (element " + std::to_string(p.element) + " of sample " +
            std::to_string(p.sample) + ") does not fit " + stored;
    } else {
      // A dataset holding them has no finite channel statistics, so no reader could open it.
      why = "sample " + std::to_string(p.sample) + " (which starts here) holds a";
      why += p.kind == Problem::kNonFinite ? " NaN or infinite value"
                                           : " value that overflows " + stored;
      why += " at element " + std::to_string(p.element) +
             "; a dataset needs finite samples for its channel statistics";
    }
    return std::move(Status::Corruption(at.path, why).WithOffset(at.offset));
  }

  SampleSource& source_;
  const BlockConversion conv_;
  const DatasetWriter& sums_;
  const size_t per_sum_;
  uint64_t elems_ = 0, in_bytes_ = 0, out_bytes_ = 0;
  uint64_t block_samples_ = 1, batch_ = 1, piece_ = 1;
  bool copy_out_ = true;
  std::vector<Slot> slots_;

  std::mutex mu_;
  std::condition_variable free_cv_;            // a slot freed (the reader waits)
  std::condition_variable work_cv_;            // pieces queued (the workers wait)
  std::condition_variable ready_cv_;           // a slot ready (Run waits)
  std::deque<std::pair<Slot*, Piece*>> work_;  // guarded by mu_
  // The reader and the workers; their stop flag and failure guarded by mu_. Last: its threads
  // are joined before anything they use is destroyed.
  StageThreads stages_{mu_, [this] { NotifyAll(); }};
};

}  // namespace

BlockPlan PlanBlocks(const SourceShape& shape, DType stored, uint64_t memory_budget,
                     size_t sums_per_sample) {
  // A sample's input bytes, its converted copy, its label (as read and as stored) and its sums.
  const uint64_t per_sample = shape.SampleBytes() + shape.SampleElems() * DTypeSize(stored) +
                              2 * sizeof(int64_t) + 4 + sums_per_sample * sizeof(double);
  BlockPlan plan;
  plan.blocks =
      static_cast<uint32_t>(std::clamp<uint64_t>(memory_budget / per_sample, 1, kMaxBlocks));
  plan.samples = std::max<uint64_t>(1, memory_budget / plan.blocks / per_sample);
  return plan;
}

Status ConvertBlocks(SampleSource& source, const BlockConversion& conversion,
                     const DatasetWriter& sums, const PipelineOptions& options,
                     const std::function<Status(const ConvertedBlock&)>& sink) {
  BlockPipeline pipeline(source, conversion, sums, options);
  return pipeline.Run(sink);
}

}  // namespace rf::convert
