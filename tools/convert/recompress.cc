#include "tools/convert/recompress.h"

#include <memory>
#include <sstream>
#include <vector>

#include "io/dataset_writer.h"
#include "io/file.h"
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/progress.h"

namespace rf::convert {

Result<RecompressSummary> Recompress(const Dataset& in, const std::string& out_path,
                                     const RecompressOptions& o) {
  // Its chunks are written again chunk for chunk, by one writer: a directory's parts are
  // datasets of their own, with chunks of their own sizes, and each keeps its own id.
  if (in.is_directory()) {
    return std::move(Status::Usage("a directory of " + std::to_string(in.part_count()) +
                                   " dataset(s): recompress takes one dataset; recompress each "
                                   "of its .rfd datasets into a directory of their own")
                         .WithPath(in.path()));
  }
  const format::Header& h = in.header();
  const uint32_t shards = static_cast<uint32_t>(in.shard_count());
  std::vector<NamedPath> outputs, inputs;
  std::vector<std::string> input_paths;
  for (uint32_t i = 0; i < shards; ++i) {
    outputs.push_back({"", format::ShardPath(out_path, i, shards)});
    inputs.push_back({"", in.shard_path(i)});
    input_paths.push_back(in.shard_path(i));
  }
  RF_RETURN_IF_ERROR(CheckOutputPaths(outputs, inputs));

  DatasetSpec spec;
  spec.sample_dtype = h.sample_dtype;
  spec.label_dtype = h.label_dtype;
  spec.shape = h.Shape();
  spec.num_classes = h.num_classes;
  spec.has_labels = h.HasLabels();
  spec.record_kind = h.record_kind;
  spec.media_type = h.media_type;
  spec.fields = h.fields;
  spec.class_names = in.class_names();
  spec.origin = h.origin;  // an export back to the records' own format still knows it
  WriterOptions w;
  w.shards = shards;
  w.chunk_samples = h.chunk_samples;  // the same chunks, so the same order
  if (h.variable()) {
    // Records: every input chunk fits the target, and each ends where the input's did.
    w.chunk_bytes = in.max_chunk_bytes();
    w.max_record_bytes = h.SampleBytes();
  }
  w.codec = o.codec;
  w.threads = o.compress_threads;
  w.version = o.format_version;
  w.dataset_id = h.dataset_id;
  w.keep = input_paths;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                      DatasetWriter::Create(out_path, spec, w));

  RecompressSummary s;
  s.stored_before = StoredChunkBytes(in);
  s.compressed_before = in.compressed_chunks();
  s.codec_before = h.codec;
  Progress progress("recompressing", s.stored_before, o.progress);
  uint64_t done = 0;
  std::vector<uint64_t> offsets;  // records: a chunk's, in elements
  RF_RETURN_IF_ERROR(ForEachChunk(in, [&](const ChunkView& c) -> Status {
    const void* labels = spec.has_labels ? c.labels : nullptr;
    if (c.records != nullptr) {
      const uint64_t elem = DTypeSize(h.sample_dtype);
      const auto* table = reinterpret_cast<const uint64_t*>(c.samples);
      offsets.resize(size_t{c.count} + 1);
      for (uint32_t i = 0; i <= c.count; ++i) offsets[i] = table[i] / elem;
      RF_RETURN_IF_ERROR(writer->AppendRecords(c.records, offsets.data(), labels, c.count));
      RF_RETURN_IF_ERROR(writer->EndChunk());
    } else {
      RF_RETURN_IF_ERROR(writer->Append(c.samples, labels, c.count));
    }
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  RF_RETURN_IF_ERROR(writer->Finish());
  progress.Finish();

  s.samples = writer->samples_written();
  s.chunks = in.chunk_count();
  s.data_bytes = writer->data_bytes_written();
  s.stored_after = writer->bytes_written();
  s.compressed_after = writer->compressed_chunks_written();
  s.version_after = o.format_version != 0           ? o.format_version
                    : o.codec.codec != Codec::kNone ? 2
                                                    : 1;
  s.seconds = progress.Seconds();
  s.paths = writer->paths();
  s.removed = writer->removed();
  // The writer recomputed the statistics from the same samples in the same order: equal to the
  // input's unless an older writer computed those otherwise. Checked where the output can be
  // read back (not on a device such as /dev/null), and said where they differ.
  if (Result<Dataset> written = Dataset::Open(s.paths.front()); written.ok()) {
    s.statistics_differ = written->header().mean != h.mean || written->header().stddev != h.stddev;
  }
  return s;
}

std::string RecompressReport(const std::string& input, const RecompressSummary& s) {
  std::ostringstream r;
  r << SummaryLine("wrote " + s.paths.front(), s.samples, s.chunks, s.stored_after, s.seconds)
    << "\nstored: " << s.stored_before << " bytes before, " << s.stored_after << " after (ratio "
    << RatioText(s.stored_before, s.stored_after) << "); " << s.compressed_after << " of "
    << s.chunks << " chunks compressed, " << s.data_bytes << " bytes of chunk data (format version "
    << s.version_after << ")\n";
  if (s.compressed_before != 0) {
    // Allowed (another codec, or the same one again), and said: the ratio is then about 1.
    r << "note: " << input << " was compressed already (" << CodecText(s.codec_before) << ": "
      << s.compressed_before << " of " << s.chunks << " chunks, ratio "
      << RatioText(s.data_bytes, s.stored_before)
      << "); each chunk was decompressed and compressed again\n";
  }
  if (s.statistics_differ) {
    r << "note: the channel statistics differ from " << input
      << "'s (recomputed from its samples; an older writer computed them otherwise)\n";
  }
  for (const std::string& f : s.removed) {
    r << "removed " << f << " (an older dataset of the same name)\n";
  }
  return r.str();
}

}  // namespace rf::convert
