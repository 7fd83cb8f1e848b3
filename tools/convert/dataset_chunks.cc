#include "tools/convert/dataset_chunks.h"

#include <fcntl.h>

#include <algorithm>
#include <vector>

#include "io/file.h"

namespace rf::convert {

void LabelsAs(DType from, const uint8_t* labels, uint32_t n, Elem to, std::vector<uint8_t>* out) {
  out->resize(size_t{n} * ElemSize(to));
  if (ElemAsDType(to) == from) {
    std::copy_n(labels, out->size(), out->data());
    return;
  }
  for (uint32_t i = 0; i < n; ++i) StoreInteger(to, LoadLabel(from, labels, i), out->data(), i);
}

uint64_t StoredChunkBytes(const Dataset& d) {
  uint64_t bytes = 0;
  for (size_t c = 0; c < d.chunk_count(); ++c) bytes += d.chunk(c).entry.stored_bytes;
  return bytes;
}

Status ForEachChunk(const Dataset& d, const std::function<Status(const ChunkView&)>& fn) {
  std::vector<File> files;
  for (size_t s = 0; s < d.shard_count(); ++s) {
    RF_ASSIGN_OR_RETURN(File f, File::Open(d.shard_path(s), O_RDONLY));
    files.push_back(std::move(f));
  }
  // A raw chunk is read straight into `data`; a compressed one into `stored`, then decompressed
  // into `data`. Both are sized once, from the index (Dataset::Open bounded them).
  std::vector<uint8_t> data(d.max_chunk_bytes());
  std::vector<uint8_t> stored(d.compressed() ? d.max_stored_bytes() : 0);
  Decompressor decompressor;
  for (size_t c = 0; c < d.chunk_count(); ++c) {
    const ChunkLocation& at = d.chunk(c);
    const format::ChunkEntry& e = at.entry;
    uint8_t* read_into = e.compressed() ? stored.data() : data.data();
    if (Status st = files[at.shard].ReadAt(read_into, e.stored_bytes, e.offset); !st.ok()) {
      return std::move(st.WithChunk(e.index));
    }
    if (e.compressed()) {
      RF_RETURN_IF_ERROR(d.VerifyStored(c, stored.data()));
      RF_RETURN_IF_ERROR(d.DecodeChunk(c, stored.data(), data.data(), decompressor));
    } else {
      RF_RETURN_IF_ERROR(d.VerifyChunk(c, data.data()));
    }
    ChunkView v;
    v.index = e.index;
    v.first_sample = e.first_sample;
    v.count = e.sample_count;
    v.stored_bytes = e.stored_bytes;
    v.codec = e.codec;
    v.samples = data.data();
    v.labels = data.data() + d.LabelsOffset(c);
    RF_RETURN_IF_ERROR(fn(v));
  }
  return Status::Ok();
}

}  // namespace rf::convert
