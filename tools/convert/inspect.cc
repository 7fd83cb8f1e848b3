#include "tools/convert/inspect.h"

#include <cstdio>
#include <sstream>

#include "core/units.h"
#include "tools/convert/dataset_chunks.h"
#include "tools/convert/progress.h"

namespace rf::convert {

namespace {

// A directory's parts, in order, each with what it holds.
void DescribeParts(const Dataset& d, std::ostream& out) {
  out << "directory:    " << d.path() << ", " << d.part_count()
      << (d.part_count() == 1 ? " dataset" : " datasets read as one, in this order") << "\n";
  for (size_t p = 0; p < d.part_count(); ++p) {
    const DatasetPart& part = d.part(p);
    out << "  part " << p << ": " << part.path << "  " << part.sample_count << " samples (from "
        << part.first_sample << "), " << part.chunk_count << " chunks, " << part.file_count
        << (part.file_count == 1 ? " file" : " shards") << ", version " << part.header.version
        << ", codec " << CodecText(part.header.codec) << "\n";
  }
}

}  // namespace

std::string DescribeDataset(const Dataset& d) {
  const format::Header& h = d.header();
  const bool parts = d.is_directory() && d.part_count() > 1;
  std::ostringstream out;
  if (d.is_directory()) DescribeParts(d, out);
  out << "files:        " << d.shard_count() << " (" << FormatBytes(d.total_bytes()) << ")\n";
  for (size_t i = 0; i < d.shard_count(); ++i) {
    out << "  " << d.shard_path(i) << "  " << d.shard_bytes(i) << " bytes\n";
  }
  char id[32];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(h.dataset_id));
  out << "format:       version " << h.version << (parts ? " (the newest part's)" : "")
      << ", dataset id " << id << (parts ? " (derived from the parts' ids, in order)" : "") << "\n";
  out << "records:      " << format::RecordKindName(h.record_kind);
  if (h.variable()) {
    out << " of any size (" << DTypeName(h.sample_dtype) << ", the largest " << h.Shape().front()
        << (h.record_kind == format::RecordKind::kTokens ? " ids" : " bytes") << ")";
    if (!h.media_type.empty()) out << ", media type " << h.media_type;
  }
  out << "\n";
  // Samples of several fields: one line a field, in the samples' order.
  for (const format::FieldSpec& f : h.fields) {
    out << "  field " << f.name << ": " << format::FieldTypeText(f)
        << (f.image() ? " (an image field)" : "")
        << (f.kind == format::FieldKind::kLabel ? " (the sample's label)" : "") << "\n";
  }
  if (!h.origin.empty()) out << "origin:       " << h.origin << "\n";
  out << "codec:        " << (parts ? "each part's (above)" : CodecText(h.codec));
  if (parts) {
    out << ", " << d.compressed_chunks() << " of " << d.chunk_count()
        << " chunks stored compressed\n";
  } else if (h.version < 2) {
    out << " (format version 1 stores every chunk raw)\n";
  } else {
    out << ", " << d.compressed_chunks() << " of " << d.chunk_count() << " chunks stored compressed"
        << (h.codec.codec != Codec::kNone && d.compressed_chunks() < d.chunk_count()
                ? " (a chunk that does not shrink is stored raw)"
                : "")
        << "\n";
  }
  const uint64_t stored = StoredChunkBytes(d);
  out << "chunk bytes:  " << d.data_bytes() << " of data, " << stored << " stored (ratio "
      << RatioText(d.data_bytes(), stored) << ")\n";
  out << "samples:      " << h.total_samples << "\n";
  std::string shape;
  for (uint64_t v : h.Shape()) {
    if (!shape.empty()) shape += " x ";  // apart: GCC 12's -Wrestrict misfires on "x" + string
    shape += std::to_string(v);
  }
  out << "shape:        " << shape << " (" << h.SampleBytes() << " bytes per sample)\n";
  out << "sample dtype: " << DTypeName(h.sample_dtype)
      << (IsImageDType(h.sample_dtype) ? "" : " (ids, stored exactly)") << "\n";
  if (h.HasLabels()) {
    out << "label dtype:  " << DTypeName(h.label_dtype) << "\n";
    out << "classes:      " << h.num_classes;
    if (const std::vector<std::string>& names = d.class_names(); !names.empty()) {
      out << " (named: ";  // the first eight
      for (size_t i = 0; i < names.size() && i < 8; ++i) out << (i ? ", " : "") << names[i];
      out << (names.size() > 8 ? ", ...)" : ")");
    }
    out << "\n";
  } else {
    out << "labels:       no labels (0 classes; every stored label is 0)\n";
  }
  if (parts) {
    out << "chunks:       " << h.total_chunks << " (at most " << h.chunk_samples
        << " samples each, each part's last fewer; largest " << FormatBytes(d.max_chunk_bytes())
        << ")\n";
  } else {
    out << "chunks:       " << h.total_chunks << " (" << h.chunk_samples
        << " samples each but the last; largest " << FormatBytes(d.max_chunk_bytes()) << ")\n";
    out << "shards:       " << h.shard_count << "\n";
  }
  if (!IsImageDType(h.sample_dtype)) {
    out << "mean, std:    none for ids (stored as 0 and 1)\n";
    return out.str();
  }
  if (parts) out << "mean, std:    pooled from the parts' (each part's weighted by its samples)\n";
  out << "mean:        ";
  for (uint32_t c = 0; c < h.channels; ++c) out << " " << h.mean[c];
  out << "\nstd:         ";
  for (uint32_t c = 0; c < h.channels; ++c) out << " " << h.stddev[c];
  out << "\n";
  return out.str();
}

Result<VerifyReport> VerifyDataset(const Dataset& d, bool show_progress) {
  Progress progress("verifying", d.total_bytes(), show_progress);
  VerifyReport r;
  uint64_t done = 0;
  RF_RETURN_IF_ERROR(ForEachChunk(d, [&](const ChunkView& c) -> Status {
    ++r.chunks;
    r.samples += c.count;
    r.compressed += c.codec != Codec::kNone ? 1 : 0;
    done += c.stored_bytes;
    progress.Update(done);
    return Status::Ok();
  }));
  progress.Finish();
  if (r.samples != d.sample_count()) {
    return Status::Corruption(d.shard_path(0), "chunks hold " + std::to_string(r.samples) +
                                                   " samples, header says " +
                                                   std::to_string(d.sample_count()));
  }
  r.seconds = progress.Seconds();
  return r;
}

}  // namespace rf::convert
