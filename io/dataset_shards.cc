#include "io/dataset_shards.h"

#include <algorithm>

#include "io/file.h"

namespace rf {
namespace {

// Exactly n bytes at offset, or Corruption where the file ends first (File::ReadAt's).
Status ReadExactly(const std::string& path, const ReadSomeFn& read, void* buf, size_t n,
                   uint64_t offset) {
  RF_ASSIGN_OR_RETURN(size_t got, read(buf, n, offset));
  return got < n ? TruncatedRead(path, n, got, offset) : Status::Ok();
}

}  // namespace

Result<OpenedShard> DecodeShard(const std::string& path, uint64_t size, const ReadSomeFn& read) {
  std::vector<uint8_t> head(format::kHeaderBytes);
  RF_ASSIGN_OR_RETURN(size_t got, read(head.data(), head.size(), 0));
  OpenedShard s;
  RF_ASSIGN_OR_RETURN(s.header, format::DecodeHeader(head.data(), got, path));
  RF_RETURN_IF_ERROR(format::CheckFileSize(s.header, size, path));
  // Read in pieces, the buffer grown as each arrives: its memory follows the bytes a file (or a
  // server) delivers, never only the sizes its header and its object claim.
  const uint64_t index_bytes = s.header.file_size - s.header.index_offset;
  constexpr uint64_t kIndexPiece = uint64_t{64} << 20;
  std::vector<uint8_t> index;
  for (uint64_t at = 0; at < index_bytes;) {
    const size_t n = static_cast<size_t>(std::min(kIndexPiece, index_bytes - at));
    index.resize(static_cast<size_t>(at) + n);
    RF_RETURN_IF_ERROR(ReadExactly(path, read, index.data() + at, n, s.header.index_offset + at));
    at += n;
  }
  RF_ASSIGN_OR_RETURN(s.entries, format::DecodeIndex(s.header, index.data(), index.size(), path));
  if (s.header.names_bytes != 0) {  // at most kMaxClassNamesBytes (DecodeHeader)
    std::vector<uint8_t> names(s.header.names_bytes);
    RF_RETURN_IF_ERROR(ReadExactly(path, read, names.data(), names.size(), s.header.names_offset));
    RF_ASSIGN_OR_RETURN(s.class_names,
                        format::DecodeClassNames(s.header, names.data(), names.size(), path));
  }
  s.size = size;
  return s;
}

}  // namespace rf
