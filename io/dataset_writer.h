// DatasetWriter: writes a ringfeed dataset (io/format.h) from a stream of samples, with memory
// bounded whatever the dataset's size: without a codec three chunk buffers; with one, two more
// per compression thread (a chunk and its frame), the threads capped so those stay within
// kCompressMemory (a 1 GiB chunk target compresses on one thread).
//
// Every shard is written under a temporary name; Finish() writes the indices and headers
// (the header goes last: it holds the sample count and the channel statistics, known only at
// the end), fsyncs and closes every shard, and only then renames them into place, shard 0 last.
// A writer destroyed before Finish() removes its temporary files, and a failure in Finish
// (ENOSPC, EIO: always in the fsync stage, before any rename) leaves no final name, so an
// interrupted or failed conversion leaves nothing that looks finished: a crash during the
// renames leaves shards without shard 0, which readers refuse by name (io/dataset.h).
//
// The name is the new dataset's alone once Finish() returns: any other dataset of the same name
// (the single file "data.rfd" beside new shards of it, shards of another count) is removed, but
// only after the new one is committed, so the old data is never lost before the new is safe
// (removed() lists them). Only regular files that are ringfeed datasets (their header's magic)
// are removed, never a file of WriterOptions::keep (the conversion's inputs, by any name), and
// never anything else that merely has such a name. Create() removes the temporaries of earlier
// writers of this name whose process is gone (io/file.h RemoveStaleTemporaries).
//
// Chunks go round-robin to the shards (global chunk g to shard g % shards), so reading the
// chunks in order reads all drives at once.
//
// Thread safety: none; one thread appends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/chunk_write_queue.h"
#include "io/file.h"
#include "io/format.h"

namespace rf {

struct DatasetSpec {
  DType sample_dtype = DType::kUInt8;
  DType label_dtype = DType::kUInt8;
  // The sample shape, outermost first, 1 to 4 dims (io/format.h); empty: channels, height, width.
  std::vector<uint64_t> shape;
  uint32_t channels = 1, height = 1, width = 1;
  uint32_t num_classes = 0;  // 0: one more than the largest label written
  // false: the samples have no labels. Append then takes no labels (nullptr), the chunks hold
  // uint8 zeros, and the header says 0 classes; label_dtype must be uint8 and num_classes 0.
  bool has_labels = true;
  // What a record is (io/format.h). tokens (uint16, int32 or int64 ids) and bytes (uint8, with
  // media_type) hold records of any size, appended with AppendRecords; `shape` is then ignored
  // (the header's shape is the largest record written), and the dataset is format version 2.
  format::RecordKind record_kind = format::RecordKind::kTensor;
  std::string media_type;  // bytes records: "image/jpeg", ...; printable ASCII, at most 63
  // Where the records came from, for a tool that writes them back (io/format.h's origin): printable
  // ASCII without spaces, at most 63; "" none. Version 2 only.
  std::string origin;
  // The labels' names, class 0 first (io/format.h's class names block, in every shard); empty:
  // none. Where given, has_labels and num_classes == class_names.size().
  std::vector<std::string> class_names;
  // Record kind fields: the samples' fields (io/fields.h; CheckFields' rules; a label field's
  // dtype is label_dtype). Each sample is appended with AppendRecords as one record of uint8,
  // laid out as io/fields.h says (format::EncodeSample makes it), and checked so.
  std::vector<format::FieldSpec> fields;
};

// What the compression threads' buffers may take together (WriterOptions::threads is capped).
inline constexpr uint64_t kCompressMemory = uint64_t{1} << 30;

struct WriterOptions {
  uint32_t shards = 1;
  uint64_t chunk_bytes = 4 << 20;  // target size of a chunk's data (before compression)
  // Samples a chunk (the last may hold fewer); 0: as many as chunk_bytes holds. Re-encoding a
  // dataset gives its own, so the chunks, and with them the order, stay the same.
  uint32_t chunk_samples = 0;
  // Each chunk compressed with this codec where that saves space (io/codec.h).
  CodecSpec codec = {};
  // Threads that compress (with a codec): 0 is one per core, at most 16; at most as many as
  // kCompressMemory holds two chunks for.
  uint32_t threads = 0;
  // Format version written: 0 is 1 without a codec (any reader takes it), 2 with one.
  uint32_t version = 0;
  uint64_t dataset_id = 0;  // 0: random
  // Files Finish() must not remove as an older dataset of the same name: the inputs.
  std::vector<std::string> keep = {};
  // Records of any size: the largest record taken (a chunk holds at least one, so every chunk
  // buffer is sized for it: max(chunk_bytes, this) and the table; pages are resident only once
  // written). At most kMaxChunkTarget.
  uint64_t max_record_bytes = uint64_t{64} << 20;
};

class DatasetWriter {
 public:
  static Result<std::unique_ptr<DatasetWriter>> Create(const std::string& path,
                                                       const DatasetSpec& spec,
                                                       const WriterOptions& options);
  ~DatasetWriter();

