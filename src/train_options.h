// `ringfeed train`'s options, declared once (options/option_table.h): the pipeline's that training
// takes (pipeline/sources/pipeline_config.h, through TrainConfig::pipeline) and the run's own: the
// test split, the model, the optimizer and schedule, epochs, checkpoints and output files, the GPU
// settings. The command line, --config, --help and TrainConfig::Validate all read them here.
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include "options/option_table.h"
#include "src/train_config.h"

namespace rf {

const OptionTable<TrainConfig>& TrainOptionTable();

}  // namespace rf
