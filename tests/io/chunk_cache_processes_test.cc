// ChunkCache (io/chunk_cache.h) across processes: ranks of one machine fetch each chunk once in
// all, through the claim locks (and so do threads sharing one cache); a writer killed in the middle
// of a commit leaves no chunk a later run trusts, and its temporary and claim are cleaned at the
// next Open.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/chunk_cache.h"
#include "tests/io/chunk_cache_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::ChunkBytes;
using testing::FilesIn;
using testing::ReadCached;
using testing::TempDir;
using testing::VerifierFor;

constexpr uint64_t kId = 7;
constexpr uint64_t kChunks = 24;

size_t SizeOf(uint64_t g) { return 3000 + 17 * g; }

ChunkCacheOptions OptionsIn(const TempDir& tmp) {
  ChunkCacheOptions o;
  o.dir = tmp.File("cache");
  o.budget_bytes = 1 << 20;                 // every chunk fits: none is fetched twice
  o.claim_wait = std::chrono::minutes(10);  // never reached: a wait ends with the fetch
  return o;
}

// Exit codes of a child, each one thing that went wrong.
enum ChildExit { kOk = 0, kOpenFailed = 10, kClaimFailed, kBusy, kCommitFailed, kWrongBytes };

// One rank: reads every chunk twice, starting at its own place, claiming each; a chunk that is
// its to fetch is "fetched" (logged to the shared log with one O_APPEND write) and committed, a
// cached one read and compared. Waits on the start pipe first so the ranks start together.
int Rank(const ChunkCacheOptions& o, int rank, int start_fd, const std::string& log) {
  char go;
  if (::read(start_fd, &go, 1) < 0) return kOpenFailed;
  Result<std::unique_ptr<ChunkCache>> opened = ChunkCache::Open(o, kId, kChunks);
  if (!opened.ok()) return kOpenFailed;
  ChunkCache& cache = **opened;
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (log_fd < 0) return kOpenFailed;
  for (uint64_t i = 0; i < 2 * kChunks; ++i) {
    const uint64_t g = (i + 5 * static_cast<uint64_t>(rank)) % kChunks;
    Result<ChunkClaim> claim = cache.Claim(g);
    if (!claim.ok()) return kClaimFailed;
    if (claim->kind() == ChunkClaim::Kind::kBusy) return kBusy;
    if (claim->kind() == ChunkClaim::Kind::kCached) {
      if (ReadCached(claim->cached()) != ChunkBytes(g, SizeOf(g))) return kWrongBytes;
      continue;
    }
    const std::string line = std::to_string(g) + "\n";
    if (::write(log_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      return kCommitFailed;
    }
    const std::vector<uint8_t> bytes = ChunkBytes(g, SizeOf(g));
    ::usleep(1000);  // a fetch takes a while: the other ranks come to claim it meanwhile
    Result<CommitOutcome> put =
        cache.Commit(std::move(*claim), bytes.data(), bytes.size(), VerifierFor(g));
    if (!put.ok() || *put != CommitOutcome::kCached) return kCommitFailed;
  }
  ::close(log_fd);
  return kOk;
}

TEST(ChunkCacheProcesses, FourRanksFetchEachChunkOnceAndReadTheRightBytes) {
  TempDir tmp;
  const ChunkCacheOptions o = OptionsIn(tmp);
  const std::string log = tmp.File("fetches");
  testing::WriteAll(log, "", 0);
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(start[1]);
      ::_exit(Rank(o, rank, start[0], log));
    }
    ranks.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);  // every rank's read returns: they start together
  for (pid_t pid : ranks) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), kOk) << "rank " << pid;
  }
  // Each chunk fetched exactly once, by whichever rank claimed it first.
  std::map<uint64_t, int> fetched;
  const std::vector<uint8_t> text = testing::ReadAll(log);
  std::istringstream lines(std::string(text.begin(), text.end()));
  for (uint64_t g; lines >> g;) ++fetched[g];
  EXPECT_EQ(fetched.size(), kChunks);
  for (const auto& [g, times] : fetched) EXPECT_EQ(times, 1) << "chunk " << g;
  // Every chunk is cached, no claim or temporary is left, and the index adds up.
  Result<std::unique_ptr<ChunkCache>> cache = ChunkCache::Open(o, kId, kChunks);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  const std::vector<std::string> files = FilesIn((*cache)->directory());
  EXPECT_EQ(files.size(), kChunks + 1);  // the chunks and the index
  uint64_t total = 0;
  for (uint64_t g = 0; g < kChunks; ++g) total += SizeOf(g);
  EXPECT_EQ((*cache)->used_bytes(), total);
}

void ExitOnFileSizeLimit(int) { ::_exit(3); }

