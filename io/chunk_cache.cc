#include "io/chunk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <thread>

#include "io/dataset.h"
#include "io/live_temporaries.h"

namespace rf {

namespace {

constexpr uint64_t kNever = UINT64_MAX;
constexpr std::string_view kChunkPrefix = "chunk-";
constexpr std::string_view kClaimSuffix = ".claim";
// How often a waiting Claim tries the other process's claim lock again.
constexpr auto kClaimPoll = std::chrono::milliseconds(2);

// "chunk-<g>" (g in canonical decimal, below count) -> g.
std::optional<uint64_t> ParseChunkName(std::string_view name, uint64_t count) {
  if (name.substr(0, kChunkPrefix.size()) != kChunkPrefix) return std::nullopt;
  const std::string_view digits = name.substr(kChunkPrefix.size());
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  uint64_t g = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), g);
  if (ec != std::errc() || end != digits.data() + digits.size() || g >= count) return std::nullopt;
  return g;
}

// The kind of what lstat finds at path (not following links), for messages; null where nothing.
const char* KindAt(const std::string& path, bool* regular) {
  struct stat st;
  *regular = false;
  if (::lstat(path.c_str(), &st) != 0) return nullptr;
  if (S_ISREG(st.st_mode)) {
    *regular = true;
    return "a regular file";
  }
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISDIR(st.st_mode)) return "a directory";
  return "a special file";
}

// Unlinks path only where it is a regular file (never a planted link or FIFO).
void UnlinkRegular(const std::string& path) {
  bool regular = false;
  KindAt(path, &regular);
  if (regular) ::unlink(path.c_str());
}

Status MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError(path, "cannot create the cache directory", errno);
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Status::IOError(path, "cannot stat", errno);
  if (!S_ISDIR(st.st_mode)) {
    bool regular = false;
    std::string msg = path + ": the cache directory is ";
    msg += KindAt(path, &regular);
    return Status::InvalidArgument(msg + ", not a directory");
  }
  return Status::Ok();
}

// rename without replacing anything at `to`: EEXIST where something is there. Falls back to
// link + unlink on a file system without RENAME_NOREPLACE.
int RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  if (::link(from.c_str(), to.c_str()) != 0) return errno;
  ::unlink(from.c_str());
  return 0;
}

}  // namespace

ChunkClaim& ChunkClaim::operator=(ChunkClaim&& o) noexcept {
  if (this != &o) {
    Release();
    kind_ = o.kind_;
    chunk_ = o.chunk_;
    cached_ = std::move(o.cached_);
    lock_ = std::move(o.lock_);
    owner_ = o.owner_;
  }
  return *this;
}

void ChunkClaim::Release() {
  if (!lock_.is_open()) return;
  // Unlinked before unlocked: a claimant that gets this inode's lock afterwards finds the name
  // gone (or another inode's) and retries, so it never holds a lock nobody else can see.
  ::unlink(lock_.path().c_str());
  lock_.Close();
}

ChunkCache::ChunkCache(const ChunkCacheOptions& options, std::string dir, CacheIndex index)
    : options_(options),
      dir_(std::move(dir)),
      index_(std::move(index)),
      next_use_(index_.chunk_count(), kNever) {}

ChunkCache::~ChunkCache() = default;

Result<std::unique_ptr<ChunkCache>> ChunkCache::Open(const ChunkCacheOptions& options,
                                                     uint64_t dataset_id, uint64_t chunk_count) {
  if (options.dir.empty()) return Status::InvalidArgument("the cache directory is empty");
  if (options.budget_bytes == 0) {
    return Status::InvalidArgument(options.dir + ": the cache's budget is 0 bytes");
  }
  if (chunk_count == 0) return Status::InvalidArgument(options.dir + ": a dataset of 0 chunks");
  RF_RETURN_IF_ERROR(MakeDirectory(options.dir));
  char name[32];
  std::snprintf(name, sizeof(name), "dataset-%016" PRIx64, dataset_id);
  std::string dir = options.dir + "/" + name;
  RF_RETURN_IF_ERROR(MakeDirectory(dir));
  RF_ASSIGN_OR_RETURN(CacheIndex index, CacheIndex::Open(dir + "/index", dataset_id, chunk_count));
  std::unique_ptr<ChunkCache> cache(new ChunkCache(options, std::move(dir), std::move(index)));
  RF_RETURN_IF_ERROR(cache->Rebuild());
  return cache;
}

std::string ChunkCache::ChunkPath(uint64_t chunk) const {
  std::string path = dir_ + "/";
  path += kChunkPrefix;
  return path + std::to_string(chunk);
}

