// Packed sequences' batches as the tests compare them: each batch's four views (tokens, lengths,
// cu_seqlens, position_ids) copied out byte for byte with their dtypes and shapes, from a
// SequenceLoader in host memory or, through a copier the GPU test gives, on a GPU; and token
// corpora of int32 ids beside tests/testing/token_documents.h's uint16 ones.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sequences/sequence_loader.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/token_documents.h"

namespace rf::testing {

struct SequenceBatch {
  std::vector<std::vector<uint8_t>> views;  // each view's bytes
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  uint64_t epoch = 0, position = 0;
  bool operator==(const SequenceBatch&) const = default;
};

// Copies `bytes` of a batch's memory at `src` to host memory `dst`, after waiting for the batch.
using BatchCopier = std::function<void(LoadedBatch& b, void* dst, const void* src, size_t bytes)>;

inline void HostCopier(LoadedBatch&, void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}

// Up to `count` batches (a single source's epoch ends count too, as an empty batch) of a loader
// over `datasets` with `o` (from `restore` where given).
inline std::vector<SequenceBatch> TakeBatches(const std::vector<const Dataset*>& datasets,
                                              const LoaderOptions& o, size_t count,
                                              const BatchCopier& copy = HostCopier,
                                              const SequenceState* restore = nullptr) {
  std::vector<SequenceBatch> out;
  auto l = SequenceLoader::Create(datasets, SequenceSpecFor(o));
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  if (!l.ok()) return out;
  if (restore != nullptr) {
    const Status st = (*l)->Restore(*restore);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  for (size_t i = 0; i < count; ++i) {
    Result<std::shared_ptr<LoadedBatch>> b = (*l)->Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) break;
    SequenceBatch s;
    if (*b) {
      s.epoch = (*b)->epoch();
      s.position = (*b)->position();
      for (const LoadedBatch::View& v : (*b)->views()) {
        size_t n = DTypeSize(v.dtype);
        for (int64_t d : v.shape) n *= static_cast<size_t>(d);
        s.views.emplace_back(n);
        copy(**b, s.views.back().data(), v.data, n);
        s.dtypes.push_back(v.dtype);
        s.shapes.push_back(v.shape);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The first batch where `a` and `b` differ, and how ("" where they are equal).
inline std::string FirstDifference(const std::vector<SequenceBatch>& a,
                                   const std::vector<SequenceBatch>& b) {
  if (a.size() != b.size())
    return std::to_string(a.size()) + " batches against " + std::to_string(b.size());
  static const char* kNames[] = {"tokens", "lengths", "cu_seqlens", "position_ids"};
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].views.size() != b[i].views.size())
      return "batch " + std::to_string(i) + ": " + std::to_string(a[i].views.size()) +
             " views against " + std::to_string(b[i].views.size());
    for (size_t v = 0; v < a[i].views.size(); ++v) {
      const std::string what = "batch " + std::to_string(i) + "'s " + kNames[v % 4];
      if (a[i].shapes[v] != b[i].shapes[v] || a[i].dtypes[v] != b[i].dtypes[v])
        return what + ": another shape or dtype";
      if (a[i].views[v] != b[i].views[v]) {
        size_t at = 0;
        while (a[i].views[v][at] == b[i].views[v][at]) ++at;
        return what + ": byte " + std::to_string(at) + " differs";
      }
    }
    if (a[i].epoch != b[i].epoch || a[i].position != b[i].position)
      return "batch " + std::to_string(i) + ": another epoch or position";
  }
  return "";
}

// `docs` as a tokens dataset of int32 ids, without labels.
inline Status WriteInt32Documents(const std::string& path,
                                  const std::vector<std::vector<int32_t>>& docs,
                                  uint64_t chunk_bytes = 16 << 10) {
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kTokens;
  spec.sample_dtype = DType::kInt32;
  spec.has_labels = false;
  WriterOptions o;
  o.chunk_bytes = chunk_bytes;
  RF_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(path, spec, o));
  for (const auto& d : docs) {
    const uint64_t offsets[2] = {0, d.size()};
    RF_RETURN_IF_ERROR(w->AppendRecords(d.data(), offsets, nullptr, 1));
  }
  return w->Finish();
}

// The corpora and loaders the packing's tests compare ways of packing on: what each way must
// agree on (ids widened, the end-of-document token in and beyond the ids' width, pad, a row's
// documents and its padding as segments, the partial last sequence, packing "pad", int32 and
// int64, a mixture of uint16 and int32 ids, batches large enough to be split over threads).
class PackCorpora {
 public:
  PackCorpora() {
    auto docs = Documents(400, 150, 9);
    for (auto& d : docs)
      for (auto& t : d) t = static_cast<uint16_t>(t % 30000 + 1);
    EXPECT_TRUE(WriteDocuments(dir_.File("small.rfd"), docs, {}, 8 << 10, false).ok());
    std::vector<std::vector<int32_t>> wide(300);
    std::mt19937 rng(4);
    for (auto& d : wide) {
      d.resize(1 + rng() % 90);
      for (auto& t : d) t = static_cast<int32_t>(100000 + rng() % 1000000);
    }
    const Status written = WriteInt32Documents(dir_.File("wide.rfd"), wide, 8 << 10);
    EXPECT_TRUE(written.ok()) << written.ToString();
    auto big = Documents(1500, 3000, 11);
    EXPECT_TRUE(WriteDocuments(dir_.File("big.rfd"), big, {}, 256 << 10, false).ok());
    for (const char* name : {"small.rfd", "wide.rfd", "big.rfd"}) {
      auto d = Dataset::Open(dir_.File(name));
      EXPECT_TRUE(d.ok()) << d.status().ToString();
      datasets_.push_back(d.ok() ? std::make_unique<Dataset>(std::move(*d)) : nullptr);
    }
  }
  const Dataset* small() const { return datasets_[0].get(); }
  const Dataset* wide() const { return datasets_[1].get(); }
  const Dataset* big() const { return datasets_[2].get(); }

