// `ringfeed read`'s options, declared once (options/option_table.h): the pipeline's reader options
// it takes (pipeline/sources/pipeline_config.h: the dataset, --io, --queue-depth, --read-size,
// --ring-slots, --no-verify, --seed, --rank, --world-size) and its own. The command line and
// --help read them here.
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include <cstdint>
#include <string>

#include "io/chunk_reader.h"
#include "options/option_table.h"
#include "pipeline/sources/pipeline_config.h"

namespace rf {

// What `ringfeed read` is asked.
struct ReadConfig {
  PipelineConfig pipeline;
  bool register_buffers = ReaderOptions{}.register_buffers;
  std::string pinned = "auto";
  uint32_t passes = 1;
  std::string order = "stored";
  std::string json;
};

const OptionTable<ReadConfig>& ReadOptionTable();

}  // namespace rf
