// The `ringfeed train` command line, read into a TrainConfig (src/train_config.h) in two steps:
//
//   ReadTrainFlags       the syntax: Boost.Program_options over argv, then a --config file (the
//                        command line wins), --help, on/off switches; which options were given
//   TrainConfigFromFlags the meaning: enums and widths parsed, numbers validated, and every
//                        option that would do nothing in the chosen mode or device refused
//
// Both return Status::Usage (exit 2). main prefixes the first step's messages with
// "ringfeed train:" and the second's with "ringfeed:" (as the command always has).
//
// Refused, because the option would do nothing (explicitly given, on the command line or in the
// --config file; their defaults are fine):
//   --mode managed     --io, --read-size, --queue-depth, --ring-slots, --copy-streams
//   --mode streaming   --managed-prefetch, --managed-advise, --managed-oversubscribe
//   --device cpu       --copy-streams, --precision, --cuda-graph
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
  std::string help_text;  // every option with its default, and what is refused
  // Numbers, paths and switches, as given or defaulted (TrainConfig's defaults).
  TrainConfig config;
  // The options still to be parsed, as written.
  std::string mode, device, precision, shuffle, io, read_size, conv, augment;
  std::string optimizer, lr_schedule;
  std::set<std::string> given;  // long names of the options given, not defaulted
};

// args: the command line after "train". Usage errors: Boost's parse errors, an unreadable
// --config file, a --cuda-graph that is neither on nor off.
Result<TrainFlags> ReadTrainFlags(const std::vector<std::string>& args);
// The typed, validated config, or a Usage error naming the flag.
Result<TrainConfig> TrainConfigFromFlags(const TrainFlags& flags);

}  // namespace rf
