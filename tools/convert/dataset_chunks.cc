#include "tools/convert/dataset_chunks.h"

#include <algorithm>
#include <vector>

namespace rf::convert {

void LabelsAs(DType from, const uint8_t* labels, uint32_t n, Elem to, std::vector<uint8_t>* out) {
  out->resize(size_t{n} * ElemSize(to));
  if (ElemAsDType(to) == from) {
    std::copy_n(labels, out->size(), out->data());
    return;
  }
  for (uint32_t i = 0; i < n; ++i) StoreInteger(to, LoadLabel(from, labels, i), out->data(), i);
}

Status ForEachChunk(const Dataset& d, const std::function<Status(const ChunkView&)>& fn) {
  std::vector<uint8_t> buf(d.max_chunk_bytes());
  for (size_t c = 0; c < d.chunk_count(); ++c) {
    RF_RETURN_IF_ERROR(d.ReadChunk(c, buf.data()));
    const format::ChunkEntry& e = d.chunk(c).entry;
    ChunkView v;
    v.index = e.index;
    v.first_sample = e.first_sample;
    v.count = e.sample_count;
    v.stored_bytes = e.stored_bytes;
    v.samples = buf.data();
    v.labels = buf.data() + d.LabelsOffset(c);
    RF_RETURN_IF_ERROR(fn(v));
  }
  return Status::Ok();
}

}  // namespace rf::convert
