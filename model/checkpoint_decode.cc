// DecodeCheckpoint (model/checkpoint.h): the section readers, one per block of the file's layout,
// and the checks of the fields no run writes, made once the checksum holds. The byte reader is
// model/checkpoint_bytes.h's Decoder; the encoding and the file I/O are model/checkpoint.cc's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/augment_spec.h"
#include "io/checksum.h"
#include "model/checkpoint.h"
#include "model/checkpoint_bytes.h"

namespace rf {
namespace {

using checkpoint::Decoder;
using checkpoint::FloatText;
using checkpoint::kMaxBlocks;

// The section readers of DecodeCheckpoint, one per block of the layout (model/checkpoint.h), in
// file order. Each reads its fields and refuses at once what would mislead the reading of the rest
// (a size or kind that sizes later reads, an invalid model); fields that only a forger writes are
// checked by the Check* functions below, once the checksum holds, so a damaged file is reported as
// damaged.

Status ReadHeader(Decoder& d, uint32_t* version) {
  char magic[8];
  for (char& ch : magic) RF_RETURN_IF_ERROR(d.Get(&ch, "magic"));
  if (std::memcmp(magic, kCheckpointMagic, sizeof magic) != 0) {
    return d.Error(0, "not a ringfeed checkpoint (bad magic)");
  }
  RF_RETURN_IF_ERROR(d.Get(version, "version"));
  if (*version < 1 || *version > kCheckpointVersion) {
    return d.Error(8, "unsupported version " + std::to_string(*version) + " (this build reads " +
                          std::to_string(kCheckpointVersion) + ")");
  }
  return Status::Ok();
}

// The model without its batch norm flag (version 4 adds it after the training blocks), valid.
Status ReadModel(Decoder& d, ModelConfig* m) {
  const uint64_t model_at = d.at();
  for (uint32_t* v : {&m->channels, &m->height, &m->width, &m->classes}) {
    RF_RETURN_IF_ERROR(d.Get(v, "model"));
  }
  uint32_t blocks = 0;
  RF_RETURN_IF_ERROR(d.Get(&blocks, "model"));
  if (blocks > kMaxBlocks) return d.Error(d.at() - 4, std::to_string(blocks) + " conv blocks");
  m->conv.assign(blocks, 0);
  for (uint32_t& v : m->conv) RF_RETURN_IF_ERROR(d.Get(&v, "model"));
  RF_RETURN_IF_ERROR(d.Get(&m->hidden, "model"));
  if (Status st = m->Validate(); !st.ok()) {
    return d.Error(model_at, "invalid model (" + st.message() + ")");
  }
  return Status::Ok();
}

Status ReadSgd(Decoder& d, OptimizerConfig* o) {
  for (float* v : {&o->lr, &o->momentum, &o->weight_decay}) RF_RETURN_IF_ERROR(d.Get(v, "sgd"));
  return Status::Ok();
}

Status ReadPosition(Decoder& d, Checkpoint* c) {
  OrderSettings& order = c->order;
  for (uint64_t* v : {&order.seed, &c->epoch, &c->next_sample, &c->step}) {
    RF_RETURN_IF_ERROR(d.Get(v, "position"));
  }
  order.resumed.epoch = c->epoch;  // the stretches, if any, are of this epoch
  RF_RETURN_IF_ERROR(d.Get(&order.batch_size, "position"));
  uint32_t window = 0;
  RF_RETURN_IF_ERROR(d.Get(&window, "position"));
  c->shuffle_recorded = window != 0;
  if (window == kOrderStored) {
    order.shuffle = ShuffleMode::kNone;
  } else if (window != 0) {
    order.shuffle = ShuffleMode::kWindow;
    order.shuffle_window = window;
  }
  RF_RETURN_IF_ERROR(d.Get(&c->dataset_id, "position"));
  return d.Get(&c->dataset_samples, "position");
}

// Version 2: the world size and the stretches, whose count sizes the list.
Status ReadRanks(Decoder& d, OrderSettings* order) {
  const uint64_t ranks_at = d.at();
  uint32_t stretches = 0;
  RF_RETURN_IF_ERROR(d.Get(&order->world_size, "ranks"));
  RF_RETURN_IF_ERROR(d.Get(&stretches, "ranks"));
  if (order->world_size == 0 || stretches > kMaxCheckpointStretches) {
    return d.Error(ranks_at, "world size " + std::to_string(order->world_size) + " with " +
                                 std::to_string(stretches) + " stretches");
  }
  order->resumed.stretches.resize(stretches);
  for (EpochStretch& st : order->resumed.stretches) {
    RF_RETURN_IF_ERROR(d.Get(&st.world_size, "ranks"));
    RF_RETURN_IF_ERROR(d.Get(&st.position, "ranks"));
    if (st.world_size == 0) return d.Error(d.at() - 12, "a stretch of world size 0");
  }
  return Status::Ok();
}

// Version 3: the optimizer, whose kind sizes the state read below.
Status ReadOptimizer(Decoder& d, OptimizerConfig* o) {
  const uint64_t optimizer_at = d.at();
  uint32_t kind = 0;
  RF_RETURN_IF_ERROR(d.Get(&kind, "optimizer"));
  for (float* v : {&o->beta1, &o->beta2, &o->eps, &o->label_smoothing}) {
    RF_RETURN_IF_ERROR(d.Get(v, "optimizer"));
  }
  if (kind > static_cast<uint32_t>(OptimizerKind::kAdamW)) {
    return d.Error(optimizer_at, "unknown optimizer " + std::to_string(kind));
  }
  o->kind = static_cast<OptimizerKind>(kind);
  return Status::Ok();
}

// Version 3: the lr schedule and its span.
Status ReadSchedule(Decoder& d, LrScheduleConfig* s, LrScheduleSpan* span) {
  const uint64_t schedule_at = d.at();
  uint32_t kind = 0;
  RF_RETURN_IF_ERROR(d.Get(&kind, "schedule"));
  RF_RETURN_IF_ERROR(d.Get(&s->warmup_epochs, "schedule"));
  RF_RETURN_IF_ERROR(d.Get(&span->steps_per_epoch, "schedule"));
  RF_RETURN_IF_ERROR(d.Get(&span->epochs, "schedule"));
  if (kind > static_cast<uint32_t>(LrScheduleKind::kOneCycle)) {
    return d.Error(schedule_at, "unknown lr schedule " + std::to_string(kind));
  }
  s->kind = static_cast<LrScheduleKind>(kind);
  return Status::Ok();
}

// Version 3: the training split's augmentation.
Status ReadAugment(Decoder& d, std::optional<AugmentParams>* augment) {
  AugmentParams a;
  RF_RETURN_IF_ERROR(d.Get(&a.crop_pad, "augmentation"));
  RF_RETURN_IF_ERROR(d.Get(&a.flip, "augmentation"));
  RF_RETURN_IF_ERROR(d.Get(&a.erase_threshold, "augmentation"));
  *augment = a;
  return Status::Ok();
}

// Version 4: the model's batch norm flag, which adds tensors, so the model is validated again.
Status ReadBatchNorm(Decoder& d, ModelConfig* m, uint64_t model_at) {
  uint32_t batch_norm = 0;
  RF_RETURN_IF_ERROR(d.Get(&batch_norm, "batch norm"));
  if (batch_norm > 1) return d.Error(d.at() - 4, "batch norm flag " + std::to_string(batch_norm));
  m->batch_norm = batch_norm == 1;
  if (Status st = m->Validate(); !st.ok()) {
    return d.Error(model_at, "invalid model (" + st.message() + ")");
  }
  return Status::Ok();
}

// Version 6: the run's node_ranks and each stretch's, each at most its world size (0: global).
Status ReadPartition(Decoder& d, Checkpoint* c) {
  auto read = [&](uint32_t* node_ranks, uint32_t world) -> Status {
    RF_RETURN_IF_ERROR(d.Get(node_ranks, "partition"));
    if (*node_ranks > world) {
      return d.Error(d.at() - 4, "node_ranks " + std::to_string(*node_ranks) +
                                     " above its world size " + std::to_string(world));
    }
    return Status::Ok();
  };
  RF_RETURN_IF_ERROR(read(&c->order.node_ranks, c->order.world_size));
  for (EpochStretch& st : c->order.resumed.stretches)
    RF_RETURN_IF_ERROR(read(&st.node_ranks, st.world_size));
  for (MixtureSourceState& s : c->mixture.sources) {
    for (EpochStretch& st : s.stretches) RF_RETURN_IF_ERROR(read(&st.node_ranks, st.world_size));
  }
  return Status::Ok();
}

// Version 5: a mixture's datasets and stream, whose counts size the lists.
Status ReadMixture(Decoder& d, Checkpoint* c) {
  const uint64_t mixture_at = d.at();
  uint32_t datasets = 0;
  RF_RETURN_IF_ERROR(d.Get(&datasets, "mixture"));
  if (datasets > kMaxMixtureDatasets) {
    return d.Error(mixture_at, "a mixture of " + std::to_string(datasets) + " datasets");
  }
  if (datasets == 0) return Status::Ok();
  MixtureState& m = c->mixture;
  RF_RETURN_IF_ERROR(d.Get(&m.steps, "mixture"));
  c->datasets.resize(datasets);
  m.drawn.resize(datasets);
  m.sources.resize(datasets);
  for (uint32_t i = 0; i < datasets; ++i) {
    Checkpoint::MixtureDataset& ds = c->datasets[i];
    MixtureSourceState& s = m.sources[i];
    RF_RETURN_IF_ERROR(d.Get(&ds.dataset_id, "mixture"));
    RF_RETURN_IF_ERROR(d.Get(&ds.dataset_samples, "mixture"));
    RF_RETURN_IF_ERROR(d.Get(&ds.weight, "mixture"));
    for (uint64_t* v : {&m.drawn[i], &s.epoch, &s.position})
      RF_RETURN_IF_ERROR(d.Get(v, "mixture"));
    const uint64_t stretches_at = d.at();
    uint32_t stretches = 0;
    RF_RETURN_IF_ERROR(d.Get(&stretches, "mixture"));
    if (stretches > kMaxCheckpointStretches) {
      return d.Error(stretches_at, "dataset " + std::to_string(i) + " of the mixture has " +
                                       std::to_string(stretches) + " stretches");
    }
    s.stretches.resize(stretches);
    for (EpochStretch& st : s.stretches) {
      RF_RETURN_IF_ERROR(d.Get(&st.world_size, "mixture"));
      RF_RETURN_IF_ERROR(d.Get(&st.position, "mixture"));
      if (st.world_size == 0) return d.Error(d.at() - 12, "a stretch of world size 0");
    }
  }
  return Status::Ok();
}

// One tensor of `count` floats. The first value in the file that is not finite (or, with
// `nonnegative`, below zero) becomes *forged, named by `name` and its offset: reported once the
// checksum holds.
Status ReadTensor(Decoder& d, std::vector<float>* t, size_t count, const std::string& name,
                  bool nonnegative, Status* forged) {
  RF_RETURN_IF_ERROR(d.GetFloats(t, count, name));
  const auto bad = std::find_if(t->begin(), t->end(), [nonnegative](float v) {
    return !std::isfinite(v) || (nonnegative && v < 0);
  });
  if (bad != t->end() && forged->ok()) {
    const uint64_t k = bad - t->begin();
    *forged = d.Error(d.at() - 4 * (t->size() - k),
                      name + " value " + std::to_string(k) + " is " + FloatText(*bad));
  }
  return Status::Ok();
}

// The tensor count, the parameters, then the optimizer state: OptimizerSlots slots of tensors of
// the same shapes.
Status ReadTensors(Decoder& d, Checkpoint* c, Status* forged) {
  const std::vector<ParamShape> shapes = ParameterShapes(c->config);
  uint32_t tensors = 0;
  RF_RETURN_IF_ERROR(d.Get(&tensors, "tensor count"));
  if (tensors != shapes.size()) {
    return d.Error(d.at() - 4, std::to_string(tensors) + " tensors; the model has " +
                                   std::to_string(shapes.size()));
  }
  const size_t slots = OptimizerSlots(c->optimizer.kind);
  c->params.t.resize(shapes.size());
  c->momentum.t.resize(slots * shapes.size());
  for (size_t at = 0; at < (1 + slots) * shapes.size(); ++at) {
    const size_t i = at % shapes.size();
    const std::string kind = at < shapes.size()       ? "parameter "
                             : at < 2 * shapes.size() ? "momentum "
                                                      : "second moment ";
    std::vector<float>& t = at < shapes.size() ? c->params.t[i] : c->momentum.t[at - shapes.size()];
    RF_RETURN_IF_ERROR(ReadTensor(d, &t, shapes[i].count(), kind + shapes[i].name, false, forged));
  }
  return Status::Ok();
}

// Batch norm's running statistics (none without it): the means, then the variances, which are
// never negative.
Status ReadRunningStats(Decoder& d, Checkpoint* c, Status* forged) {
  const std::vector<ParamShape> shapes = RunningStatShapes(c->config);
  c->running_stats.t.resize(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const bool variance = i >= c->config.conv.size();
    RF_RETURN_IF_ERROR(
        ReadTensor(d, &c->running_stats.t[i], shapes[i].count(), shapes[i].name, variance, forged));
  }
  return Status::Ok();
}

// The checksum, the file's last 8 bytes, over every byte before it.
Status ReadChecksum(Decoder& d, const uint8_t* data) {
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
  return Status::Ok();
}

// Fields a run cannot have written, in a file whose checksum holds (forged, or written by a broken
// build): each refused at its own offset (`at`: where its section begins) before anything trains
// from it.

bool Finite(float v) { return std::isfinite(v); }
bool Fraction(float v) { return Finite(v) && v >= 0 && v < 1; }  // [0, 1)

Status CheckSgd(const Decoder& d, const OptimizerConfig& o, uint64_t at) {
  if (!Finite(o.lr)) return d.Error(at, "learning rate " + FloatText(o.lr));
  if (!Finite(o.momentum) || o.momentum < 0) {
    return d.Error(at + 4, "momentum " + FloatText(o.momentum));
  }
  if (!Finite(o.weight_decay) || o.weight_decay < 0) {
    return d.Error(at + 8, "weight decay " + FloatText(o.weight_decay));
  }
  return Status::Ok();
}

Status CheckOptimizer(const Decoder& d, const OptimizerConfig& o, uint64_t at) {
  if (!Fraction(o.beta1)) return d.Error(at + 4, "beta1 " + FloatText(o.beta1));
  if (!Fraction(o.beta2)) return d.Error(at + 8, "beta2 " + FloatText(o.beta2));
  if (!Finite(o.eps) || !(o.eps > 0)) return d.Error(at + 12, "eps " + FloatText(o.eps));
  if (!Fraction(o.label_smoothing)) {
    return d.Error(at + 16, "label smoothing " + FloatText(o.label_smoothing));
  }
  return Status::Ok();
}

Status CheckSchedule(const Decoder& d, const LrScheduleConfig& s, uint64_t at) {
  if (!Finite(s.warmup_epochs) || s.warmup_epochs < 0) {
    return d.Error(at + 4, "warmup epochs " + FloatText(s.warmup_epochs));
  }
  return Status::Ok();
}

Status CheckAugment(const Decoder& d, const AugmentParams& a, uint64_t at) {
  if (a.crop_pad > kMaxAugmentCropPad) {
    return d.Error(at, "augmentation crop padding " + std::to_string(a.crop_pad));
  }
  if (a.flip > 1) return d.Error(at + 4, "augmentation flip " + std::to_string(a.flip));
  if (a.erase_threshold > kAugmentEraseAlways) {
    return d.Error(at + 8, "augmentation erase threshold " + std::to_string(a.erase_threshold));
  }
  return Status::Ok();
}

Status CheckPosition(const Decoder& d, const Checkpoint& c, uint64_t at) {
  if (c.epoch > kMaxCheckpointEpoch) {
    return d.Error(at + 8, "epoch " + std::to_string(c.epoch) + " (at most " +
                               std::to_string(kMaxCheckpointEpoch) + ")");
  }
  if (c.dataset_samples != 0 && c.next_sample > c.dataset_samples) {
    return d.Error(at + 16, "next sample " + std::to_string(c.next_sample) +
                                " is past the dataset's " + std::to_string(c.dataset_samples) +
                                " samples");
  }
  if (c.order.batch_size == 0) return d.Error(at + 32, "batch size 0");
  return Status::Ok();
}

Status CheckMixture(const Decoder& d, const Checkpoint& c, uint64_t at) {
  if (c.datasets.empty()) return Status::Ok();
  double sum = 0;
  uint64_t drawn = 0;
  for (size_t i = 0; i < c.datasets.size(); ++i) {
    const double w = c.datasets[i].weight;
    const MixtureSourceState& s = c.mixture.sources[i];
    const std::string named = "mixture dataset " + std::to_string(i) + ": ";
    if (!std::isfinite(w) || w < 0) return d.Error(at, named + "weight " + FloatText(float(w)));
    if (s.epoch > kMaxCheckpointEpoch) {
      return d.Error(at, named + "epoch " + std::to_string(s.epoch));
    }
    if (s.position > c.datasets[i].dataset_samples) {
      return d.Error(at, named + "position " + std::to_string(s.position) + " is past its " +
                             std::to_string(c.datasets[i].dataset_samples) + " samples");
    }
    sum += w;
    drawn += c.mixture.drawn[i];
  }
  if (!(sum > 0)) return d.Error(at, "mixture weights all 0");
  if (drawn != c.mixture.steps) {
    return d.Error(at, "mixture draws sum to " + std::to_string(drawn) + ", not its " +
                           std::to_string(c.mixture.steps) + " steps");
  }
  return Status::Ok();
}

}  // namespace

Result<Checkpoint> DecodeCheckpoint(const uint8_t* data, size_t n, const std::string& path) {
  Decoder d(data, n, path);
  Checkpoint c;
  uint32_t version = 0;
  RF_RETURN_IF_ERROR(ReadHeader(d, &version));
  // Where each section begins, for the checks after the checksum.
  struct {
    uint64_t model, sgd, position, optimizer, schedule, augment;
  } at = {};
  at.model = d.at();
  RF_RETURN_IF_ERROR(ReadModel(d, &c.config));
  at.sgd = d.at();
  RF_RETURN_IF_ERROR(ReadSgd(d, &c.optimizer));
  at.position = d.at();
  RF_RETURN_IF_ERROR(ReadPosition(d, &c));
  if (version >= 2) RF_RETURN_IF_ERROR(ReadRanks(d, &c.order));
  if (version >= 3) {
    at.optimizer = d.at();
    RF_RETURN_IF_ERROR(ReadOptimizer(d, &c.optimizer));
    at.schedule = d.at();
    RF_RETURN_IF_ERROR(ReadSchedule(d, &c.schedule, &c.schedule_span));
    at.augment = d.at();
    RF_RETURN_IF_ERROR(ReadAugment(d, &c.augment));
  }
  if (version >= 4) RF_RETURN_IF_ERROR(ReadBatchNorm(d, &c.config, at.model));
  const uint64_t mixture_at = d.at();
  if (version >= 5) RF_RETURN_IF_ERROR(ReadMixture(d, &c));
  if (version >= 6) RF_RETURN_IF_ERROR(ReadPartition(d, &c));
  Status forged = Status::Ok();  // a tensor value no run writes
  RF_RETURN_IF_ERROR(ReadTensors(d, &c, &forged));
  RF_RETURN_IF_ERROR(ReadRunningStats(d, &c, &forged));
  RF_RETURN_IF_ERROR(ReadChecksum(d, data));

  RF_RETURN_IF_ERROR(CheckSgd(d, c.optimizer, at.sgd));
  if (version >= 3) {
    RF_RETURN_IF_ERROR(CheckOptimizer(d, c.optimizer, at.optimizer));
    RF_RETURN_IF_ERROR(CheckSchedule(d, c.schedule, at.schedule));
    RF_RETURN_IF_ERROR(CheckAugment(d, *c.augment, at.augment));
  }
  RF_RETURN_IF_ERROR(CheckPosition(d, c, at.position));
  RF_RETURN_IF_ERROR(CheckMixture(d, c, mixture_at));
  RF_RETURN_IF_ERROR(forged);
  return c;
}

}  // namespace rf
