// The dataset writer's options (io/dataset_writer.h's DatasetSpec and WriterOptions), declared
// once (options/option_table.h) for both faces that take them:
//
//   Python   ringfeed.DatasetWriter(path, shape, dtype, labels=..., chunk_size=..., ...): every
//            keyword argument is one of these (python/src/writer.cc sets them through this table;
//            writer.py makes its signature and help from it)
//   ringfeed-convert  the writer's flags of the subcommands that write a dataset: --chunk-size,
//            --shards, --compress, --compress-threads, --format-version, --max-record-size,
//            --classes, --label-dtype (raw); its own table includes them
//            (tools/convert/convert_options.h)
//
// so a value is taken or refused by one rule, with the same bounds and default, and named as each
// face names it. What records are written (shape, dtype, labels, records, media type, keep) is
// Python's alone: the converter reads it from its input.
//
// Thread safety: the table is built on first use (a function-local static) and only read after;
// the checks are functions of their arguments.
#pragma once

#include "io/dataset_writer.h"
#include "options/option_table.h"

namespace rf {

// What DatasetWriter::Create is given, as a user gives it.
struct WriterConfig {
  DatasetSpec spec;
  WriterOptions options;
};

const OptionTable<WriterConfig>& WriterOptionTable();

// The format version asked for (0: chosen by the writer) against the codec and what a record is,
// as `face` names them: "--format-version 1 has no compression: --compress zstd:3 needs version
// 2", and version 1 with records of any size (which `c.spec.record_kind` says).
Status CheckWriterVersion(const WriterConfig& c, OptionFace face);

// What Python's DatasetWriter refuses beyond each option's own rule (and what RefuseIdle refuses),
// as `face` names it: fixed-shape samples without a shape, more classes than the label dtype can
// name, and CheckWriterVersion's.
Status CheckWriterSpec(const WriterConfig& c, OptionFace face);

}  // namespace rf
