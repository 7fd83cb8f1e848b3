// ChunkCache (io/chunk_cache.h) in one process: a commit's round trip, what a refused commit
// leaves (nothing), caches per dataset id, a chunk corrupted on disk, planted special files,
// claims held by another opener, and Open's checks.
#include "io/chunk_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/io/chunk_cache_testing.h"
#include "tests/testing/scoped_faults.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ChunkBytes;
using testing::FilesIn;
using testing::ReadCached;
using testing::TempDir;
using testing::VerifierFor;

constexpr uint64_t kId = 0x1234abcd5678ef00ULL;
constexpr char kIdDir[] = "dataset-1234abcd5678ef00";

ChunkCacheOptions OptionsIn(const TempDir& tmp, uint64_t budget) {
  ChunkCacheOptions o;
  o.dir = tmp.File("cache");
  o.budget_bytes = budget;
  return o;
}

std::unique_ptr<ChunkCache> OpenOrDie(const ChunkCacheOptions& o, uint64_t id = kId,
                                      uint64_t chunks = 16) {
  Result<std::unique_ptr<ChunkCache>> cache = ChunkCache::Open(o, id, chunks);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return cache.ok() ? std::move(cache).value() : nullptr;
}

// Claims chunk g (expecting it to be this caller's) and commits its n bytes.
Result<CommitOutcome> Put(ChunkCache& cache, uint64_t g, size_t n) {
  Result<ChunkClaim> claim = cache.Claim(g);
  if (!claim.ok()) return claim.status();
  if (claim->kind() != ChunkClaim::Kind::kMine) return Status::Aborted("not mine");
  const std::vector<uint8_t> bytes = ChunkBytes(g, n);
  return cache.Commit(std::move(*claim), bytes.data(), bytes.size(), VerifierFor(g));
}

TEST(ChunkCache, CommitThenLookupReturnsTheBytes) {
  TempDir tmp;
  auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
  ASSERT_NE(cache, nullptr);
  Result<std::optional<CachedChunk>> before = cache->Lookup(3);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_FALSE(before->has_value());

  Result<CommitOutcome> put = Put(*cache, 3, 10001);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(*put, CommitOutcome::kCached);

  Result<std::optional<CachedChunk>> after = cache->Lookup(3);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_TRUE(after->has_value());
  EXPECT_EQ((*after)->bytes, 10001u);
  EXPECT_EQ(ReadCached(**after), ChunkBytes(3, 10001));
  // Read-only: the descriptor refuses writes.
  EXPECT_LT(::write((*after)->file.fd(), "x", 1), 0);

  // A claim now finds it; nothing but the chunk and the index is left in the directory.
  Result<ChunkClaim> claim = cache->Claim(3);
  ASSERT_TRUE(claim.ok()) << claim.status().ToString();
  EXPECT_EQ(claim->kind(), ChunkClaim::Kind::kCached);
  EXPECT_EQ(ReadCached(claim->cached()), ChunkBytes(3, 10001));
  EXPECT_EQ(FilesIn(cache->directory()), (std::vector<std::string>{"chunk-3", "index"}));
  EXPECT_EQ(cache->directory(), tmp.File("cache") + "/" + kIdDir);
  EXPECT_EQ(cache->used_bytes(), 10001u);

  const ChunkCacheStats s = cache->stats();
  EXPECT_EQ(s.hits, 2u);    // the Lookup after, the last Claim
  EXPECT_EQ(s.misses, 2u);  // the Lookup before, Put's Claim
  EXPECT_EQ(s.commits, 1u);
  EXPECT_EQ(s.bytes_written, 10001u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.refused, 0u);
}

TEST(ChunkCache, FailedVerifyLeavesNothing) {
  TempDir tmp;
  auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
  ASSERT_NE(cache, nullptr);
  Result<ChunkClaim> claim = cache->Claim(5);
  ASSERT_TRUE(claim.ok());
  ASSERT_EQ(claim->kind(), ChunkClaim::Kind::kMine);
  std::vector<uint8_t> bytes = ChunkBytes(5, 4096);
  bytes[100] ^= 1;  // the fetch brought a flipped bit
  Result<CommitOutcome> put =
      cache->Commit(std::move(*claim), bytes.data(), bytes.size(), VerifierFor(5));
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.status().IsCorruption());
  EXPECT_EQ(put.status().ToString(), "remote: chunk 5 at byte 100: checksum mismatch");
  EXPECT_EQ(FilesIn(cache->directory()), (std::vector<std::string>{"index"}));
  EXPECT_EQ(cache->used_bytes(), 0u);
  EXPECT_EQ(cache->stats().refused, 1u);
  EXPECT_EQ(cache->stats().commits, 0u);
  Result<std::optional<CachedChunk>> found = cache->Lookup(5);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  // The claim went with the commit: the next claimant fetches.
  Result<ChunkClaim> again = cache->Claim(5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind(), ChunkClaim::Kind::kMine);
}

