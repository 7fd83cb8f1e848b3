#include "model/checkpoint.h"

#include <fcntl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/augment_spec.h"
#include "io/checksum.h"
#include "io/file.h"

namespace rf {
namespace {

// The format is little-endian; ringfeed builds only for little-endian hosts, so values are copied
// as they lie in memory.
static_assert(std::endian::native == std::endian::little);

// More blocks than any 2x2-pooled input could take (each halves the size; 2^16 > any dimension).
constexpr uint32_t kMaxBlocks = 16;

class Encoder {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof v);
    std::memcpy(out_.data() + at, &v, sizeof v);
  }
  void PutFloats(const std::vector<float>& v) {
    Put<uint64_t>(v.size());
    const size_t at = out_.size();
    out_.resize(at + v.size() * sizeof(float));
    std::memcpy(out_.data() + at, v.data(), v.size() * sizeof(float));
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Reads fields in order; every read is bounds-checked first, so a truncated or damaged file fails
// before anything is allocated from a size it claims.
class Decoder {
 public:
  Decoder(const uint8_t* data, size_t n, const std::string& path)
      : data_(data), n_(n), path_(path) {}

  template <typename T>
  Status Get(T* v, const char* what) {
    RF_RETURN_IF_ERROR(Need(sizeof *v, what));
    std::memcpy(v, data_ + at_, sizeof *v);
    at_ += sizeof *v;
    return Status::Ok();
  }
  // A tensor of exactly `expected` floats.
  Status GetFloats(std::vector<float>* v, size_t expected, const std::string& what) {
    const uint64_t field = at_;
    uint64_t count = 0;
    RF_RETURN_IF_ERROR(Get(&count, what.c_str()));
    if (count != expected) {
      return Error(field, what + " has " + std::to_string(count) + " values; the model needs " +
                              std::to_string(expected));
    }
    RF_RETURN_IF_ERROR(Need(count * sizeof(float), what.c_str()));
    v->resize(count);
    std::memcpy(v->data(), data_ + at_, count * sizeof(float));
    at_ += count * sizeof(float);
    return Status::Ok();
  }
  Status Error(uint64_t offset, const std::string& msg) const {
    Status st = Status::Corruption(path_, "checkpoint: " + msg);
    st.WithOffset(offset);
    return st;
  }
  uint64_t at() const { return at_; }
  uint64_t size() const { return n_; }

 private:
  Status Need(uint64_t bytes, const char* what) const {
    if (bytes > n_ - at_) {
      return Error(n_, std::string("file is truncated (") + what + " needs bytes up to " +
                           std::to_string(at_ + bytes) + ")");
    }
    return Status::Ok();
  }

  const uint8_t* data_;
  uint64_t n_;
  uint64_t at_ = 0;
  const std::string& path_;
};

// A float for messages, NaN and infinities included ("nan", "inf", "-0.5").
std::string FloatText(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

bool SameModel(const ModelConfig& a, const ModelConfig& b) {
  return a.channels == b.channels && a.height == b.height && a.width == b.width &&
         a.classes == b.classes && a.conv == b.conv && a.hidden == b.hidden &&
         a.batch_norm == b.batch_norm;
}

Status CheckTensors(const Tensors& t, const std::vector<ParamShape>& shapes, const char* what) {
  if (t.t.size() != shapes.size()) {
    return Status::InvalidArgument(std::string("checkpoint ") + what + ": " +
                                   std::to_string(t.t.size()) + " tensors, the model has " +
                                   std::to_string(shapes.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (t.t[i].size() != shapes[i].count()) {
      return Status::InvalidArgument(std::string("checkpoint ") + what + " " + shapes[i].name +
                                     ": " + std::to_string(t.t[i].size()) + " values, expected " +
                                     std::to_string(shapes[i].count()));
    }
    // A diverged run's state: refused, so the last good checkpoint stays the file on disk.
    const auto bad =
        std::find_if(t.t[i].begin(), t.t[i].end(), [](float v) { return !std::isfinite(v); });
    if (bad != t.t[i].end()) {
      return Status::Aborted(std::string("checkpoint ") + what + " " + shapes[i].name + ": value " +
                             std::to_string(bad - t.t[i].begin()) + " is " + FloatText(*bad) +
                             " (the run diverged); not written");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string DescribeModel(const ModelConfig& c) {
  std::string s = std::to_string(c.channels) + "x" + std::to_string(c.height) + "x" +
                  std::to_string(c.width) + ", " + std::to_string(c.classes) + " classes, conv ";
  for (size_t i = 0; i < c.conv.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(c.conv[i]);
  }
  return s + ", hidden " + std::to_string(c.hidden) + (c.batch_norm ? ", batch norm" : "");
}

Result<std::vector<uint8_t>> EncodeCheckpoint(const Checkpoint& c) {
  RF_RETURN_IF_ERROR(c.config.Validate());
  const std::vector<ParamShape> shapes = ParameterShapes(c.config);
  RF_RETURN_IF_ERROR(CheckTensors(c.params, shapes, "parameters"));
  {
    const size_t slots = OptimizerSlots(c.optimizer.kind);
    if (c.momentum.t.size() != slots * shapes.size()) {
      return Status::InvalidArgument(
          "checkpoint momentum (optimizer state): " + std::to_string(c.momentum.t.size()) +
          " tensors; " + std::to_string(slots) + " slot(s) of the model's " +
          std::to_string(shapes.size()) + " expected");
    }
    for (size_t slot = 0; slot < slots; ++slot) {
      Tensors one;
      one.t.assign(c.momentum.t.begin() + slot * shapes.size(),
                   c.momentum.t.begin() + (slot + 1) * shapes.size());
      RF_RETURN_IF_ERROR(CheckTensors(one, shapes, slot == 0 ? "momentum" : "second moment"));
    }
  }
  if (c.config.conv.size() > kMaxBlocks) return Status::InvalidArgument("too many conv blocks");
  RF_RETURN_IF_ERROR(
      CheckTensors(c.running_stats, RunningStatShapes(c.config), "batch norm statistics"));

  Encoder e;
  for (char m : kCheckpointMagic) e.Put(m);
  e.Put(kCheckpointVersion);
  const ModelConfig& m = c.config;
  for (uint32_t v : {m.channels, m.height, m.width, m.classes}) e.Put(v);
  e.Put<uint32_t>(m.conv.size());
  for (uint32_t v : m.conv) e.Put(v);
  e.Put(m.hidden);
  for (float v : {c.optimizer.lr, c.optimizer.momentum, c.optimizer.weight_decay}) e.Put(v);
  for (uint64_t v : {c.seed, c.epoch, c.next_sample, c.step}) e.Put(v);
  e.Put(c.batch_size);
  e.Put(c.order_window);
  e.Put(c.dataset_id);
  e.Put(c.dataset_samples);
  if (c.world_size == 0 || c.stretches.size() > kMaxCheckpointStretches) {
    return Status::InvalidArgument("checkpoint: world size 0 or too many stretches");
  }
  e.Put(c.world_size);
  e.Put<uint32_t>(c.stretches.size());
  for (const CheckpointStretch& st : c.stretches) {
    e.Put(st.world_size);
    e.Put(st.position);
  }
  const OptimizerConfig& o = c.optimizer;
  e.Put(static_cast<uint32_t>(o.kind));
  for (float v : {o.beta1, o.beta2, o.eps, o.label_smoothing}) e.Put(v);
  e.Put(static_cast<uint32_t>(c.schedule.kind));
  e.Put(c.schedule.warmup_epochs);
  e.Put(c.schedule_span.steps_per_epoch);
  e.Put(c.schedule_span.epochs);
  const AugmentParams augment = c.augment.value_or(AugmentParams{});
  e.Put(augment.crop_pad);
  e.Put(augment.flip);
  e.Put(augment.erase_threshold);
  e.Put<uint32_t>(m.batch_norm ? 1 : 0);
  e.Put<uint32_t>(shapes.size());
  for (const auto& t : c.params.t) e.PutFloats(t);
  for (const auto& t : c.momentum.t) e.PutFloats(t);
  for (const auto& t : c.running_stats.t) e.PutFloats(t);
  e.Put<uint64_t>(Checksum(e.bytes().data(), e.bytes().size()));
  return std::move(e.bytes());
}

Result<Checkpoint> DecodeCheckpoint(const uint8_t* data, size_t n, const std::string& path) {
  Decoder d(data, n, path);
  char magic[8];
  for (char& ch : magic) RF_RETURN_IF_ERROR(d.Get(&ch, "magic"));
  if (std::memcmp(magic, kCheckpointMagic, sizeof magic) != 0) {
    return d.Error(0, "not a ringfeed checkpoint (bad magic)");
  }
  uint32_t version = 0;
  RF_RETURN_IF_ERROR(d.Get(&version, "version"));
  if (version < 1 || version > kCheckpointVersion) {
    return d.Error(8, "unsupported version " + std::to_string(version) + " (this build reads " +
                          std::to_string(kCheckpointVersion) + ")");
  }

  Checkpoint c;
  ModelConfig& m = c.config;
  const uint64_t model_at = d.at();
  for (uint32_t* v : {&m.channels, &m.height, &m.width, &m.classes}) {
    RF_RETURN_IF_ERROR(d.Get(v, "model"));
  }
  uint32_t blocks = 0;
  RF_RETURN_IF_ERROR(d.Get(&blocks, "model"));
  if (blocks > kMaxBlocks) return d.Error(d.at() - 4, std::to_string(blocks) + " conv blocks");
  m.conv.assign(blocks, 0);
  for (uint32_t& v : m.conv) RF_RETURN_IF_ERROR(d.Get(&v, "model"));
  RF_RETURN_IF_ERROR(d.Get(&m.hidden, "model"));
  if (Status st = m.Validate(); !st.ok()) {
    return d.Error(model_at, "invalid model (" + st.message() + ")");
  }

  const uint64_t sgd_at = d.at();
  for (float* v : {&c.optimizer.lr, &c.optimizer.momentum, &c.optimizer.weight_decay}) {
    RF_RETURN_IF_ERROR(d.Get(v, "sgd"));
  }
  const uint64_t position_at = d.at();
  for (uint64_t* v : {&c.seed, &c.epoch, &c.next_sample, &c.step}) {
    RF_RETURN_IF_ERROR(d.Get(v, "position"));
  }
  RF_RETURN_IF_ERROR(d.Get(&c.batch_size, "position"));
  RF_RETURN_IF_ERROR(d.Get(&c.order_window, "position"));
  RF_RETURN_IF_ERROR(d.Get(&c.dataset_id, "position"));
  RF_RETURN_IF_ERROR(d.Get(&c.dataset_samples, "position"));
  if (version >= 2) {
    const uint64_t ranks_at = d.at();
    uint32_t stretches = 0;
    RF_RETURN_IF_ERROR(d.Get(&c.world_size, "ranks"));
    RF_RETURN_IF_ERROR(d.Get(&stretches, "ranks"));
    if (c.world_size == 0 || stretches > kMaxCheckpointStretches) {
      return d.Error(ranks_at, "world size " + std::to_string(c.world_size) + " with " +
                                   std::to_string(stretches) + " stretches");
    }
    c.stretches.resize(stretches);
    for (CheckpointStretch& st : c.stretches) {
      RF_RETURN_IF_ERROR(d.Get(&st.world_size, "ranks"));
      RF_RETURN_IF_ERROR(d.Get(&st.position, "ranks"));
      if (st.world_size == 0) return d.Error(d.at() - 12, "a stretch of world size 0");
    }
  }

  uint64_t optimizer_at = 0;
  uint32_t optimizer_kind = 0, schedule_kind = 0;
  if (version >= 3) {
    optimizer_at = d.at();
    OptimizerConfig& o = c.optimizer;
    RF_RETURN_IF_ERROR(d.Get(&optimizer_kind, "optimizer"));
    for (float* v : {&o.beta1, &o.beta2, &o.eps, &o.label_smoothing}) {
      RF_RETURN_IF_ERROR(d.Get(v, "optimizer"));
    }
    RF_RETURN_IF_ERROR(d.Get(&schedule_kind, "schedule"));
    RF_RETURN_IF_ERROR(d.Get(&c.schedule.warmup_epochs, "schedule"));
    RF_RETURN_IF_ERROR(d.Get(&c.schedule_span.steps_per_epoch, "schedule"));
    RF_RETURN_IF_ERROR(d.Get(&c.schedule_span.epochs, "schedule"));
    AugmentParams augment;
    RF_RETURN_IF_ERROR(d.Get(&augment.crop_pad, "augmentation"));
    RF_RETURN_IF_ERROR(d.Get(&augment.flip, "augmentation"));
    RF_RETURN_IF_ERROR(d.Get(&augment.erase_threshold, "augmentation"));
    c.augment = augment;
    // An unknown kind is refused here, before it sizes the state read below.
    if (optimizer_kind > static_cast<uint32_t>(OptimizerKind::kAdamW)) {
      return d.Error(optimizer_at, "unknown optimizer " + std::to_string(optimizer_kind));
    }
    if (schedule_kind > static_cast<uint32_t>(LrScheduleKind::kOneCycle)) {
      return d.Error(optimizer_at + 20, "unknown lr schedule " + std::to_string(schedule_kind));
    }
    c.optimizer.kind = static_cast<OptimizerKind>(optimizer_kind);
    c.schedule.kind = static_cast<LrScheduleKind>(schedule_kind);
  }
  if (version >= 4) {
    uint32_t batch_norm = 0;
    RF_RETURN_IF_ERROR(d.Get(&batch_norm, "batch norm"));
    if (batch_norm > 1) return d.Error(d.at() - 4, "batch norm flag " + std::to_string(batch_norm));
    m.batch_norm = batch_norm == 1;
    if (Status st = m.Validate(); !st.ok()) {
      return d.Error(model_at, "invalid model (" + st.message() + ")");
    }
  }

  const std::vector<ParamShape> shapes = ParameterShapes(m);
  uint32_t tensors = 0;
  RF_RETURN_IF_ERROR(d.Get(&tensors, "tensor count"));
  if (tensors != shapes.size()) {
    return d.Error(d.at() - 4, std::to_string(tensors) + " tensors; the model has " +
                                   std::to_string(shapes.size()));
  }
  Status nonfinite = Status::Ok();  // a forged value; reported once the checksum holds
  // Reads one tensor of `count` floats; the first value that is not finite (or, with
  // `nonnegative`, below zero) in the file becomes `nonfinite`, named by `name` and its offset.
  const auto read_tensor = [&](std::vector<float>* t, size_t count, const std::string& name,
                               bool nonnegative) -> Status {
    RF_RETURN_IF_ERROR(d.GetFloats(t, count, name));
    const auto bad = std::find_if(t->begin(), t->end(), [nonnegative](float v) {
      return !std::isfinite(v) || (nonnegative && v < 0);
    });
    if (bad != t->end() && nonfinite.ok()) {
      const uint64_t k = bad - t->begin();
      nonfinite = d.Error(d.at() - 4 * (t->size() - k),
                          name + " value " + std::to_string(k) + " is " + FloatText(*bad));
    }
    return Status::Ok();
  };
  const size_t slots = OptimizerSlots(c.optimizer.kind);
  c.params.t.resize(shapes.size());
  c.momentum.t.resize(slots * shapes.size());
  for (size_t at = 0; at < (1 + slots) * shapes.size(); ++at) {
    const size_t i = at % shapes.size();
    const std::string kind = at < shapes.size()       ? "parameter "
                             : at < 2 * shapes.size() ? "momentum "
                                                      : "second moment ";
    std::vector<float>& t = at < shapes.size() ? c.params.t[i] : c.momentum.t[at - shapes.size()];
    RF_RETURN_IF_ERROR(read_tensor(&t, shapes[i].count(), kind + shapes[i].name, false));
  }

  const std::vector<ParamShape> stat_shapes = RunningStatShapes(m);
  c.running_stats.t.resize(stat_shapes.size());
  for (size_t i = 0; i < stat_shapes.size(); ++i) {
    const bool variance = i >= m.conv.size();  // the means first, then the variances
    RF_RETURN_IF_ERROR(
        read_tensor(&c.running_stats.t[i], stat_shapes[i].count(), stat_shapes[i].name, variance));
  }

  const uint64_t payload = d.at();
  uint64_t stored = 0;
  RF_RETURN_IF_ERROR(d.Get(&stored, "checksum"));
  if (d.at() != d.size()) {
    return d.Error(d.at(),
                   std::to_string(d.size() - d.at()) + " trailing bytes after the checksum");
  }
  if (Checksum(data, payload) != stored) {
    return d.Error(payload, "checksum mismatch (the file is damaged)");
  }
  // Fields a run cannot have written, in a file whose checksum holds (forged, or written by a
  // broken build): each refused at its own offset before anything trains from it.
  const auto finite = [](float v) { return std::isfinite(v); };
  if (!finite(c.optimizer.lr)) return d.Error(sgd_at, "learning rate " + FloatText(c.optimizer.lr));
  if (!finite(c.optimizer.momentum) || c.optimizer.momentum < 0)
    return d.Error(sgd_at + 4, "momentum " + FloatText(c.optimizer.momentum));
  if (!finite(c.optimizer.weight_decay) || c.optimizer.weight_decay < 0)
    return d.Error(sgd_at + 8, "weight decay " + FloatText(c.optimizer.weight_decay));
  if (version >= 3) {
    const OptimizerConfig& o = c.optimizer;
    const auto unit = [&](float v) { return finite(v) && v >= 0 && v < 1; };
    if (!unit(o.beta1)) return d.Error(optimizer_at + 4, "beta1 " + FloatText(o.beta1));
    if (!unit(o.beta2)) return d.Error(optimizer_at + 8, "beta2 " + FloatText(o.beta2));
    if (!finite(o.eps) || !(o.eps > 0))
      return d.Error(optimizer_at + 12, "eps " + FloatText(o.eps));
    if (!unit(o.label_smoothing)) {
      return d.Error(optimizer_at + 16, "label smoothing " + FloatText(o.label_smoothing));
    }
    if (!finite(c.schedule.warmup_epochs) || c.schedule.warmup_epochs < 0) {
      return d.Error(optimizer_at + 24, "warmup epochs " + FloatText(c.schedule.warmup_epochs));
    }
    if (c.augment->crop_pad > kMaxAugmentCropPad) {
      return d.Error(optimizer_at + 44,
                     "augmentation crop padding " + std::to_string(c.augment->crop_pad));
    }
    if (c.augment->flip > 1) {
      return d.Error(optimizer_at + 48, "augmentation flip " + std::to_string(c.augment->flip));
    }
    if (c.augment->erase_threshold > kAugmentEraseAlways) {
      return d.Error(optimizer_at + 52,
                     "augmentation erase threshold " + std::to_string(c.augment->erase_threshold));
    }
  }
  if (c.epoch > kMaxCheckpointEpoch) {
    return d.Error(position_at + 8, "epoch " + std::to_string(c.epoch) + " (at most " +
                                        std::to_string(kMaxCheckpointEpoch) + ")");
  }
  if (c.dataset_samples != 0 && c.next_sample > c.dataset_samples) {
    return d.Error(position_at + 16, "next sample " + std::to_string(c.next_sample) +
                                         " is past the dataset's " +
                                         std::to_string(c.dataset_samples) + " samples");
  }
  if (c.batch_size == 0) return d.Error(position_at + 32, "batch size 0");
  RF_RETURN_IF_ERROR(nonfinite);
  return c;
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& c) {
  RF_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, EncodeCheckpoint(c));
  return WriteFileAtomically(path, bytes.data(), bytes.size());
}

Result<std::vector<uint8_t>> ReadCheckpointBytes(const std::string& path) {
  RF_ASSIGN_OR_RETURN(File f, File::Open(path, O_RDONLY));
  RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  std::vector<uint8_t> bytes(size);
  RF_RETURN_IF_ERROR(f.ReadAt(bytes.data(), bytes.size(), 0));
  return bytes;
}

Result<Checkpoint> ReadCheckpoint(const std::string& path) {
  RF_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadCheckpointBytes(path));
  return DecodeCheckpoint(bytes.data(), bytes.size(), path);
}

Status CheckCheckpointModel(const Checkpoint& c, const ModelConfig& requested,
                            const std::string& path) {
  if (SameModel(c.config, requested)) return Status::Ok();
  Status st = Status::InvalidArgument("checkpoint is of model " + DescribeModel(c.config) +
                                      "; asked for " + DescribeModel(requested));
  st.WithPath(path);
  return st;
}

Result<Checkpoint> LoadCheckpoint(const std::string& path, const ModelConfig& requested) {
  RF_ASSIGN_OR_RETURN(Checkpoint c, ReadCheckpoint(path));
  RF_RETURN_IF_ERROR(CheckCheckpointModel(c, requested, path));
  return c;
}

}  // namespace rf
