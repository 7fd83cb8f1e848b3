#include "io/chunk_write_queue.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

TEST(ChunkWriteQueue, WritesEveryChunkInOrderWithItsChecksum) {
  TempDir t;
  auto f = File::Open(t.File("w.bin"), O_RDWR | O_CREAT | O_TRUNC);
  ASSERT_TRUE(f.ok());
  auto q = ChunkWriteQueue::Create(2, 4096);
  ASSERT_TRUE(q.ok());
  std::vector<format::ChunkEntry> entries;
  uint64_t next_offset = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    uint8_t* b = (*q)->Acquire();
    std::memset(b, static_cast<int>(i), 4096);
    format::ChunkEntry e;
    e.index = i;
    e.data_bytes = 4096;
    ASSERT_TRUE((*q)->Submit(b, &f.value(), e, &entries, &next_offset).ok());
  }
  ASSERT_TRUE((*q)->Drain().ok());
  ASSERT_EQ(entries.size(), 50u);
  const auto bytes = testing::ReadAll(t.File("w.bin"));
  ASSERT_EQ(bytes.size(), 50u * 4096);
  for (uint64_t i = 0; i < 50; ++i) {
    EXPECT_EQ(entries[i].index, i);
    EXPECT_EQ(entries[i].offset, i * 4096);
    EXPECT_EQ(entries[i].stored_bytes, 4096u);
    EXPECT_EQ(bytes[i * 4096 + 100], static_cast<uint8_t>(i));
    EXPECT_EQ(entries[i].checksum, Checksum(&bytes[i * 4096], 4096));
  }
}

TEST(ChunkWriteQueue, WriteErrorIsKeptAndNamesTheChunk) {
  TempDir t;
  testing::WriteAll(t.File("ro.bin"), std::vector<uint8_t>(10, 0));
  auto f = File::Open(t.File("ro.bin"), O_RDONLY);  // writes fail with EBADF
  ASSERT_TRUE(f.ok());
  auto q = ChunkWriteQueue::Create(2, 4096);
  ASSERT_TRUE(q.ok());
  std::vector<format::ChunkEntry> entries;
  format::ChunkEntry e;
  e.index = 7;
  e.data_bytes = 4096;
  uint64_t next_offset = 8192;
  ASSERT_TRUE((*q)->Submit((*q)->Acquire(), &f.value(), e, &entries, &next_offset).ok());
  Status st = (*q)->Drain();
  EXPECT_TRUE(st.IsIOError());
  EXPECT_EQ(
      st.ToString(),
      t.File("ro.bin") + ": chunk 7 at byte 8192: write failed: Bad file descriptor (errno 9)");
  EXPECT_TRUE(entries.empty());
  EXPECT_EQ((*q)->Submit((*q)->Acquire(), &f.value(), e, &entries, &next_offset).ToString(),
            st.ToString());
}

}  // namespace
}  // namespace rf