TEST(ChunkCache, RefusedWriteLeavesNothingAndTheCacheWorksAfter) {
  for (const testing::InjectedFault& fault : testing::kWriteFaults) {
    SCOPED_TRACE(fault.fault);
    TempDir tmp;
    auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
    ASSERT_NE(cache, nullptr);
    const std::string chunk_path = cache->directory() + "/chunk-2";
    {
      std::string spec = fault.fault;
      spec += "@path=" + chunk_path;
      testing::ScopedFaults faults(spec);
      Result<CommitOutcome> put = Put(*cache, 2, 5000);
      ASSERT_FALSE(put.ok());
      EXPECT_TRUE(put.status().IsIOError());
      // The chunk is named before the byte offset where there is one ("chunk 2 at byte 0").
      std::string tail = fault.message;
      if (tail.rfind(": at byte", 0) == 0) tail = tail.substr(1);
      std::string want = chunk_path;
      want += ": chunk 2";
      want += tail;
      EXPECT_EQ(put.status().ToString(), want);
      EXPECT_EQ(FilesIn(cache->directory()), (std::vector<std::string>{"index"}));
      EXPECT_EQ(cache->used_bytes(), 0u);
      EXPECT_EQ(cache->stats().refused, 1u);
    }
    Result<CommitOutcome> put = Put(*cache, 2, 5000);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    EXPECT_EQ(*put, CommitOutcome::kCached);
    EXPECT_EQ(cache->used_bytes(), 5000u);
  }
}

TEST(ChunkCache, ChunkLargerThanTheBudgetIsNotCached) {
  TempDir tmp;
  auto cache = OpenOrDie(OptionsIn(tmp, 1000));
  ASSERT_NE(cache, nullptr);
  Result<CommitOutcome> fits = Put(*cache, 1, 1000);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(*fits, CommitOutcome::kCached);
  Result<CommitOutcome> big = Put(*cache, 2, 1001);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(*big, CommitOutcome::kNotKept);
  EXPECT_EQ(FilesIn(cache->directory()), (std::vector<std::string>{"chunk-1", "index"}));
  EXPECT_EQ(cache->stats().not_kept, 1u);
  EXPECT_EQ(cache->stats().evictions, 0u);
}

TEST(ChunkCache, AnotherDatasetIdDoesNotSeeTheChunks) {
  TempDir tmp;
  const ChunkCacheOptions o = OptionsIn(tmp, 1 << 20);
  {
    auto a = OpenOrDie(o, kId);
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(Put(*a, 0, 777).ok());
  }
  auto b = OpenOrDie(o, kId + 1);
  ASSERT_NE(b, nullptr);
  Result<std::optional<CachedChunk>> found = b->Lookup(0);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  Result<ChunkClaim> claim = b->Claim(0);
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->kind(), ChunkClaim::Kind::kMine);
  EXPECT_EQ(b->used_bytes(), 0u);
  // The other id's cache is left as it was, and is still its own.
  EXPECT_EQ(FilesIn(o.dir), (std::vector<std::string>{kIdDir, "dataset-1234abcd5678ef01"}));
  auto a = OpenOrDie(o, kId);
  ASSERT_NE(a, nullptr);
  Result<std::optional<CachedChunk>> again = a->Lookup(0);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ(ReadCached(**again), ChunkBytes(0, 777));
  // The same id with another chunk count is another dataset under a clashing id: refused.
  Result<std::unique_ptr<ChunkCache>> clash = ChunkCache::Open(o, kId, 17);
  ASSERT_FALSE(clash.ok());
  EXPECT_TRUE(clash.status().IsInvalidArgument());
  std::string want = o.dir + "/" + kIdDir;
  want += "/index: the cache of dataset id 1234abcd5678ef00 holds 16 chunks;";
  want += " this dataset has 17";
  EXPECT_EQ(clash.status().message(), want);
}

