// What Dataset::Open reads of each file of a dataset, wherever the file is (io/dataset.cc for
// local files, io/dataset_remote.cc for remote objects; io/dataset_shards.cc): its header, its chunk index and its class
// names, decoded and checked against the file's size. Internal to io/.
//
// Memory: the index is sized from the header only after CheckFileSize held it to the file's
// size, so a forged header cannot size anything past the bytes there are.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/format.h"

namespace rf {

struct OpenedShard {
  format::Header header;
  std::vector<format::ChunkEntry> entries;
  uint64_t size = 0;
  std::vector<std::string> class_names;  // the header's class names block, where it has one
};

// Reads up to n bytes at offset into buf, fewer only where the file ends.
using ReadSomeFn = std::function<Result<size_t>(void* buf, size_t n, uint64_t offset)>;

// The shard at `path` (as messages name it), `size` bytes long, read through `read`.
Result<OpenedShard> DecodeShard(const std::string& path, uint64_t size, const ReadSomeFn& read);

}  // namespace rf
