#include "io/cache_index.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <vector>

namespace rf {

namespace {

constexpr uint64_t kMagic = 0x31584449'43465252ULL;  // "RRFCIDX1" read little-endian
constexpr uint64_t kVersion = 1;
// Header words; entries follow, two words a chunk (bytes, last use).
enum : uint64_t {
  kWMagic,
  kWVersion,
  kWDatasetId,
  kWChunkCount,
  kWUsed,
  kWClock,
  kHeaderWords = 8
};

uint64_t Load(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
}
void Store(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
}

}  // namespace

CacheIndex::~CacheIndex() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

CacheIndex& CacheIndex::operator=(CacheIndex&& o) noexcept {
  if (this != &o) {
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
    file_ = std::move(o.file_);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    chunk_count_ = std::exchange(o.chunk_count_, 0);
  }
  return *this;
}

CacheIndex::Lock::~Lock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

Result<CacheIndex::Lock> CacheIndex::Exclusive() const {
  while (::flock(file_.fd(), LOCK_EX) != 0) {
    if (errno != EINTR) return Status::IOError(file_.path(), "cannot lock the cache index", errno);
  }
  return Lock(file_.fd());
}

Result<CacheIndex> CacheIndex::Open(const std::string& path, uint64_t dataset_id,
                                    uint64_t chunk_count) {
  // O_NOFOLLOW: a symbolic link planted at the name is refused, never followed; O_NONBLOCK: a
  // FIFO there does not hang the open (it is refused below).
  RF_ASSIGN_OR_RETURN(File file,
                      File::Open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0644));
  struct stat st;
  if (::fstat(file.fd(), &st) != 0) return Status::IOError(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": the cache index is not a regular file");
  }
  CacheIndex index;
  index.file_ = std::move(file);
  index.chunk_count_ = chunk_count;
  index.map_bytes_ = (kHeaderWords + 2 * chunk_count) * sizeof(uint64_t);
  RF_ASSIGN_OR_RETURN(Lock lock, index.Exclusive());
  if (::fstat(index.file_.fd(), &st) != 0) return Status::IOError(path, "cannot stat", errno);
  // Read the header as it is before deciding whether to (re)initialize.
  uint64_t header[kHeaderWords] = {};
  bool is_index = false;
  if (static_cast<uint64_t>(st.st_size) >= sizeof(header)) {
    RF_RETURN_IF_ERROR(index.file_.ReadAt(header, sizeof(header), 0));
    is_index = header[kWMagic] == kMagic && header[kWVersion] == kVersion &&
               header[kWDatasetId] == dataset_id;
    if (is_index && header[kWChunkCount] != chunk_count) {
      char id[24];
      std::snprintf(id, sizeof(id), "%016" PRIx64, dataset_id);
      std::string msg = path + ": the cache of dataset id " + id;
      msg += " holds " + std::to_string(header[kWChunkCount]);
      msg += " chunks; this dataset has " + std::to_string(chunk_count);
      return Status::InvalidArgument(msg);
    }
    is_index = is_index && static_cast<uint64_t>(st.st_size) == index.map_bytes_;
  }
  if (!is_index) {
    // Sized first and zeroed in place, never truncated to 0 (a process still mapping an older
    // file would fault on pages cut away); the header is written last, so a torn first write is
    // not an index next time.
    if (::ftruncate(index.file_.fd(), static_cast<off_t>(index.map_bytes_)) != 0) {
      return Status::IOError(path, "cannot size the cache index", errno);
    }
    const std::vector<uint64_t> zeros(8192, 0);
    for (uint64_t at = 0; at < index.map_bytes_;) {
      const size_t n = std::min<uint64_t>(zeros.size() * sizeof(uint64_t), index.map_bytes_ - at);
      RF_RETURN_IF_ERROR(index.file_.WriteAt(zeros.data(), n, at));
      at += n;
    }
    const uint64_t fresh[kHeaderWords] = {kMagic, kVersion, dataset_id, chunk_count, 0, 0, 0, 0};
    RF_RETURN_IF_ERROR(index.file_.WriteAt(fresh, sizeof(fresh), 0));
  }
  void* map =
      ::mmap(nullptr, index.map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, index.file_.fd(), 0);
  if (map == MAP_FAILED) return Status::IOError(path, "cannot map the cache index", errno);
  index.map_ = map;
  return index;
}

uint64_t CacheIndex::bytes(uint64_t chunk) const { return Load(Field(kHeaderWords + 2 * chunk)); }
uint64_t CacheIndex::last_use(uint64_t chunk) const {
  return Load(Field(kHeaderWords + 2 * chunk + 1));
}
uint64_t CacheIndex::used_bytes() const { return Load(Field(kWUsed)); }

void CacheIndex::SetBytes(uint64_t chunk, uint64_t bytes) {
  uint64_t* entry = Field(kHeaderWords + 2 * chunk);
  const uint64_t old = Load(entry);
  Store(entry, bytes);
  Store(Field(kWUsed), Load(Field(kWUsed)) - old + bytes);
}

void CacheIndex::ClearBytes() {
  for (uint64_t c = 0; c < chunk_count_; ++c) Store(Field(kHeaderWords + 2 * c), 0);
  Store(Field(kWUsed), 0);
}

void CacheIndex::Touch(uint64_t chunk) {
  const uint64_t now =
      std::atomic_ref<uint64_t>(*Field(kWClock)).fetch_add(1, std::memory_order_acq_rel) + 1;
  Store(Field(kHeaderWords + 2 * chunk + 1), now);
}

}  // namespace rf
