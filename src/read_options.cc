#include "src/read_options.h"

#include "pipeline/sources/pipeline_config.h"

namespace rf {
namespace {

OptionTable<ReadConfig> MakeReadTable() {
  OptionTable<ReadConfig> t;
  t.Include(
      PipelineOptionTable(), kReadCommand, [](auto& c) -> auto& { return c.pipeline; });
  t.Field(
       "register-buffers", OptionType::kOnOff, [](auto& c) -> auto& { return c.register_buffers; })
      .For(kReadCommand)
      .Help(
          "register the ring's slots with io_uring once (off: plain reads into the same "
          "memory)");
  t.Field(
       "pinned", OptionType::kWord, [](auto& c) -> auto& { return c.pinned; })
      .Words({"auto", "on", "off"})
      .For(kReadCommand)
      .Help("ring memory: auto (pinned if a GPU is present), on, off");
  t.Field(
       "passes", OptionType::kCount, [](auto& c) -> auto& { return c.passes; })
      .Range(1, 1000000)
      .For(kReadCommand)
      .Help("read the dataset this many times");
  t.Field(
       "order", OptionType::kWord, [](auto& c) -> auto& { return c.order; })
      .Words({"stored", "train"})
      .For(kReadCommand)
      .Help(
          "stored: chunks in file order; train: in the order the first epoch of `ringfeed train "
          "--seed S` reads them");
  t.Field(
       "json", OptionType::kText, [](auto& c) -> auto& { return c.json; })
      .Metavar("FILE")
      .For(kReadCommand)
      .Help("also write the figures to this JSON file (not one of the dataset's files)");
  return t;
}

}  // namespace

const OptionTable<ReadConfig>& ReadOptionTable() {
  static const OptionTable<ReadConfig> table = MakeReadTable();
  return table;
}

}  // namespace rf
