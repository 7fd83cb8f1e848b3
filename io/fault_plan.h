// FaultPlan: which reads a FaultyIoQueue (io/faulty_io_queue.h) answers with a fault, and which
// writes and fsyncs of a File (io/file.h) fail, parsed from a short text spec. Test-only
// machinery: a run sets RINGFEED_FAULTS to the spec, and every chunk reader the process creates
// (ringfeed train, ringfeed read, the Python loader) reads through a FaultyIoQueue following its
// read rules, and every File write or fsync follows its write and fsync rules. Unset or empty,
// nothing is parsed or wrapped.
//
// The grammar (no spaces):
//   spec   := rule { ';' rule }
//   rule   := 'read:' kind [ '@' cond { ',' cond } ]  |  'read:reorder'
//           | ('write:' | 'fsync:') error '@path=' TEXT
//   kind   := 'eio' | 'eagain' | 'eintr'     the read fails with -EIO, -EAGAIN or -EINTR, and
//                                            its destination is scribbled on (as a failed
//                                            device read may leave it)
//           | 'short=' BYTES                 the read returns at most BYTES (> 0); with O_DIRECT
//                                            make it a multiple of 4096, as the kernel would
//           | 'delay=' N ('ms' | 's')        the read's completion is held back N ms (or s)
//                                            after it completed; other reads go on meanwhile
//   cond   := 'chunk=' N                     only reads of global chunk N (default: every chunk)
//           | 'attempt=' N                   only the N-th request for the chunk (from 1)
//           | 'times=' N | 'times=always'    the first N requests for the chunk (default 1), or
//                                            every one
//           | 'after=' N                     every request for the chunk after the first N (a
//                                            chunk read once an epoch fails from epoch N + 1 on)
//   (one of attempt=, times= and after= at most)
//   'read:reorder' holds completions back and hands each batch of them over newest first.
//   error  := 'enospc' | 'eio' | 'efbig'     every write (pwrite) or fsync of a File whose path
//                                            (for an AtomicOutput, the final path the user gave)
//                                            contains TEXT fails with that errno (a full disk, a
//                                            failing disk, a file size limit)
//
// Requests for a chunk are counted per queue (one per chunk reader) from 1: every retry and
// every continuation of a short read is one more, and a chunk cut into several reads counts
// each. So `read:eio@chunk=5,times=2` fails the first two requests for chunk 5 and no more (a
// transient error the reader's retries get past); `read:eio@chunk=5,times=always` fails every
// one (a bad sector). Where several rules match a request the first in the spec applies. The
// streaming source keeps one reader from epoch to epoch (so `ringfeed train` counts over the
// whole run) and makes a new one, counting afresh, where it restarts (a start at a position
// other than where the last epoch ended, or after a failure).
//
// Examples:
//   RINGFEED_FAULTS='read:eio@chunk=5,times=always'
//   RINGFEED_FAULTS='read:short=4096@chunk=2;read:delay=200ms@chunk=3;read:reorder'
//   RINGFEED_FAULTS='fsync:eio@path=run.ckpt;write:enospc@path=-00001-of-'
//
// A malformed spec is a Usage error naming RINGFEED_FAULTS, the rule and what is wrong (from the
// readers; a File's write finds no rule in a malformed spec).
//
// Thread safety: a plan is a value; Match and FileError are const.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf {

// The environment variable the shipped programs read their fault plan from.
inline constexpr const char* kFaultsEnv = "RINGFEED_FAULTS";

struct ReadFault {
  enum class Kind { kError, kShort, kDelay };
  static constexpr uint32_t kAlways = UINT32_MAX;

  Kind kind = Kind::kError;
  int err = 0;                         // kError: the errno (EIO, EAGAIN, EINTR)
  uint32_t short_bytes = 0;            // kShort
  std::chrono::milliseconds delay{0};  // kDelay
  std::optional<uint64_t> chunk;       // none: every chunk
  // Fires on requests first..last for the chunk (1-based, inclusive; last kAlways: no end).
  uint32_t first = 1, last = 1;

  bool Matches(uint64_t chunk_number, uint32_t attempt) const {
    return (!chunk || *chunk == chunk_number) && attempt >= first && attempt <= last;
  }
};

// A write or fsync rule.
struct FileFault {
  enum class Op { kWrite, kFsync };
  Op op = Op::kWrite;
  int err = 0;            // ENOSPC, EIO or EFBIG
  std::string path_part;  // fails Files whose path contains this
};

struct FaultPlan {
  std::vector<ReadFault> reads;  // in the spec's order
  bool reorder = false;
  std::vector<FileFault> files;  // in the spec's order

  // Whether readers have anything to inject (only then is a reader's queue wrapped).
  bool has_read_faults() const { return !reads.empty() || reorder; }
  bool empty() const { return !has_read_faults() && files.empty(); }
  // The first fault for the `attempt`-th request (from 1) for `chunk`, or null.
  const ReadFault* Match(uint64_t chunk, uint32_t attempt) const;
  // The errno of the first rule failing `op` on the File at `path`, or 0.
  int FileError(FileFault::Op op, const std::string& path) const;
  // The plan in the spec's grammar, one rule a ';' (for the line a wrapped run prints).
  std::string ToString() const;
};

// Parses a spec in the grammar above ("" is the empty plan); Usage naming RINGFEED_FAULTS where
// it is malformed.
Result<FaultPlan> ParseFaultPlan(const std::string& spec);

// The plan in force, or std::nullopt where there is none: a test's (SetFaultSpecForTesting)
// where one is set, else RINGFEED_FAULTS's (unset or empty: none). Safe from any thread; read at
// each call, so a plan set mid-run applies to the next request, write or fsync.
Result<std::optional<FaultPlan>> FaultPlanFromEnv();

// Test-only: makes `spec` the plan in force for this process, in place of RINGFEED_FAULTS
// (std::nullopt: back to the environment's). Tests plant faults through this, never setenv:
// setenv while another thread (a writer's, a reader's) reads the environment is a data race.
void SetFaultSpecForTesting(std::optional<std::string> spec);

}  // namespace rf
