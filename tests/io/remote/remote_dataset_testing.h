// What the remote dataset tests share: a local file's bytes, and every chunk of a remote dataset
// read through the streaming reader and checked against the same dataset's local files.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/file.h"

namespace rf::testing {

// The bytes [offset, offset + n) of a local file.
inline std::vector<uint8_t> LocalBytes(const std::string& path, uint64_t offset, uint64_t n) {
  std::vector<uint8_t> out(n);
  auto f = File::Open(path, O_RDONLY);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  if (f.ok()) {
    EXPECT_TRUE(f->ReadAt(out.data(), n, offset).ok());
  }
  return out;
}

// Every chunk through the streaming reader (range requests into the slots), against the local
// file's stored bytes and the checksum.
inline void ReadEveryChunk(const Dataset& remote, const Dataset& local) {
  const size_t slots = 4;
  std::vector<std::vector<uint8_t>> bufs(slots,
                                         std::vector<uint8_t>(local.max_chunk_bytes() + 4096));
  std::vector<iovec> iov;
  for (auto& b : bufs) iov.push_back({b.data(), b.size()});
  ReaderOptions o;
  o.mode = IoMode::kBuffered;
  o.read_bytes = 8192;  // several ranges a chunk
  auto reader = ChunkReader::Create(remote, iov, o);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_STREQ((*reader)->backend(), "http");
  std::vector<ChunkDone> done;
  uint64_t next = 0, checked = 0;
  std::vector<uint32_t> free_slots = {0, 1, 2, 3};
  while (checked < remote.chunk_count()) {
    while (!free_slots.empty() && next < remote.chunk_count()) {
      ASSERT_TRUE((*reader)->Submit(next++, free_slots.back()).ok());
      free_slots.pop_back();
    }
    done.clear();
    Status st = (*reader)->Wait(done, 1);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (const ChunkDone& c : done) {
      const ChunkLocation& at = local.chunk(c.chunk);
      std::vector<uint8_t> want =
          LocalBytes(local.shard_path(at.shard), at.entry.offset, at.entry.stored_bytes);
      EXPECT_EQ(std::memcmp(bufs[c.slot].data(), want.data(), want.size()), 0)
          << "chunk " << c.chunk;
      const Status verified = local.compressed() ? remote.VerifyStored(c.chunk, bufs[c.slot].data())
                                                 : remote.VerifyChunk(c.chunk, bufs[c.slot].data());
      EXPECT_TRUE(verified.ok()) << verified.ToString();
      free_slots.push_back(c.slot);
      ++checked;
    }
  }
}

}  // namespace rf::testing
