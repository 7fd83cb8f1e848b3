#include "tools/convert/dataset_chunks.h"

#include <fcntl.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "io/chunk_fetcher.h"

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
  RF_ASSIGN_OR_RETURN(ChunkFetcher fetcher, ChunkFetcher::Create(d));
  // Sized once, from the index, and left uninitialized: its pages are faulted in by what the
  // chunks really hold (a compressed chunk's declared data is only what its frame could make).
  const std::unique_ptr<uint8_t[]> buffer(new uint8_t[d.max_chunk_bytes()]);
  uint8_t* const data = buffer.get();
  for (size_t c = 0; c < d.chunk_count(); ++c) {
    RF_RETURN_IF_ERROR(fetcher.Fetch(c, data));
    const ChunkLocation& at = d.chunk(c);
    const format::ChunkEntry& e = at.entry;
    ChunkView v;
    v.index = c;
    v.first_sample = at.first_sample;
    v.count = e.sample_count;
    v.stored_bytes = e.stored_bytes;
    v.codec = e.codec;
    v.samples = data;
    v.labels = data + d.LabelsOffset(c);
    if (d.header().variable()) v.records = data + d.RecordsOffset(c);
    RF_RETURN_IF_ERROR(fn(v));
  }
  return Status::Ok();
}

}  // namespace rf::convert
