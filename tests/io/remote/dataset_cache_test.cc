// A remote dataset read through its node-local cache (io/chunk_cache.h wired into
// io/chunk_reader.cc) against a real nginx on loopback: a second reader fetches nothing and reads
// the same bytes; a damaged cached copy is fetched again and replaced, never handed on; a budget
// smaller than the dataset holds; processes sharing one cache fetch each chunk once between them;
// the slow path (io/chunk_fetcher.h) goes through the same cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/chunk_cache.h"
#include "io/chunk_fetcher.h"
#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/file.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/io/remote/remote_dataset_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::LocalBytes;
using testing::NginxServer;
using testing::ReadEveryChunk;

constexpr uint64_t kSamples = 3000;

class CachedRemoteDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::NginxMissing(); !why.empty()) GTEST_SKIP() << why;
    testing::PositionalDatasetOptions o;
    o.channels = 1;
    o.height = o.width = 16;
    o.shards = 3;
    o.chunk_bytes = 16384;
    testing::WritePositionalDataset(root_.File("d.rfd"), kSamples, o);
    o.codec = CodecSpec{Codec::kZstd, 3};
    testing::WritePositionalDataset(root_.File("z.rfd"), kSamples, o);
    std::string error;
    server_ = NginxServer::Start({root_.path(), "", "", ""}, &error);
    ASSERT_NE(server_, nullptr) << error;
  }

  // The dataset `name` by URL, with a cache of `budget` bytes in cache_ attached.
  Dataset OpenCached(const std::string& name, uint64_t budget,
                     CachePolicy policy = CachePolicy::kBelady) {
    auto d =
        Dataset::Open(server_->Url("/" + name + "-00000-of-00003.rfd"), testing::QuickOptions());
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return Dataset();
    ChunkCacheOptions o;
    o.dir = cache_.path();
    o.budget_bytes = budget;
    o.policy = policy;
    auto c = ChunkCache::Open(o, d->CacheId(), d->chunk_count());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) d->AttachCache(std::shared_ptr<ChunkCache>(std::move(c).value()));
    return std::move(d).value();
  }

  Dataset Local(const std::string& name) {
    auto d = Dataset::Open(root_.File(name + ".rfd"));
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(d).value() : Dataset();
  }

  // The range requests ReadEveryChunk makes for every chunk (8 KiB a range).
  static size_t Ranges(const Dataset& d) {
    size_t n = 0;
    for (size_t g = 0; g < d.chunk_count(); ++g) n += (d.chunk(g).entry.stored_bytes + 8191) / 8192;
    return n;
  }

  // The requests nginx has logged for the dataset's files once at least `at_least` are (waiting
  // up to 2 s for them: nginx logs a request a moment after answering it).
  size_t Logged(const std::string& name, size_t at_least) const {
    return server_->Requests("/" + name + "-", at_least);
  }
  // Every request logged so far, after those 2 s.
  size_t Settled(const std::string& name) const { return Logged(name, SIZE_MAX); }

  std::string CachedFile(const Dataset& d, uint64_t chunk) const {
    char dir[32];
    std::snprintf(dir, sizeof dir, "dataset-%016llx", static_cast<unsigned long long>(d.CacheId()));
    return cache_.path() + "/" + dir + "/chunk-" + std::to_string(chunk);
  }

  // Chunk g's cached copy is there and holds its stored bytes, as the local file does.
  void ExpectCachedAsStored(const Dataset& remote, const Dataset& local, uint64_t g) const {
    const ChunkLocation& at = local.chunk(g);
    auto f = File::Open(CachedFile(remote, g), O_RDONLY);
    ASSERT_TRUE(f.ok()) << "chunk " << g << " not cached: " << f.status().ToString();
    std::vector<uint8_t> got(at.entry.stored_bytes);
    ASSERT_TRUE(f->ReadAt(got.data(), got.size(), 0).ok()) << g;
    EXPECT_EQ(got, LocalBytes(local.shard_path(at.shard), at.entry.offset, got.size())) << g;
  }

  // Flips the bits `mask` of byte `offset` of chunk g's cached copy (its checksum then fails).
  void FlipCachedByte(const Dataset& remote, uint64_t g, uint64_t offset, uint8_t mask) const {
    auto f = File::Open(CachedFile(remote, g), O_RDWR);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    uint8_t b = 0;
    ASSERT_TRUE(f->ReadAt(&b, 1, offset).ok());
    b ^= mask;
    ASSERT_TRUE(f->WriteAt(&b, 1, offset).ok());
  }

  testing::TempDir root_, cache_;
  std::unique_ptr<NginxServer> server_;
};

