// Helpers of the ChunkCache tests (io/chunk_cache.h): chunks whose every 32-bit word encodes its
// chunk and position (so a chunk read back as another, or shifted, shows), the verifier a
// Dataset::VerifyStored stands in for, and a reader that plays one schedule through a cache.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "io/chunk_cache.h"

namespace rf::testing {

// n bytes of chunk g: word i is (g << 20) + i, little end first; a tail shorter than a word
// holds the word's first bytes.
inline std::vector<uint8_t> ChunkBytes(uint64_t g, size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t word = static_cast<uint32_t>((g << 20) + i / 4);
    out[i] = static_cast<uint8_t>(word >> (8 * (i % 4)));
  }
  return out;
}

// Passes exactly chunk g's n bytes (what VerifyStored's checksum decides), else a Corruption
// naming the first byte that differs.
inline ChunkVerifier VerifierFor(uint64_t g) {
  return [g](const void* bytes, size_t n) {
    const std::vector<uint8_t> want = ChunkBytes(g, n);
    const auto* got = static_cast<const uint8_t*>(bytes);
    for (size_t i = 0; i < n; ++i) {
      if (got[i] != want[i]) {
        return Status::Corruption("remote", "checksum mismatch").WithChunk(g).WithOffset(i);
      }
    }
    return Status::Ok();
  };
}

// Every byte of a cached chunk, by pread from its descriptor.
inline std::vector<uint8_t> ReadCached(const CachedChunk& c) {
  std::vector<uint8_t> out(c.bytes);
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t r =
        ::pread(c.file.fd(), out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

// What a reader of the schedule did, read by read.
struct Played {
  uint64_t hits = 0;
  uint64_t misses = 0;
  bool ok = true;  // every claim and commit succeeded, every hit read the right bytes
};

// Reads the schedule through the cache as the reader will: Advance(p + 1), Claim, then either
// the cached bytes (checked) or a "fetch" (ChunkBytes) committed. bytes_of(g) is chunk g's size.
// Only the first `reads` entries are read (all by default); the cache is told the whole future.
template <typename BytesOf>
Played PlaySchedule(ChunkCache& cache, std::span<const uint64_t> schedule, BytesOf bytes_of,
                    size_t reads = SIZE_MAX) {
  Played played;
  if (!cache.SetSchedule(schedule).ok()) played.ok = false;
  for (size_t p = 0; p < schedule.size() && p < reads; ++p) {
    const uint64_t g = schedule[p];
    cache.Advance(p + 1);
    Result<ChunkClaim> claim = cache.Claim(g);
    if (!claim.ok()) {
      played.ok = false;
      continue;
    }
    if (claim->kind() == ChunkClaim::Kind::kCached) {
      ++played.hits;
      if (ReadCached(claim->cached()) != ChunkBytes(g, bytes_of(g))) played.ok = false;
      continue;
    }
    ++played.misses;
    if (claim->kind() != ChunkClaim::Kind::kMine) {
      played.ok = false;
      continue;
    }
    const std::vector<uint8_t> fetched = ChunkBytes(g, bytes_of(g));
    Result<CommitOutcome> done =
        cache.Commit(std::move(*claim), fetched.data(), fetched.size(), VerifierFor(g));
    if (!done.ok()) played.ok = false;
  }
  return played;
}

}  // namespace rf::testing
