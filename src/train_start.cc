#include "src/train_start.h"

#include <cstdio>
#include <string>
#include <vector>

#include "io/remote/remote_object.h"
#include "model/checkpoint.h"

namespace rf {
namespace {

// A Status from below that, here, means the command line disagrees with its files.
Status AsUsage(const Status& st) { return Status::Usage(st.message()).WithPath(st.path()); }

// The --resume checkpoint's bytes: read by rank 0, handed to the others (a multi-machine job's
// checkpoint lies on rank 0's machine).
Result<std::vector<uint8_t>> CheckpointBytes(const std::string& path, World& world) {
  Result<std::vector<uint8_t>> bytes = std::vector<uint8_t>{};
  if (world.rank() == 0) bytes = ReadCheckpointBytes(path);
  if (world.size() == 1) return bytes;
  constexpr uint64_t kFailed = ~uint64_t{0};
  uint64_t size = bytes.ok() ? bytes->size() : kFailed;
  RF_RETURN_IF_ERROR(world.Broadcast(&size, sizeof size, 0));
  if (size == kFailed) {
    if (world.rank() == 0) return bytes.status();
    return Status::Aborted("rank 0 could not read --resume " + path);
  }
  bytes->resize(size);
  RF_RETURN_IF_ERROR(world.Broadcast(bytes->data(), size, 0));
  return bytes;
}

// Usage (or, for other datasets, Corruption) naming what differs where the checkpoint `ck` is of
// another training split than `data`: one dataset against a mixture, other datasets, or other
// weights.
Status CheckCheckpointData(const Checkpoint& ck, const RunData& data, const TrainConfig& c) {
  const std::string& path = c.resume;
  if (!data.mixture()) {
    if (!ck.datasets.empty()) {
      return Status::Usage("--resume " + path + " is of a mixture of " +
                           std::to_string(ck.datasets.size()) +
                           " datasets (--data a,b --weights ...); this run reads one, " +
                           ShownPath(c.pipeline.data));
    }
    if (ck.dataset_id != data.first().header().dataset_id ||
        ck.dataset_samples != data.first().sample_count()) {
      return Status::Corruption(
          path, "checkpoint was trained on another dataset than " + ShownPath(c.pipeline.data));
    }
    return Status::Ok();
  }
  if (ck.datasets.empty()) {
    return Status::Usage("--resume " + path + " is of one dataset; this run mixes " +
                         std::to_string(data.train.size()) + " (" + ShownPath(c.pipeline.data) +
                         ")");
  }
  if (ck.datasets.size() != data.train.size()) {
    return Status::Usage("--resume " + path + " is of a mixture of " +
                         std::to_string(ck.datasets.size()) + " datasets; this run mixes " +
                         std::to_string(data.train.size()) + " (" + ShownPath(c.pipeline.data) +
                         ")");
  }
  for (size_t i = 0; i < ck.datasets.size(); ++i) {
    const Dataset& d = data.train[i];
    if (ck.datasets[i].dataset_id != d.header().dataset_id ||
        ck.datasets[i].dataset_samples != d.sample_count()) {
      return Status::Corruption(path, "checkpoint's dataset " + std::to_string(i + 1) +
                                          " of the mixture is another than " + d.path() + " (" +
                                          std::to_string(ck.datasets[i].dataset_samples) +
                                          " samples, not " + std::to_string(d.sample_count()) +
                                          ")");
    }
  }
  std::string theirs, ours;
  bool same = true;
  for (size_t i = 0; i < ck.datasets.size(); ++i) {
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%s%.6g", i ? "," : "", ck.datasets[i].weight);
    std::snprintf(b, sizeof b, "%s%.6g", i ? "," : "", data.weights[i]);
    theirs += a;
    ours += b;
    same = same && ck.datasets[i].weight == data.weights[i];
  }
  if (!same) {
    return Status::Usage("--weights: --resume " + path + " mixes its datasets by weights " +
                         theirs + " (normalized), this run by " + ours +
                         "; a resumed mixture goes on with its own (give those)");
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ModelFor(const TrainConfig& c, const format::Header& h) {
  ModelConfig m;
  m.channels = h.channels;
  m.height = h.height;
  m.width = h.width;
  if (format::HoldsImageRecords(h)) {  // the loader's decoded images: RGB at --image-size
    m.channels = 3;
    m.height = m.width = c.image.size;
  }
  m.classes = h.num_classes;
  m.conv = c.conv;
  m.hidden = c.hidden;
  m.batch_norm = c.batch_norm;
  if (Status st = m.Validate(); !st.ok()) return AsUsage(st);
  return m;
}

Result<StartPoint> StartPointFor(const RunData& data, World& world, TrainConfig* c,
                                 ModelConfig* model) {
  if (c->resume.empty()) {
    return StartPoint{InitialParameters(*model, c->pipeline.order.seed),
                      OptimizerStateZeros(*model, c->optimizer.kind), InitialRunningStats(*model),
                      RunState{}};
  }
  RF_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, CheckpointBytes(c->resume, world));
  RF_ASSIGN_OR_RETURN(Checkpoint ck, DecodeCheckpoint(bytes.data(), bytes.size(), c->resume));
  // The checkpoint's settings first (a decoded file's batch size is not 0, so this does not
  // fail): the model it asks for takes the checkpoint's image size.
  uint64_t position = 0;
  RF_RETURN_IF_ERROR(
      ApplyCheckpoint(ck, c, &position, format::HoldsImageRecords(data.first().header())));
  RF_ASSIGN_OR_RETURN(*model, ModelFor(*c, data.first().header()));
  // The one InvalidArgument: the file is of another model than the one asked for.
  if (Status st = CheckCheckpointModel(ck, *model, c->resume); !st.ok()) return AsUsage(st);
  RF_RETURN_IF_ERROR(CheckCheckpointData(ck, data, *c));
  // What the checkpoint set is held to the options' bounds too (a file of an older ringfeed may
  // hold a momentum of 5).
  if (Status st = c->Validate(); !st.ok()) {
    return Status::Usage(st.message() + " (the value --resume " + c->resume + " holds)");
  }
  // The checkpoint's stretches against this dataset (Usage), then its position against the epoch
  // it continues, which may be one resumed at another world size: its own count.
  RF_ASSIGN_OR_RETURN(const uint64_t epoch_samples, EpochSamplesOf(*c, data, ck.epoch));
  if (position > epoch_samples) {
    return Status::Corruption(c->resume, "checkpoint position is past the end of the epoch");
  }
  return StartPoint{std::move(ck.params), std::move(ck.momentum), std::move(ck.running_stats),
                    RunState{ck.epoch, ck.step, position}};
}

}  // namespace rf