TEST_F(CachedRemoteDataset, ASecondReaderFetchesNoChunkAndReadsTheSameBytes) {
  for (const char* name : {"d", "z"}) {
    SCOPED_TRACE(name);
    const Dataset local = Local(name);
    Dataset remote = OpenCached(name, uint64_t{1} << 30);
    ASSERT_NE(remote.cache(), nullptr);
    const size_t opened = Settled(name);
    ReadEveryChunk(remote, local);  // fetches, and commits each chunk (the reader drains)
    const size_t fetched = Logged(name, opened + Ranges(remote));
    EXPECT_EQ(fetched - opened, Ranges(remote));
    EXPECT_EQ(remote.cache()->stats().commits, remote.chunk_count());
    for (size_t g = 0; g < remote.chunk_count(); ++g) ExpectCachedAsStored(remote, local, g);

    const uint64_t hits = remote.cache()->stats().hits;
    ReadEveryChunk(remote, local);  // every chunk from the cache's files
    EXPECT_EQ(remote.cache()->stats().hits - hits, remote.chunk_count());
    EXPECT_EQ(Logged(name, fetched + 1), fetched) << "the second reader fetched";
  }
}

TEST_F(CachedRemoteDataset, ADamagedCachedCopyIsFetchedAgainAndReplaced) {
  const Dataset local = Local("d");
  Dataset remote = OpenCached("d", uint64_t{1} << 30);
  ReadEveryChunk(remote, local);
  const size_t fetched = Logged("d", Ranges(remote));
  // Chunk 1: one byte flipped (the checksum fails); chunk 4: cut short (its size is not the
  // index's); chunk 6: gone (a plain miss).
  FlipCachedByte(remote, 1, 100, 0x40);
  ASSERT_EQ(::truncate(CachedFile(remote, 4).c_str(), 4096), 0);
  ASSERT_EQ(::unlink(CachedFile(remote, 6).c_str()), 0);

  ReadEveryChunk(remote, local);  // the local file's bytes, every chunk
  size_t again = 0;
  for (uint64_t g : {1, 4, 6}) again += (remote.chunk(g).entry.stored_bytes + 8191) / 8192;
  EXPECT_EQ(Logged("d", fetched + again), fetched + again);
  EXPECT_EQ(Logged("d", fetched + again + 1), fetched + again) << "more than those 3 fetched";
  for (uint64_t g : {1, 4, 6}) ExpectCachedAsStored(remote, local, g);
}

// The slow path (managed mode's load, the converter's loops) through the cache: a first fetcher
// fetches and commits every chunk; a second one, of the dataset opened again, fetches none and
// hands out the same data; a damaged copy is fetched again and replaced.
TEST_F(CachedRemoteDataset, TheSlowPathFetchesEachChunkOnceThenReadsTheCopies) {
  for (const char* name : {"d", "z"}) {
    SCOPED_TRACE(name);
    std::filesystem::remove_all(cache_.path());
    std::filesystem::create_directory(cache_.path());
    const Dataset local = Local(name);
    std::vector<uint8_t> got(local.max_chunk_bytes()), want(local.max_chunk_bytes());
    auto fetch_all = [&](const Dataset& remote) {
      auto fetcher = ChunkFetcher::Create(remote);
      ASSERT_TRUE(fetcher.ok()) << fetcher.status().ToString();
      for (size_t g = 0; g < remote.chunk_count(); ++g) {
        Status st = fetcher->Fetch(g, got.data());
        ASSERT_TRUE(st.ok()) << st.ToString();
        ASSERT_TRUE(local.ReadChunk(g, want.data()).ok());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), local.chunk(g).entry.data_bytes), 0) << g;
      }
    };
    size_t opened = 0;
    {
      Dataset first = OpenCached(name, uint64_t{1} << 30);
      opened = Settled(name);
      fetch_all(first);
      EXPECT_EQ(first.cache()->stats().commits, first.chunk_count());
      EXPECT_EQ(first.cache()->stats().hits, 0u);
    }
    const size_t fetched = Settled(name);
    EXPECT_GE(fetched - opened, local.chunk_count()) << "fewer requests than chunks";

    Dataset second = OpenCached(name, uint64_t{1} << 30);
    const size_t reopened = Settled(name);
    fetch_all(second);
    EXPECT_EQ(second.cache()->stats().hits, second.chunk_count());
    EXPECT_EQ(second.cache()->stats().commits, 0u);
    EXPECT_EQ(Logged(name, reopened + 1), reopened) << "the second fetcher fetched";

    // Chunk 2's copy: one byte flipped. The fetcher hands out the chunk's data all the same,
    // fetching it alone again, and the copy on disk is the stored bytes again.
    FlipCachedByte(second, 2, 40, 0x01);
    auto fetcher = ChunkFetcher::Create(second);
    ASSERT_TRUE(fetcher.ok());
    ASSERT_TRUE(fetcher->Fetch(2, got.data()).ok());
    ASSERT_TRUE(local.ReadChunk(2, want.data()).ok());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), local.chunk(2).entry.data_bytes), 0);
    EXPECT_GT(Logged(name, reopened + 1), reopened) << "the damaged copy was not fetched again";
    ExpectCachedAsStored(second, local, 2);
  }
}