TEST(ChunkCache, CorruptedCachedFileIsHandedOutThenInvalidatedByTheReader) {
  TempDir tmp;
  auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(Put(*cache, 4, 8192).ok());
  testing::FlipBit(cache->directory() + "/chunk-4", 4000, 3);
  // The cache trusts its rename: the file is handed out as it is on disk...
  Result<ChunkClaim> claim = cache->Claim(4);
  ASSERT_TRUE(claim.ok());
  ASSERT_EQ(claim->kind(), ChunkClaim::Kind::kCached);
  const std::vector<uint8_t> read = ReadCached(claim->cached());
  // ...and the reader's own check of the checksum catches it, then drops it from the cache.
  const Status checked = VerifierFor(4)(read.data(), read.size());
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.ToString(), "remote: chunk 4 at byte 4000: checksum mismatch");
  ASSERT_TRUE(cache->Invalidate(4).ok());
  EXPECT_EQ(cache->used_bytes(), 0u);
  EXPECT_EQ(FilesIn(cache->directory()), (std::vector<std::string>{"index"}));
  Result<ChunkClaim> refetch = cache->Claim(4);
  ASSERT_TRUE(refetch.ok());
  EXPECT_EQ(refetch->kind(), ChunkClaim::Kind::kMine);
}

TEST(ChunkCache, PlantedSpecialFilesAreNeverFollowedOrReplaced) {
  TempDir tmp;
  auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
  ASSERT_NE(cache, nullptr);
  const std::string dir = cache->directory();
  const std::string secret = tmp.File("secret");
  testing::WriteAll(secret, "secret", 6);
  ASSERT_EQ(::symlink(secret.c_str(), (dir + "/chunk-1").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir + "/chunk-2").c_str(), 0644), 0);
  ASSERT_EQ(::symlink(secret.c_str(), (dir + "/chunk-3.claim").c_str()), 0);

  for (uint64_t g : {1, 2}) {
    SCOPED_TRACE(g);
    Result<std::optional<CachedChunk>> found = cache->Lookup(g);  // a FIFO does not hang it
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_FALSE(found->has_value());
    Result<CommitOutcome> put = Put(*cache, g, 100);
    ASSERT_FALSE(put.ok());
    EXPECT_TRUE(put.status().IsInvalidArgument());
    std::string want = dir + "/chunk-" + std::to_string(g);
    want += g == 1 ? " is a symbolic link" : " is a FIFO";
    want += ", not a chunk the cache wrote; left as it is";
    EXPECT_EQ(put.status().message(), want);
  }
  // A claim file that is a link is not followed either.
  Result<ChunkClaim> claim = cache->Claim(3);
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.status().err(), ELOOP);
  EXPECT_EQ(claim.status().path(), dir + "/chunk-3.claim");

  // Reopened (the rebuild's scan), they are still there, untouched, and count for nothing.
  cache.reset();
  cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->used_bytes(), 0u);
  EXPECT_TRUE(IsSymbolicLink(dir + "/chunk-1"));
  EXPECT_TRUE(IsSymbolicLink(dir + "/chunk-3.claim"));
  struct stat st;
  ASSERT_EQ(::lstat((dir + "/chunk-2").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(testing::ReadAll(secret), (std::vector<uint8_t>{'s', 'e', 'c', 'r', 'e', 't'}));
  EXPECT_EQ(FilesIn(dir),
            (std::vector<std::string>{"chunk-1", "chunk-2", "chunk-3.claim", "index"}));
}

TEST(ChunkCache, ClaimHeldByAnotherOpenerIsBusyThenCached) {
  TempDir tmp;
  ChunkCacheOptions o = OptionsIn(tmp, 1 << 20);
  auto fetcher = OpenOrDie(o);
  o.claim_wait = std::chrono::milliseconds(0);  // gives up at once: no timing in the test
  auto waiter = OpenOrDie(o);
  ASSERT_NE(fetcher, nullptr);
  ASSERT_NE(waiter, nullptr);
  Result<ChunkClaim> mine = fetcher->Claim(7);
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->kind(), ChunkClaim::Kind::kMine);
  Result<ChunkClaim> busy = waiter->Claim(7);
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(busy->kind(), ChunkClaim::Kind::kBusy);
  EXPECT_EQ(waiter->stats().waits, 1u);
  EXPECT_EQ(waiter->stats().wait_timeouts, 1u);
  // A busy answer is not a claim: it cannot be committed.
  const std::vector<uint8_t> bytes = ChunkBytes(7, 300);
  Result<CommitOutcome> refused =
      waiter->Commit(std::move(*busy), bytes.data(), bytes.size(), VerifierFor(7));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsInvalidArgument());

  ASSERT_TRUE(fetcher->Commit(std::move(*mine), bytes.data(), bytes.size(), VerifierFor(7)).ok());
  Result<ChunkClaim> now = waiter->Claim(7);
  ASSERT_TRUE(now.ok());
  ASSERT_EQ(now->kind(), ChunkClaim::Kind::kCached);
  EXPECT_EQ(ReadCached(now->cached()), bytes);
  // A claim dropped without a commit frees the chunk for the next claimant.
  {
    Result<ChunkClaim> dropped = fetcher->Claim(8);
    ASSERT_TRUE(dropped.ok());
    ASSERT_EQ(dropped->kind(), ChunkClaim::Kind::kMine);
  }
  Result<ChunkClaim> next = waiter->Claim(8);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->kind(), ChunkClaim::Kind::kMine);
}