Status ChunkCache::Rebuild() {
  std::lock_guard<std::mutex> guard(index_mu_);
  RF_ASSIGN_OR_RETURN(CacheIndex::Lock lock, index_.Exclusive());
  RemoveStaleTemporaries(
      dir_, [](std::string_view n) { return n.substr(0, kChunkPrefix.size()) == kChunkPrefix; });
  index_.ClearBytes();
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return Status::IOError(dir_, "cannot read the cache directory", errno);
  std::vector<std::string> free_claims;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const std::string path = dir_ + "/" + e->d_name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // never touched
    if (std::optional<uint64_t> g = ParseChunkName(name, index_.chunk_count())) {
      if (st.st_size > 0) index_.SetBytes(*g, static_cast<uint64_t>(st.st_size));
      continue;
    }
    if (name.size() > kClaimSuffix.size() &&
        name.substr(name.size() - kClaimSuffix.size()) == kClaimSuffix) {
      free_claims.push_back(path);
    }
  }
  ::closedir(d);
  // A claim file nobody holds (its process died) is removed under its own lock, as its holder
  // would have; one a live process holds is left.
  for (const std::string& path : free_claims) {
    Result<File> f = File::Open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK);
    if (!f.ok()) continue;
    if (::flock(f->fd(), LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
  }
  if (std::optional<std::vector<uint64_t>> victims = PlanRoom(kNever, 0)) {
    Evict(*victims);
  }
  return Status::Ok();
}

Status ChunkCache::SetSchedule(std::span<const uint64_t> chunks) {
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i] >= index_.chunk_count()) {
      std::string msg = dir_ + ": schedule entry " + std::to_string(i);
      msg += " is chunk " + std::to_string(chunks[i]);
      msg += " of a dataset of " + std::to_string(index_.chunk_count()) + " chunks";
      return Status::InvalidArgument(msg);
    }
  }
  std::lock_guard<std::mutex> guard(schedule_mu_);
  schedule_.assign(chunks.begin(), chunks.end());
  next_occurrence_.assign(chunks.size(), kNever);
  std::fill(next_use_.begin(), next_use_.end(), kNever);
  // Backwards: next_use_ holds each chunk's nearest occurrence after i, then its first.
  for (size_t i = chunks.size(); i-- > 0;) {
    next_occurrence_[i] = next_use_[chunks[i]];
    next_use_[chunks[i]] = i;
  }
  position_ = 0;
  return Status::Ok();
}

void ChunkCache::Advance(uint64_t next) {
  std::lock_guard<std::mutex> guard(schedule_mu_);
  next = std::min<uint64_t>(next, schedule_.size());
  for (; position_ < next; ++position_) {
    next_use_[schedule_[position_]] = next_occurrence_[position_];
  }
}

void ChunkCache::Started(uint64_t chunk) {
  uint64_t at = kNever;
  {
    std::lock_guard<std::mutex> guard(schedule_mu_);
    if (chunk < next_use_.size()) at = next_use_[chunk];
  }
  if (at != kNever) Advance(at + 1);
}

Result<std::optional<CachedChunk>> ChunkCache::OpenCached(uint64_t chunk) const {
  const std::string path = ChunkPath(chunk);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    // Absent, or a symbolic link planted at the name (not followed): nothing cached.
    if (e == ENOENT || e == ELOOP) return std::optional<CachedChunk>();
    return Status::IOError(path, "cannot open the cached chunk", e).WithChunk(chunk);
  }
  CachedChunk found{File(fd, path), 0};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return Status::IOError(path, "cannot stat the cached chunk", errno).WithChunk(chunk);
  }
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) return std::optional<CachedChunk>();
  found.bytes = static_cast<uint64_t>(st.st_size);
  return std::optional<CachedChunk>(std::move(found));
}

Result<std::optional<CachedChunk>> ChunkCache::Lookup(uint64_t chunk) {
  if (chunk >= index_.chunk_count()) {
    return Status::InvalidArgument(dir_ + ": no chunk " + std::to_string(chunk));
  }
  RF_ASSIGN_OR_RETURN(std::optional<CachedChunk> found, OpenCached(chunk));
  if (found) {
    index_.Touch(chunk);
    counters_.hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
  }
  return found;
}

Result<ChunkClaim> ChunkCache::Claim(uint64_t chunk) { return ClaimWaiting(chunk, true); }
Result<ChunkClaim> ChunkCache::TryClaim(uint64_t chunk) { return ClaimWaiting(chunk, false); }