  struct Case {
    std::string name;
    std::vector<const Dataset*> data;
    LoaderOptions options;
    size_t batches;  // taken (past an epoch's end where fewer make one)
  };
  // A state of the small corpus's loaders (Cases' first) at the end of its epoch 0: the next
  // batch has no rows.
  SequenceState AtEpochEnd(const LoaderOptions& o) const {
    auto l = SequenceLoader::Create({small()}, SequenceSpecFor(o));
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (!l.ok()) return {};
    SequenceState s = (*l)->state();
    s.sources[0].position = (*l)->epoch_sequences();  // one rank: a row a sequence
    return s;
  }

  // Every case, on `device`.
  std::vector<Case> Cases(DeviceKind device) const {
    auto base = [&](uint32_t length, uint32_t batch) {
      LoaderOptions o;
      o.pipeline.device = device;
      o.pipeline.order.batch_size = batch;
      o.pipeline.order.shuffle = ShuffleMode::kWindow;
      o.pipeline.order.shuffle_window = 3;
      o.pipeline.order.seed = 7;
      o.pipeline.streaming.io = IoMode::kBuffered;
      o.output.dtype = DType::kInt64;
      o.sequence.length = length;
      o.sequence.eod_token = 0;
      o.sequence.pad_token = -1;
      return o;
    };
    std::vector<Case> out;
    LoaderOptions o = base(31, 4);
    out.push_back({"uint16 eod 0 pad -1 int64", {small()}, o, 200});
    o.output.dtype = DType::kInt32;
    out.push_back({"uint16 int32", {small()}, o, 200});
    o = base(31, 4);
    o.sequence.eod_token = 70000;  // wider than the ids
    out.push_back({"eod beyond uint16", {small()}, o, 200});
    o.sequence.eod_token = -1;
    o.sequence.pad_token = 5;
    out.push_back({"no eod", {small()}, o, 200});
    o = base(31, 4);
    o.sequence.pad = true;
    o.output.dtype = DType::kInt32;
    out.push_back({"packing pad", {small()}, o, 220});
    o = base(47, 3);
    out.push_back({"int32 ids", {wide()}, o, 200});
    o.pipeline.weights = {0.6f, 0.4f};
    out.push_back({"mixture uint16 + int32", {small(), wide()}, o, 300});
    o = base(4095, 16);
    o.sequence.pack_threads = 3;
    out.push_back({"large batches, 3 threads", {big()}, o, 70});
    o.output.dtype = DType::kInt32;
    o.sequence.length = 2000;
    o.pipeline.order.batch_size = 33;
    out.push_back({"large batches, int32, 3 threads", {big()}, o, 70});
    return out;
  }

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<Dataset>> datasets_;
};

}  // namespace rf::testing
