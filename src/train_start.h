// Where `ringfeed train` starts (steps 3 and 4 of src/train_command.cc's run): the model the flags
// ask for on the data's input shape (ModelFor), and its parameters, optimizer state and position,
// fresh or a --resume checkpoint's (StartPointFor), which also adjusts the run's config.
//
// Data-parallel: StartPointFor is a collective (rank 0 reads the checkpoint and hands it to the
// others); every rank calls it. Thread safety: none needed (the run's thread alone).
#pragma once

#include "core/status.h"
#include "model/model.h"
#include "parallel/world.h"
#include "src/train_config.h"
#include "src/train_data.h"
#include "src/trainer.h"

namespace rf {

// The model the flags ask for on the dataset's input shape (Usage where --conv does not fit it).
Result<ModelConfig> ModelFor(const TrainConfig& c, const format::Header& h);

// What training starts from: the parameters, the optimizer's state, batch norm's running
// statistics (none without it) and the run's position.
struct StartPoint {
  Tensors params, momentum;
  Tensors running_stats;  // batch norm's (none without it)
  RunState state;
};

// Where training starts: fresh parameters, or a checkpoint's, which also sets the config's seed,
// batch size, optimizer, lr schedule and shuffle (ApplyCheckpoint). A checkpoint of another model
// is a usage error (the flags disagree with it); a damaged one, or one of another dataset, a data
// error. *model: the model the flags ask for, which a checkpoint of decoded images sets to the
// image size it trained at (ApplyCheckpoint).
Result<StartPoint> StartPointFor(const RunData& data, World& world, TrainConfig* c,
                                 ModelConfig* model);

}  // namespace rf
