// ChunkCache's eviction (io/chunk_cache.h): the budget held with both policies, and Belady's
// choice against LRU's on schedules whose every hit and eviction is counted by hand below.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/chunk_cache.h"
#include "tests/io/chunk_cache_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ChunkBytes;
using testing::FilesIn;
using testing::PlaySchedule;
using testing::TempDir;
using testing::VerifierFor;

constexpr uint64_t kId = 42;

std::unique_ptr<ChunkCache> OpenCache(const TempDir& tmp, uint64_t budget, CachePolicy policy,
                                      uint64_t chunks) {
  ChunkCacheOptions o;
  o.dir = tmp.File("cache");
  o.budget_bytes = budget;
  o.policy = policy;
  Result<std::unique_ptr<ChunkCache>> cache = ChunkCache::Open(o, kId, chunks);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return cache.ok() ? std::move(cache).value() : nullptr;
}

const char* Name(CachePolicy p) { return p == CachePolicy::kBelady ? "belady" : "lru"; }

// The bytes of the chunk files in the directory, summed.
uint64_t BytesOnDisk(const std::string& dir) {
  uint64_t sum = 0;
  for (const std::string& name : FilesIn(dir)) {
    if (name.rfind("chunk-", 0) == 0) sum += testing::ReadAll(dir + "/" + name).size();
  }
  return sum;
}

TEST(ChunkCachePolicy, BudgetHeldExactlyWithBothPolicies) {
  // Chunks of 1000 + 100 g bytes through a budget of 3500: after every commit the files sum to
  // what the index says, never past the budget.
  for (CachePolicy policy : {CachePolicy::kBelady, CachePolicy::kLru}) {
    SCOPED_TRACE(Name(policy));
    TempDir tmp;
    auto cache = OpenCache(tmp, 3500, policy, 10);
    ASSERT_NE(cache, nullptr);
    std::vector<uint64_t> schedule;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (uint64_t g = 0; g < 10; ++g) schedule.push_back(epoch == 0 ? g : 9 - g);
    }
    ASSERT_TRUE(cache->SetSchedule(schedule).ok());
    uint64_t most = 0;
    for (size_t p = 0; p < schedule.size(); ++p) {
      const uint64_t g = schedule[p];
      cache->Advance(p + 1);
      Result<ChunkClaim> claim = cache->Claim(g);
      ASSERT_TRUE(claim.ok()) << claim.status().ToString();
      if (claim->kind() == ChunkClaim::Kind::kMine) {
        const std::vector<uint8_t> bytes = ChunkBytes(g, 1000 + 100 * g);
        Result<CommitOutcome> put =
            cache->Commit(std::move(*claim), bytes.data(), bytes.size(), VerifierFor(g));
        ASSERT_TRUE(put.ok()) << put.status().ToString();
      }
      const uint64_t on_disk = BytesOnDisk(cache->directory());
      EXPECT_EQ(on_disk, cache->used_bytes()) << "after read " << p;
      EXPECT_LE(on_disk, 3500u) << "after read " << p;
      most = std::max(most, on_disk);
    }
    // It does fill: three chunks of the largest (3000 bytes and more) were held at once.
    EXPECT_GE(most, 3000u);
    EXPECT_GT(cache->stats().evictions, 0u);
  }
}