// Two passes in order through a cache of a third of the dataset: LRU (or Belady without the
// schedule) evicts each chunk before its next use and hits none, the classic loop; Belady with
// the schedule keeps what fits of the first pass for the second and hits it. Both stay within
// the budget.
TEST_F(CachedRemoteDataset, ACacheSmallerThanTheDatasetStaysWithinItsBudget) {
  const Dataset local = Local("d");
  uint64_t total = 0;
  for (size_t g = 0; g < local.chunk_count(); ++g) total += local.chunk(g).entry.stored_bytes;
  for (CachePolicy policy : {CachePolicy::kBelady, CachePolicy::kLru}) {
    SCOPED_TRACE(policy == CachePolicy::kLru ? "lru" : "belady");
    std::filesystem::remove_all(cache_.path());
    std::filesystem::create_directory(cache_.path());
    Dataset remote = OpenCached("d", total / 3, policy);
    std::vector<uint64_t> schedule;
    for (int pass = 0; pass < 2; ++pass)
      for (uint64_t g = 0; g < remote.chunk_count(); ++g) schedule.push_back(g);
    ASSERT_TRUE(remote.cache()->SetSchedule(schedule).ok());
    ReadEveryChunk(remote, local);
    ReadEveryChunk(remote, local);
    EXPECT_LE(remote.cache()->used_bytes(), total / 3);
    EXPECT_GT(remote.cache()->used_bytes(), 0u);
    const uint64_t hits = remote.cache()->stats().hits;
    if (policy == CachePolicy::kLru) {
      EXPECT_EQ(hits, 0u);
    } else {
      // About a third: what fits, less the slots' worth read ahead of the first commits.
      EXPECT_GE(hits, remote.chunk_count() / 4);
      EXPECT_LE(hits, remote.chunk_count() / 3 + 1);
    }
  }
}

// Three processes read the whole dataset at once into one cache: between them every chunk is
// fetched once (the others wait for its claim, then read the copy).
TEST_F(CachedRemoteDataset, ProcessesSharingOneCacheFetchEachChunkOnce) {
  const Dataset local = Local("d");
  const size_t before = Logged("d", 0);
  size_t open_requests = 0, ranges = 0;
  {
    auto probe = Dataset::Open(server_->Url("/d-00000-of-00003.rfd"), testing::QuickOptions());
    ASSERT_TRUE(probe.ok());
    open_requests = Settled("d") - before;
    ranges = Ranges(*probe);
  }
  constexpr int kProcesses = 3;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Dataset remote = OpenCached("d", uint64_t{1} << 30);
      ReadEveryChunk(remote, local);
      ::_exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a reader failed: " << status;
  }
  const size_t expected = before + open_requests * (kProcesses + 1) + ranges;
  EXPECT_EQ(Logged("d", expected), expected);
  EXPECT_EQ(Logged("d", expected + 1), expected) << "a chunk was fetched twice";
}

}  // namespace
}  // namespace rf
