// The `ringfeed train` command line, read into a TrainConfig (src/train_config.h) in two steps,
// both through the one option table (src/train_options.h):
//
//   ReadTrainFlags       the syntax: the command line and a --config file (the command line
//                        wins), each value checked against its declared type and bounds; --help;
//                        which options were given
//   TrainConfigFromFlags the meaning: every option given that would do nothing with the others
//                        refused (its declaration says where it does something: the streaming
//                        reader's options in managed mode, the GPU's on the CPU, one optimizer's
//                        under the other), then TrainConfig::Validate
//
// Both return Status::Usage (exit 2). main prefixes the first step's messages with
// "ringfeed train:" and the second's with "ringfeed:" (as the command always has).
//
// (--device auto on a machine without a GPU cannot be known from the command line: there the GPU
// options are ignored.)
//
// Thread safety: functions of their arguments.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "src/train_config.h"

namespace rf {

struct TrainFlags {
  bool help = false;
  std::string help_text;  // every option with its default and bounds, and how a run goes on
  // The options given, set; the others at their defaults (the components' own).
  TrainConfig config;
  std::set<std::string> given;  // names of the options given, on the command line or in --config
};

// args: the command line after "train".
Result<TrainFlags> ReadTrainFlags(const std::vector<std::string>& args);
// The typed, validated config, or a Usage error naming the flag.
Result<TrainConfig> TrainConfigFromFlags(const TrainFlags& flags);

// A resumed run: one line for each option `given` whose value `asked` (the flags') the checkpoint
// replaced in `resumed` (ApplyCheckpoint), naming both values and that the checkpoint's wins:
// "--lr 0.1 given, but --resume ck.ckpt continues its run with --lr 0.01 (the checkpoint's wins)";
// an option the checkpoint's settings make do nothing is named with the setting that does:
// "--momentum 0.5 given, but --resume ck.ckpt continues its run with --optimizer adamw, where
// --momentum does nothing (the checkpoint's wins)". No line for an option not given, or given
// at the checkpoint's value.
std::vector<std::string> ResumeOverrides(const TrainConfig& asked, const TrainConfig& resumed,
                                         const std::set<std::string>& given);

}  // namespace rf