  // Appends n samples (row-major, the spec's shape each, in the sample dtype) and their n labels
  // (in the label dtype; nullptr for a spec without labels). Labels must lie in
  // [0, num_classes) when num_classes was given.
  Status Append(const void* samples, const void* labels, uint64_t n);
  // Records of any size (a tokens or bytes spec): record i is elements [offsets[i], offsets[i +
  // 1]) of `values` (the sample dtype; offsets: n + 1, increasing from offsets[0]), at least one
  // element and at most max_record_bytes; n labels as for Append. A chunk ends where the next
  // record would take its data past chunk_bytes; a record larger than that has a chunk of its own.
  Status AppendRecords(const void* values, const uint64_t* offsets, const void* labels, uint64_t n);
  // Records of any size: ends the chunk being filled here (nothing where it is empty), so a
  // writer copying another dataset keeps its chunks, and with them its order.
  Status EndChunk() { return header_.variable() ? FlushRecordChunk() : Status::Ok(); }
  // Append with the samples' channel sums made already by ChannelSums (on any thread), so that a
  // caller can sum blocks in parallel and append them in order: the statistics come out bit for
  // bit as Append's, which sums each sample itself.
  Status Append(const void* samples, const void* labels, uint64_t n, const double* channel_sums);
  // What Append adds into the header's statistics, sample by sample: for each of the n samples
  // and each channel, the sum of its stored values and the sum of their squares, in that order
  // (ChannelSumsPerSample() doubles a sample; none for id dtypes, which have no statistics). A
  // function of the spec alone: safe on any thread while another appends.
  void ChannelSums(const void* samples, uint64_t n, double* out) const;
  size_t ChannelSumsPerSample() const;
  // Writes indices and headers and renames every shard into place. Fails on an empty dataset.
  Status Finish();
  // Sets the class count Finish() writes when Create() was given 0, e.g. so that a train and a
  // test split get the same inferred count. Fails if a label already appended is >= n, and for a
  // spec without labels.
  Status SetNumClasses(uint32_t n);
  // Sets the media type Finish() writes (bytes records; the rules of DatasetSpec::media_type),
  // e.g. once a converter knows which codecs its records hold; for samples of several fields,
  // their one image field's (an image media type).
  Status SetMediaType(const std::string& media_type);
  int64_t max_label() const { return max_label_; }  // -1 before the first label
  // Samples of several fields: the fields Finish() writes (SetMediaType's choice in them).
  const std::vector<format::FieldSpec>& fields() const { return header_.fields; }

  uint32_t chunk_samples() const { return chunk_samples_; }
  uint64_t samples_written() const { return samples_; }
  // After Finish: the chunks' stored bytes (compressed) and their data (before compression).
  uint64_t bytes_written() const { return bytes_; }
  uint64_t data_bytes_written() const { return data_bytes_; }
  // After Finish: how many chunks are stored compressed (the others did not shrink, or no codec).
  uint64_t compressed_chunks_written() const { return compressed_chunks_; }
  // The files Finish() produced (final names), in shard order.
  std::vector<std::string> paths() const;
  // The files of other datasets of the same name that Finish() removed.
  const std::vector<std::string>& removed() const { return removed_; }

 private:
  DatasetWriter() = default;
  Status FlushChunk();
  Status FlushRecordChunk();
  // Checks n labels (nullptr where the spec has none) and notes the largest.
  Status CheckLabelsGiven(const void* labels, uint64_t n);
  // Adds n samples' ChannelSums to sum_ and sumsq_, in sample order.
  void AddChannelSums(const double* sums, uint64_t n);
  // Prepares every shard, renames them into place (shard 0 last), removes what they replace.
  Status CommitShards();

  std::string path_;
  DatasetSpec spec_;
  WriterOptions opts_;
  // The fields fixed at Create: dtypes, shape and its image view. Finish fills in the rest.
  format::Header header_;
  uint64_t sample_bytes_ = 0;
  uint32_t chunk_samples_ = 0;

  struct Shard {
    AtomicOutput out;
    uint64_t next_offset = format::kHeaderBytes;
    std::vector<format::ChunkEntry> entries;
  };
  std::vector<Shard> shards_;

  // Checksums and writes full chunks on its own thread. Declared after shards_, so it stops
  // (and stops writing to their files) before they are closed and removed.
  std::unique_ptr<ChunkWriteQueue> writes_;
  // The chunk being filled (a buffer of writes_): samples at 0, labels at labels_offset.
  uint8_t* chunk_ = nullptr;
  uint64_t chunk_capacity_ = 0;
  uint32_t in_chunk_ = 0;
  std::vector<uint8_t> pending_labels_;
  // Records of any size: the chunk being filled, its records back to back and their ends (the
  // table is written at the flush, once the count is known), and the largest record so far.
  std::vector<uint8_t> pending_records_;
  std::vector<uint64_t> pending_ends_;
  uint64_t max_record_written_ = 0;
  std::vector<format::FieldSpan> spans_;  // fields: one sample's, checked (AppendRecords)
  uint64_t chunks_ = 0;
  uint64_t samples_ = 0;
  uint64_t bytes_ = 0;
  uint64_t data_bytes_ = 0;
  uint64_t compressed_chunks_ = 0;
  int64_t max_label_ = -1;

  // Per-channel sums of the stored values, for the header's mean and std (intensity dtypes only:
  // io/format.h).
  std::vector<double> sum_, sumsq_;
  bool finished_ = false;
  std::vector<std::string> removed_;
};

}  // namespace rf
