// export --format megatron: a tokens dataset as PREFIX.bin + PREFIX.idx (megatron.h).
#include <cstring>
#include <limits>
#include <vector>

#include "io/sequential_output.h"
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/megatron.h"
#include "tools/convert/token_ids.h"

namespace rf::convert {
namespace {

// The .idx, written at known offsets (its arrays' sizes follow from N and D): the sizes and
// pointers of each chunk's records, and the document indices as they become known.
class IndexWriter {
 public:
  IndexWriter(SequentialOutput* out, uint64_t n) : out_(out), n_(n) {}
  Status Header(uint8_t code, uint64_t documents) {
    uint8_t h[kMegatronHeaderBytes];
    std::memcpy(h, kMegatronMagic, sizeof kMegatronMagic);
    const uint64_t version = 1, count = documents + 1;
    std::memcpy(h + 9, &version, 8);
    h[17] = code;
    std::memcpy(h + 18, &n_, 8);
    std::memcpy(h + 26, &count, 8);
    return out_->WriteAt(h, sizeof h, 0);
  }
  Status Sequences(uint64_t first, const std::vector<int32_t>& sizes,
                   const std::vector<int64_t>& pointers) {
    RF_RETURN_IF_ERROR(
        out_->WriteAt(sizes.data(), sizes.size() * 4, kMegatronHeaderBytes + 4 * first));
    return out_->WriteAt(pointers.data(), pointers.size() * 8,
                         kMegatronHeaderBytes + 4 * n_ + 8 * first);
  }
  // Document index k is `sequence`; k grows by one each call. Written in runs.
  Status Document(int64_t sequence) {
    docs_.push_back(sequence);
    return docs_.size() >= (1 << 16) ? Flush() : Status::Ok();
  }
  Status Flush() {
    RF_RETURN_IF_ERROR(out_->WriteAt(docs_.data(), docs_.size() * 8,
                                     kMegatronHeaderBytes + 12 * n_ + 8 * docs_written_));
    docs_written_ += docs_.size();
    docs_.clear();
    return Status::Ok();
  }
  uint64_t documents() const { return docs_written_ + docs_.size(); }

 private:
  SequentialOutput* out_;
  uint64_t n_;
  std::vector<int64_t> docs_;
  uint64_t docs_written_ = 0;
};

}  // namespace

Result<ExportSummary> ExportMegatron(const Dataset& d, const ExportOptions& o, Progress& progress) {
  const format::Header& h = d.header();
  const std::string& path = d.shard_path(0);
  if (h.record_kind != format::RecordKind::kTokens) {
    return Status::Usage("--format megatron writes token ids; " + path + " holds " +
                         (h.variable()
                              ? std::string(format::RecordKindName(h.record_kind)) + " records"
                              : std::string("fixed-shape samples")));
  }
  RF_ASSIGN_OR_RETURN(const std::optional<MegatronOrigin> origin, ParseMegatronOrigin(h, path));
  const Elem out_elem = origin ? origin->elem : ElemOf(h.sample_dtype);
  const bool in_labels = origin && origin->documents_in_labels;
  if (in_labels && !h.HasLabels()) {
    return std::move(Status::Corruption(path, "origin '" + h.origin +
                                                  "' keeps the documents in labels, but the "
                                                  "dataset has none")
                         .WithOffset(736));
  }
  const uint64_t n = h.total_samples;
  const uint64_t documents = in_labels ? h.num_classes : n;
  const size_t in_size = DTypeSize(h.sample_dtype), out_size = ElemSize(out_elem);

  const std::vector<std::string> paths = MegatronPaths(o.prefix);
  RF_ASSIGN_OR_RETURN(SequentialOutput bin, SequentialOutput::Create(paths[0]));
  RF_ASSIGN_OR_RETURN(SequentialOutput idx, SequentialOutput::Create(paths[1]));
  IndexWriter index(&idx, n);
  RF_RETURN_IF_ERROR(index.Header(*MegatronCodeOf(out_elem), documents));
  RF_RETURN_IF_ERROR(index.Document(0));

  std::vector<uint8_t> converted;
  std::vector<int32_t> sizes;
  std::vector<int64_t> pointers;
  uint64_t pointer = 0, done = 0;
  int64_t doc = 0;  // the document of the last record
  RF_RETURN_IF_ERROR(ForEachChunk(d, [&](const ChunkView& c) -> Status {
    const auto* table = reinterpret_cast<const uint64_t*>(c.samples);  // checked by the reader
    sizes.clear();
    pointers.clear();
    for (uint32_t i = 0; i < c.count; ++i) {
      const uint64_t record = c.first_sample + i;
      const uint64_t ids = (table[i + 1] - table[i]) / in_size;
      if (ids > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        return Status::InvalidArgument(path + ": record " + std::to_string(record) + " holds " +
                                       std::to_string(ids) + " ids; Megatron's sizes are int32");
      }
      const uint8_t* values = c.records + table[i];
      if (ElemAsDType(out_elem) != h.sample_dtype) {
        converted.resize(ids * out_size);
        const size_t bad = IdsToElem(h.sample_dtype, values, out_elem, converted.data(), ids);
        if (bad != ids) {
          return Status::InvalidArgument(
              path + ": record " + std::to_string(record) + ", id " + std::to_string(bad) + " (" +
              std::to_string(LoadLabel(h.sample_dtype, values, bad)) + ") does not fit " +
              std::string(ElemName(out_elem)) + ", the dtype of the Megatron index it came from");
        }
        values = converted.data();
      }
      RF_RETURN_IF_ERROR(bin.Append(values, ids * out_size));
      sizes.push_back(static_cast<int32_t>(ids));
      pointers.push_back(static_cast<int64_t>(pointer));
      pointer += ids * out_size;
      if (in_labels) {
        // Documents doc + 1 .. label start at this record (none where the label repeats).
        const int64_t label = d.Label(c.index, c.samples, i);
        if (label < doc) {
          return Status::Corruption(path, "record " + std::to_string(record) + "'s document " +
                                              std::to_string(label) + " comes after document " +
                                              std::to_string(doc) +
                                              " (documents are numbered in order)");
        }
        for (; doc < label; ++doc) RF_RETURN_IF_ERROR(index.Document(static_cast<int64_t>(record)));
      }
    }
    RF_RETURN_IF_ERROR(index.Sequences(c.first_sample, sizes, pointers));
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  // The documents after the last record's (empty ones, and the end), then the end: N.
  if (in_labels) {
    for (; static_cast<uint64_t>(doc) + 1 < documents; ++doc)
      RF_RETURN_IF_ERROR(index.Document(static_cast<int64_t>(n)));
  } else {
    for (uint64_t k = 1; k < n; ++k) RF_RETURN_IF_ERROR(index.Document(static_cast<int64_t>(k)));
  }
  RF_RETURN_IF_ERROR(index.Document(static_cast<int64_t>(n)));
  RF_RETURN_IF_ERROR(index.Flush());
  ExportSummary s;
  s.bytes = bin.bytes() + kMegatronHeaderBytes + 12 * n + 8 * (documents + 1);
  s.paths = paths;
  RF_RETURN_IF_ERROR(bin.Commit());
  RF_RETURN_IF_ERROR(idx.Commit());
  return s;
}

}  // namespace rf::convert
