// LoaderStats: what a Loader (pipeline/loader.h) read and how fast, and SkippedRecords: the bad
// image records it skipped in an epoch. Plain values, copied out of the loader (Loader::stats(),
// Loader::skipped()); no thread rules of their own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rf {

// Image/jpeg records a loader skipped in one epoch (ImageOptions::skip_bad_records): how many, and
// the first ImageStage::kNamedSkips of them named ("sample G (FILE chunk C record R): why").
struct SkippedRecords {
  uint64_t epoch = 0;
  uint64_t count = 0;
  std::vector<std::string> named;
  // One line, "" where none was skipped: "2 bad image records skipped in epoch E: ...; ..." (E:
  // `shown_epoch`, the epoch as the caller's user counts it).
  std::string Text(uint64_t shown_epoch) const;
};

// What the loader reads, and how fast.
struct LoaderStats {
  uint64_t bytes_read = 0;         // from disk, since Open
  uint64_t bytes_delivered = 0;    // the chunks' data: bytes_read decompressed (format 2)
  double decode_busy_seconds = 0;  // the chunk stage's working time, over its threads
  uint32_t decode_threads = 0;     // the chunk stage's threads (0: none)
  double seconds = 0;              // since the first batch was asked for
  double wait_seconds = 0;         // Next() blocked waiting for data
  double reader_held_seconds = 0;  // the reader idle for want of a free ring slot
  uint64_t batches = 0;            // decoded batches handed out
  // Decoded images (image records): the decode threads, their working seconds summed, the
  // records decoded (ahead of the batches handed out: up to the batches in flight more), and the
  // bad records skipped (skip_bad_records), since Open.
  uint32_t image_threads = 0;
  double image_busy_seconds = 0;
  uint64_t images_decoded = 0;
  uint64_t records_skipped = 0;
  // The image stage's wait for its decoder's batches (on the loader's worker where it runs one:
  // ahead of the consumer, whose own wait is wait_seconds).
  double image_wait_seconds = 0;
};

}  // namespace rf