// The child dies in the middle of Commit's write: RLIMIT_FSIZE below the chunk's size makes the
// write past it raise SIGXFSZ, whose handler _exits, as a crash there would.
TEST(ChunkCacheProcesses, WriterKilledMidCommitLeavesNoTrustedChunk) {
  TempDir tmp;
  const ChunkCacheOptions o = OptionsIn(tmp);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Result<std::unique_ptr<ChunkCache>> cache = ChunkCache::Open(o, kId, kChunks);
    if (!cache.ok()) ::_exit(10);
    Result<ChunkClaim> claim = (*cache)->Claim(6);
    if (!claim.ok() || claim->kind() != ChunkClaim::Kind::kMine) ::_exit(11);
    ::signal(SIGXFSZ, ExitOnFileSizeLimit);
    const struct rlimit limit = {2048, 2048};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const std::vector<uint8_t> bytes = ChunkBytes(6, 8192);
    (void)(*cache)->Commit(std::move(*claim), bytes.data(), bytes.size(), VerifierFor(6));
    ::_exit(12);  // the commit came back: the test did not kill it mid-way
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);

  // What it left: its claim and a temporary of 2048 bytes, and no chunk-6.
  const std::string dir = tmp.File("cache") + "/dataset-0000000000000007";
  std::vector<std::string> left = FilesIn(dir);
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(left[0], "chunk-6.claim");
  const std::string temp_prefix = "chunk-6.tmp." + std::to_string(pid) + ".";
  EXPECT_EQ(left[1].rfind(temp_prefix, 0), 0u) << left[1];
  EXPECT_EQ(testing::ReadAll(dir + "/" + left[1]).size(), 2048u);
  EXPECT_EQ(left[2], "index");

  // The next Open removes both (the writer is gone); the chunk is absent, free to claim at once.
  Result<std::unique_ptr<ChunkCache>> cache = ChunkCache::Open(o, kId, kChunks);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ(FilesIn(dir), (std::vector<std::string>{"index"}));
  EXPECT_EQ((*cache)->used_bytes(), 0u);
  Result<std::optional<CachedChunk>> found = (*cache)->Lookup(6);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  ChunkCacheOptions no_wait = o;
  no_wait.claim_wait = std::chrono::milliseconds(0);
  Result<std::unique_ptr<ChunkCache>> other = ChunkCache::Open(no_wait, kId, kChunks);
  ASSERT_TRUE(other.ok());
  Result<ChunkClaim> claim = (*other)->Claim(6);
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->kind(), ChunkClaim::Kind::kMine);
}

// A live process's temporary is not removed by another's Open: only a dead one's.
TEST(ChunkCacheProcesses, LiveWritersTemporaryIsKeptAtOpen) {
  TempDir tmp;
  const ChunkCacheOptions o = OptionsIn(tmp);
  Result<std::unique_ptr<ChunkCache>> first = ChunkCache::Open(o, kId, kChunks);
  ASSERT_TRUE(first.ok());
  // This process is alive: a temporary in its name stands for a commit under way.
  const std::string temp =
      (*first)->directory() + "/chunk-2.tmp." + std::to_string(::getpid()) + ".99";
  testing::WriteAll(temp, "part", 4);
  Result<std::unique_ptr<ChunkCache>> second = ChunkCache::Open(o, kId, kChunks);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(FileExists(temp));
  Result<std::optional<CachedChunk>> found = (*second)->Lookup(2);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
}

// Threads of one process share one ChunkCache: each claim opens its own description of the claim
// file, so flock excludes them from one another as it does processes.
TEST(ChunkCacheThreads, FourThreadsOfOneCacheFetchEachChunkOnce) {
  TempDir tmp;
  Result<std::unique_ptr<ChunkCache>> opened = ChunkCache::Open(OptionsIn(tmp), kId, kChunks);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ChunkCache& cache = **opened;
  std::vector<std::atomic<int>> fetched(kChunks);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 2 * kChunks; ++i) {
        const uint64_t g = (i + 7 * static_cast<uint64_t>(t)) % kChunks;
        Result<ChunkClaim> claim = cache.Claim(g);
        if (!claim.ok() || claim->kind() == ChunkClaim::Kind::kBusy) {
          failures.fetch_add(1);
          continue;
        }
        if (claim->kind() == ChunkClaim::Kind::kCached) {
          if (ReadCached(claim->cached()) != ChunkBytes(g, SizeOf(g))) failures.fetch_add(1);
          continue;
        }
        fetched[g].fetch_add(1);
        const std::vector<uint8_t> bytes = ChunkBytes(g, SizeOf(g));
        Result<CommitOutcome> put =
            cache.Commit(std::move(*claim), bytes.data(), bytes.size(), VerifierFor(g));
        if (!put.ok() || *put != CommitOutcome::kCached) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (uint64_t g = 0; g < kChunks; ++g) EXPECT_EQ(fetched[g].load(), 1) << "chunk " << g;
  const ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.commits, kChunks);
  EXPECT_EQ(s.misses, kChunks);
  EXPECT_EQ(s.hits, 4 * 2 * kChunks - kChunks);
  EXPECT_EQ(s.wait_timeouts, 0u);
}

}  // namespace
}  // namespace rf
