#include "model/checkpoint.h"

#include <fcntl.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "io/checksum.h"
#include "io/file.h"
#include "model/checkpoint_bytes.h"

namespace rf {
namespace {

using checkpoint::Encoder;
using checkpoint::FloatText;
using checkpoint::kMaxBlocks;

// The position block's order_window: W, kOrderStored for the stored order, or 0 where the file
// the checkpoint was read from did not record it.
uint32_t OrderWindow(const Checkpoint& c) {
  if (!c.shuffle_recorded) return 0;
  return c.order.shuffle == ShuffleMode::kNone ? kOrderStored : c.order.shuffle_window;
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

namespace {

// Version 5: a mixture's datasets and stream (none: a u32 0).
Status PutMixture(const Checkpoint& c, Encoder& e) {
  const MixtureState& m = c.mixture;
  if (c.datasets.size() > kMaxMixtureDatasets || m.sources.size() != c.datasets.size() ||
      m.drawn.size() != c.datasets.size()) {
    return Status::InvalidArgument("checkpoint: a mixture of " + std::to_string(c.datasets.size()) +
                                   " datasets with " + std::to_string(m.sources.size()) +
                                   " states and " + std::to_string(m.drawn.size()) + " draws");
  }
  e.Put<uint32_t>(c.datasets.size());
  if (c.datasets.empty()) return Status::Ok();
  e.Put(m.steps);
  for (size_t i = 0; i < c.datasets.size(); ++i) {
    const MixtureSourceState& s = m.sources[i];
    if (s.stretches.size() > kMaxCheckpointStretches) {
      return Status::InvalidArgument("checkpoint: too many stretches");
    }
    e.Put(c.datasets[i].dataset_id);
    e.Put(c.datasets[i].dataset_samples);
    e.Put(c.datasets[i].weight);
    for (uint64_t v : {m.drawn[i], s.epoch, s.position}) e.Put(v);
    e.Put<uint32_t>(s.stretches.size());
    for (const EpochStretch& st : s.stretches) {
      e.Put(st.world_size);
      e.Put(st.position);
    }
  }
  return Status::Ok();
}

// Version 6: the partition (the run's node_ranks, then each stretch's: the top level's, then
// each mixture dataset's, in the order the blocks above list them).
void PutPartition(const Checkpoint& c, Encoder& e) {
  e.Put(c.order.node_ranks);
  for (const EpochStretch& st : c.order.resumed.stretches) e.Put(st.node_ranks);
  for (const MixtureSourceState& s : c.mixture.sources) {
    for (const EpochStretch& st : s.stretches) e.Put(st.node_ranks);
  }
}

}  // namespace

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
  const OrderSettings& order = c.order;
  for (uint64_t v : {order.seed, c.epoch, c.next_sample, c.step}) e.Put(v);
  e.Put(order.batch_size);
  e.Put(OrderWindow(c));
  e.Put(c.dataset_id);
  e.Put(c.dataset_samples);
  const std::vector<EpochStretch>& stretches = order.resumed.stretches;
  if (order.world_size == 0 || stretches.size() > kMaxCheckpointStretches) {
    return Status::InvalidArgument("checkpoint: world size 0 or too many stretches");
  }
  if (!stretches.empty() && order.resumed.epoch != c.epoch) {
    return Status::InvalidArgument("checkpoint of epoch " + std::to_string(c.epoch + 1) +
                                   " with the stretches of epoch " +
                                   std::to_string(order.resumed.epoch + 1));
  }
  e.Put(order.world_size);
  e.Put<uint32_t>(stretches.size());
  for (const EpochStretch& st : stretches) {
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
  RF_RETURN_IF_ERROR(PutMixture(c, e));
  PutPartition(c, e);
  e.Put<uint32_t>(shapes.size());
  for (const auto& t : c.params.t) e.PutFloats(t);
  for (const auto& t : c.momentum.t) e.PutFloats(t);
  for (const auto& t : c.running_stats.t) e.PutFloats(t);
  e.Put<uint64_t>(Checksum(e.bytes().data(), e.bytes().size()));
  return std::move(e.bytes());
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