Result<ChunkClaim> ChunkCache::ClaimWaiting(uint64_t chunk, bool wait) {
  if (chunk >= index_.chunk_count()) {
    return Status::InvalidArgument(dir_ + ": no chunk " + std::to_string(chunk));
  }
  const std::string claim_path = ChunkPath(chunk) + std::string(kClaimSuffix);
  const auto deadline = std::chrono::steady_clock::now() + options_.claim_wait;
  bool waited = false;
  auto hit = [&](CachedChunk found) {
    index_.Touch(chunk);
    counters_.hits.fetch_add(1, std::memory_order_relaxed);
    if (waited) counters_.waits.fetch_add(1, std::memory_order_relaxed);
    ChunkClaim claim(ChunkClaim::Kind::kCached, chunk);
    claim.cached_ = std::move(found);
    return claim;
  };
  for (;;) {
    RF_ASSIGN_OR_RETURN(std::optional<CachedChunk> found, OpenCached(chunk));
    if (found) return hit(std::move(*found));
    Result<File> lock = File::Open(claim_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (!lock.ok()) return Status(lock.status()).WithChunk(chunk);
    struct stat held;
    if (::fstat(lock->fd(), &held) != 0) {
      return Status::IOError(claim_path, "cannot stat the claim file", errno).WithChunk(chunk);
    }
    if (!S_ISREG(held.st_mode)) {
      return Status::InvalidArgument(claim_path + ": the claim file is not a regular file")
          .WithChunk(chunk);
    }
    if (::flock(lock->fd(), LOCK_EX | LOCK_NB) == 0) {
      struct stat named;
      if (::lstat(claim_path.c_str(), &named) != 0 || named.st_ino != held.st_ino ||
          named.st_dev != held.st_dev) {
        continue;  // its holder unlinked it as we locked it: claim the name afresh
      }
      ChunkClaim claim(ChunkClaim::Kind::kMine, chunk);
      claim.lock_ = std::move(*lock);
      claim.owner_ = this;
      // The previous holder may have committed between our look and our lock.
      RF_ASSIGN_OR_RETURN(std::optional<CachedChunk> now, OpenCached(chunk));
      if (now) return hit(std::move(*now));  // (claim released as it goes)
      counters_.misses.fetch_add(1, std::memory_order_relaxed);
      if (waited) counters_.waits.fetch_add(1, std::memory_order_relaxed);
      return claim;
    }
    const int e = errno;
    if (e == EINTR) continue;
    if (e != EWOULDBLOCK) {
      return Status::IOError(claim_path, "cannot lock the claim file", e).WithChunk(chunk);
    }
    if (!wait) return ChunkClaim(ChunkClaim::Kind::kBusy, chunk);
    waited = true;
    if (std::chrono::steady_clock::now() >= deadline) {
      counters_.misses.fetch_add(1, std::memory_order_relaxed);
      counters_.waits.fetch_add(1, std::memory_order_relaxed);
      counters_.wait_timeouts.fetch_add(1, std::memory_order_relaxed);
      return ChunkClaim(ChunkClaim::Kind::kBusy, chunk);
    }
    std::this_thread::sleep_for(kClaimPoll);
  }
}

std::optional<std::vector<uint64_t>> ChunkCache::PlanRoom(uint64_t incoming, uint64_t n) const {
  std::vector<uint64_t> victims;
  const uint64_t used = index_.used_bytes();
  if (used + n <= options_.budget_bytes) return victims;
  uint64_t to_free = used + n - options_.budget_bytes;
  struct Candidate {
    uint64_t chunk, next_use, last_use;
  };
  std::vector<Candidate> cached;
  std::lock_guard<std::mutex> guard(schedule_mu_);
  for (uint64_t c = 0; c < index_.chunk_count(); ++c) {
    if (c == incoming || index_.bytes(c) == 0) continue;
    cached.push_back({c, next_use_[c], index_.last_use(c)});
  }
  const bool belady = options_.policy == CachePolicy::kBelady;
  // Belady: farthest next use first, then least recently used among equals (the never-used
  // ones); LRU: least recently used first. The chunk number makes the order total.
  std::sort(cached.begin(), cached.end(), [belady](const Candidate& a, const Candidate& b) {
    if (belady && a.next_use != b.next_use) return a.next_use > b.next_use;
    if (a.last_use != b.last_use) return a.last_use < b.last_use;
    return a.chunk < b.chunk;
  });
  const uint64_t incoming_next = incoming < next_use_.size() ? next_use_[incoming] : kNever;
  for (const Candidate& c : cached) {
    if (to_free == 0) break;
    // Evicting a chunk needed sooner than the incoming one would trade a sooner hit for a later.
    if (belady && incoming != kNever && c.next_use < incoming_next) return std::nullopt;
    victims.push_back(c.chunk);
    const uint64_t b = index_.bytes(c.chunk);
    to_free -= std::min(b, to_free);
  }
  if (to_free > 0) return std::nullopt;  // cannot fit (only where n > budget)
  return victims;
}

void ChunkCache::Evict(const std::vector<uint64_t>& victims) {
  for (uint64_t c : victims) {
    UnlinkRegular(ChunkPath(c));
    index_.SetBytes(c, 0);
    counters_.evictions.fetch_add(1, std::memory_order_relaxed);
  }
}

Result<CommitOutcome> ChunkCache::Commit(ChunkClaim claim, const void* bytes, size_t n,
                                         const ChunkVerifier& verify) {
  const uint64_t chunk = claim.chunk();
  const std::string final_path = ChunkPath(chunk);
  if (claim.kind() != ChunkClaim::Kind::kMine || claim.owner_ != this || !claim.lock_.is_open()) {
    return Status::InvalidArgument(final_path + ": commit without this cache's claim")
        .WithChunk(chunk);
  }
  if (n == 0) return Status::InvalidArgument(final_path + ": an empty chunk").WithChunk(chunk);
  auto refuse = [&](Status st) {
    counters_.refused.fetch_add(1, std::memory_order_relaxed);
    if (!st.chunk()) st.WithChunk(chunk);
    return st;
  };
  auto not_kept = [&] {
    counters_.not_kept.fetch_add(1, std::memory_order_relaxed);
    return CommitOutcome::kNotKept;
  };
  if (n > options_.budget_bytes) return not_kept();
  if (Status st = verify(bytes, n); !st.ok()) return refuse(std::move(st));
  // A pre-check without the lock, so a chunk Belady would not keep is not written for nothing;
  // the decision is made again under the lock.
  if (!PlanRoom(chunk, n)) return not_kept();

  static std::atomic<uint64_t> counter{0};
  const std::string temp_path = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(counter.fetch_add(1));
  LiveTemporary live(temp_path);  // registered before it exists
  const int fd =
      ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return refuse(Status::IOError(final_path, "cannot create the chunk's file", errno));
  {
    // Named after the final path, as AtomicOutput's files are (errors, RINGFEED_FAULTS' rules).
    File out(fd, final_path);
    Status st = out.WriteAt(bytes, n, 0);
    if (st.ok()) st = out.Sync();
    if (st.ok()) st = out.Close();
    if (!st.ok()) {
      ::unlink(temp_path.c_str());
      return refuse(std::move(st));
    }
  }
  auto drop = [&] { ::unlink(temp_path.c_str()); };

  std::lock_guard<std::mutex> guard(index_mu_);
  Result<CacheIndex::Lock> lock = index_.Exclusive();
  if (!lock.ok()) {
    drop();
    return refuse(lock.status());
  }
  bool regular = false;
  if (const char* kind = KindAt(final_path, &regular)) {
    drop();
    if (regular) return CommitOutcome::kAlreadyCached;
    return refuse(Status::InvalidArgument(final_path + " is " + kind +
                                          ", not a chunk the cache wrote; left as it is"));
  }
  std::optional<std::vector<uint64_t>> victims = PlanRoom(chunk, n);
  if (!victims) {
    drop();
    return not_kept();
  }
  Evict(*victims);
  if (const int e = RenameNoReplace(temp_path, final_path); e != 0) {
    drop();
    if (e == EEXIST) {
      KindAt(final_path, &regular);
      if (regular) return CommitOutcome::kAlreadyCached;
      return refuse(Status::InvalidArgument(final_path + ": something not a chunk appeared there"
                                                         "; left as it is"));
    }
    return refuse(Status::IOError(final_path, "cannot rename the chunk into place", e));
  }
  live.Forget();
  index_.SetBytes(chunk, n);
  index_.Touch(chunk);
  counters_.commits.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes_written.fetch_add(n, std::memory_order_relaxed);
  return CommitOutcome::kCached;
}

Status ChunkCache::Invalidate(uint64_t chunk) {
  if (chunk >= index_.chunk_count()) {
    return Status::InvalidArgument(dir_ + ": no chunk " + std::to_string(chunk));
  }
  std::lock_guard<std::mutex> guard(index_mu_);
  RF_ASSIGN_OR_RETURN(CacheIndex::Lock lock, index_.Exclusive());
  UnlinkRegular(ChunkPath(chunk));
  index_.SetBytes(chunk, 0);
  return Status::Ok();
}

ChunkCacheStats ChunkCache::stats() const {
  ChunkCacheStats s;
  s.hits = counters_.hits.load();
  s.misses = counters_.misses.load();
  s.bytes_written = counters_.bytes_written.load();
  s.commits = counters_.commits.load();
  s.evictions = counters_.evictions.load();
  s.not_kept = counters_.not_kept.load();
  s.refused = counters_.refused.load();
  s.waits = counters_.waits.load();
  s.wait_timeouts = counters_.wait_timeouts.load();
  return s;
}

Status AttachChunkCache(Dataset* d, const ChunkCacheOptions& o) {
  if (!d->remote()) return Status::Ok();
  RF_ASSIGN_OR_RETURN(std::unique_ptr<ChunkCache> cache,
                      ChunkCache::Open(o, d->CacheId(), d->chunk_count()));
  d->AttachCache(std::shared_ptr<ChunkCache>(std::move(cache)));
  return Status::Ok();
}

}  // namespace rf