TEST(ChunkCache, OpenRefusesWhatCannotBeACache) {
  TempDir tmp;
  ChunkCacheOptions o = OptionsIn(tmp, 0);
  Result<std::unique_ptr<ChunkCache>> zero = ChunkCache::Open(o, kId, 4);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), o.dir + ": the cache's budget is 0 bytes");
  o.budget_bytes = 100;
  Result<std::unique_ptr<ChunkCache>> none = ChunkCache::Open(o, kId, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), o.dir + ": a dataset of 0 chunks");
  ChunkCacheOptions empty;
  empty.budget_bytes = 100;
  Result<std::unique_ptr<ChunkCache>> nodir = ChunkCache::Open(empty, kId, 4);
  ASSERT_FALSE(nodir.ok());
  EXPECT_EQ(nodir.status().message(), "the cache directory is empty");
  // The dataset's directory planted as a link to elsewhere: refused, not followed.
  ASSERT_EQ(::mkdir(o.dir.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(tmp.path().c_str(), (o.dir + "/" + kIdDir).c_str()), 0);
  Result<std::unique_ptr<ChunkCache>> link = ChunkCache::Open(o, kId, 4);
  ASSERT_FALSE(link.ok());
  EXPECT_TRUE(link.status().IsInvalidArgument());
  std::string want = o.dir + "/" + kIdDir;
  want += ": the cache directory is a symbolic link, not a directory";
  EXPECT_EQ(link.status().message(), want);
}

TEST(ChunkCache, ReopenRebuildsTheIndexAndHoldsTheNewBudget) {
  TempDir tmp;
  {
    auto cache = OpenOrDie(OptionsIn(tmp, 10000));
    ASSERT_NE(cache, nullptr);
    for (uint64_t g = 0; g < 4; ++g) ASSERT_TRUE(Put(*cache, g, 1000 + g).ok());
    EXPECT_EQ(cache->used_bytes(), 4006u);
  }
  // A chunk file the index does not know of (a process killed after its rename) is counted.
  const std::string dir = tmp.File("cache") + "/" + kIdDir;
  const std::vector<uint8_t> lost = ChunkBytes(9, 500);
  testing::WriteAll(dir + "/chunk-9", lost.data(), lost.size());
  {
    auto cache = OpenOrDie(OptionsIn(tmp, 10000));
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->used_bytes(), 4506u);
  }
  // A smaller budget: evicted down to it, least recently used first (chunk 9, never used by the
  // cache, then 0 and 1).
  auto cache = OpenOrDie(OptionsIn(tmp, 2500));
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->used_bytes(), 2005u);
  EXPECT_EQ(FilesIn(dir), (std::vector<std::string>{"chunk-2", "chunk-3", "index"}));
  EXPECT_EQ(cache->stats().evictions, 3u);
}

TEST(ChunkCache, IndexThatIsNotAnIndexIsRemadeFromTheFiles) {
  TempDir tmp;
  {
    auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(Put(*cache, 5, 1234).ok());
  }
  // A torn first write, or another program's file: 100 bytes of garbage.
  const std::string index = tmp.File("cache") + "/" + kIdDir + "/index";
  const std::vector<uint8_t> garbage(100, 0xa5);
  testing::WriteAll(index, garbage.data(), garbage.size());
  auto cache = OpenOrDie(OptionsIn(tmp, 1 << 20));
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->used_bytes(), 1234u);
  EXPECT_EQ(testing::ReadAll(index).size(), 64u + 16u * 16u);  // the header, 16 bytes a chunk
  Result<std::optional<CachedChunk>> found = cache->Lookup(5);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(ReadCached(**found), ChunkBytes(5, 1234));
}

}  // namespace
}  // namespace rf
