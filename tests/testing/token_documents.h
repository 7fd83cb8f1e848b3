// Token documents of any length for the tests of records (format version 2's tokens kind): made
// deterministically and written as a dataset through the library's own writer.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "io/dataset_writer.h"

namespace rf::testing {

// `count` documents of 1 to `longest` uint16 ids each, from `seed`.
inline std::vector<std::vector<uint16_t>> Documents(size_t count, size_t longest,
                                                    uint32_t seed = 5) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint16_t>> docs(count);
  for (auto& d : docs) {
    d.resize(1 + rng() % longest);
    for (auto& t : d) t = static_cast<uint16_t>(rng() % 50000);
  }
  return docs;
}

// Writes `docs` as a tokens dataset, document i labelled i % 7 where `labels`, in format
// `version` (WriterOptions::version; 0: the writer's choice, 3); OK or the writer's error.
inline Status WriteDocuments(const std::string& path,
                             const std::vector<std::vector<uint16_t>>& docs, CodecSpec codec = {},
                             uint64_t chunk_bytes = 16 << 10, bool labels = true,
                             uint32_t shards = 1, uint32_t version = 0) {
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kTokens;
  spec.sample_dtype = DType::kUInt16;
  spec.has_labels = labels;
  WriterOptions o;
  o.chunk_bytes = chunk_bytes;
  o.codec = codec;
  o.shards = shards;
  o.version = version;
  RF_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(path, spec, o));
  for (size_t i = 0; i < docs.size(); ++i) {
    const uint64_t offsets[2] = {0, docs[i].size()};
    const uint8_t label = static_cast<uint8_t>(i % 7);
    RF_RETURN_IF_ERROR(w->AppendRecords(docs[i].data(), offsets, labels ? &label : nullptr, 1));
  }
  return w->Finish();
}

}  // namespace rf::testing