// Chunks of 1000 bytes, two of them in the budget, read 0 1 2 0 2 1.
//   Belady: 0, 1 kept; 2 comes (next use 4) and evicts 1 (next use 5, the farthest; 0's is 3);
//     0, 2 hit (their next uses are then never); 1 comes again, evicts 0, the older of two
//     never-used-again chunks. 2 hits, 4 misses, 2 evictions.
//   LRU: 2 evicts 0; 0 evicts 1; 2 hits; 1 evicts 0. 1 hit, 5 misses, 3 evictions.
TEST(ChunkCachePolicy, BeladyEvictsTheFarthestNextUse) {
  const std::vector<uint64_t> schedule = {0, 1, 2, 0, 2, 1};
  auto size = [](uint64_t) { return size_t{1000}; };
  {
    TempDir tmp;
    auto cache = OpenCache(tmp, 2000, CachePolicy::kBelady, 3);
    ASSERT_NE(cache, nullptr);
    // The first three reads, then what is cached: 0 and 2, not 1.
    testing::Played played = PlaySchedule(*cache, schedule, size, 3);
    ASSERT_TRUE(played.ok);
    EXPECT_EQ(FilesIn(cache->directory()),
              (std::vector<std::string>{"chunk-0", "chunk-2", "index"}));
  }
  for (CachePolicy policy : {CachePolicy::kBelady, CachePolicy::kLru}) {
    SCOPED_TRACE(Name(policy));
    TempDir tmp;
    auto cache = OpenCache(tmp, 2000, policy, 3);
    ASSERT_NE(cache, nullptr);
    testing::Played played = PlaySchedule(*cache, schedule, size);
    ASSERT_TRUE(played.ok);
    const bool belady = policy == CachePolicy::kBelady;
    EXPECT_EQ(played.hits, belady ? 2u : 1u);
    EXPECT_EQ(played.misses, belady ? 4u : 5u);
    EXPECT_EQ(cache->stats().hits, played.hits);
    EXPECT_EQ(cache->stats().evictions, belady ? 2u : 3u);
    EXPECT_EQ(FilesIn(cache->directory()),
              (std::vector<std::string>{"chunk-1", "chunk-2", "index"}));
  }
}

// Five chunks of 1000 bytes, three in the budget, two epochs of 0 1 2 3 4.
//   LRU: every read misses (each chunk is evicted just before it comes back): 0 hits, 10
//     misses, 10 commits, 7 evictions.
//   Belady: 0 1 2 kept; 3 (next use 8) and 4 (9) are needed later than any cached chunk (2's
//     next is 7), so not kept; 0 1 2 hit; 3 and 4 come with nothing needed again, and evict the
//     oldest (0, then 1). 3 hits, 7 misses, 5 commits, 2 not kept, 2 evictions.
TEST(ChunkCachePolicy, BeladyBeatsLruOnACyclicScheduleLargerThanTheCache) {
  std::vector<uint64_t> schedule;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (uint64_t g = 0; g < 5; ++g) schedule.push_back(g);
  }
  auto size = [](uint64_t) { return size_t{1000}; };
  for (CachePolicy policy : {CachePolicy::kBelady, CachePolicy::kLru}) {
    SCOPED_TRACE(Name(policy));
    TempDir tmp;
    auto cache = OpenCache(tmp, 3000, policy, 5);
    ASSERT_NE(cache, nullptr);
    testing::Played played = PlaySchedule(*cache, schedule, size);
    ASSERT_TRUE(played.ok);
    const ChunkCacheStats s = cache->stats();
    const bool belady = policy == CachePolicy::kBelady;
    EXPECT_EQ(played.hits, belady ? 3u : 0u);
    EXPECT_EQ(played.misses, belady ? 7u : 10u);
    EXPECT_EQ(s.hits, played.hits);
    EXPECT_EQ(s.misses, played.misses);
    EXPECT_EQ(s.commits, belady ? 5u : 10u);
    EXPECT_EQ(s.bytes_written, belady ? 5000u : 10000u);
    EXPECT_EQ(s.not_kept, belady ? 2u : 0u);
    EXPECT_EQ(s.evictions, belady ? 2u : 7u);
    EXPECT_EQ(cache->used_bytes(), 3000u);
    EXPECT_EQ(FilesIn(cache->directory()),
              (std::vector<std::string>{"chunk-2", "chunk-3", "chunk-4", "index"}));
  }
}

TEST(ChunkCachePolicy, ScheduleNamingAChunkPastTheCountIsRefused) {
  TempDir tmp;
  auto cache = OpenCache(tmp, 3000, CachePolicy::kBelady, 5);
  ASSERT_NE(cache, nullptr);
  const std::vector<uint64_t> schedule = {0, 1, 5};
  const Status st = cache->SetSchedule(schedule);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsInvalidArgument());
  std::string want = cache->directory();
  want += ": schedule entry 2 is chunk 5 of a dataset of 5 chunks";
  EXPECT_EQ(st.message(), want);
}

}  // namespace
}  // namespace rf
