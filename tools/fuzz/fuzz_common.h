// What the fuzz targets share: the valid files they start from (written by the real writers),
// the table of where each header field lies, edits of those fields driven by the fuzzer's bytes,
// and the checksum repairs that make an edited file pass its checksums, so that the fuzzer's
// mutations reach the checks behind them (a structure-aware harness). See tools/fuzz/README.md.
//
// Thread safety: none; libFuzzer runs one input at a time.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// A decoder accepted what its contract says it refuses: stop, so the fuzzer records the input.
#define RF_FUZZ_CHECK(cond)                                                                   \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace rf::fuzz {

// A field of a file: where it lies and how wide it is (1, 2, 4 or 8 bytes, little-endian).
struct Field {
  const char* name;
  size_t offset;
  size_t width;
};

// The dataset header's fields (io/format_header.cc's offsets, checked against EncodeHeader on
// first use).
const std::vector<Field>& HeaderFields();
// The fields of the chunk index entries of `file` (where its header places them, as many as lie
// inside the file; 48-byte entries, or 64-byte ones where the header says version 2 or later,
// with their codec, frame and data sizes).
std::vector<Field> IndexFields(const std::vector<uint8_t>& file);
// The size of `file`'s index entries, by the version its header gives (format::IndexEntryBytes).
size_t EntryBytes(const std::vector<uint8_t>& file);

// Up to `max_edits` edits of the chunks' codec frames that the input asks for: bytes inside a
// frame overwritten, a frame's size changed (version 2), or a frame replaced by the input's
// bytes with its entry's frame and stored sizes (and codec) made to agree. Where the index lies
// outside the file, nothing. The checksums are the caller's to repair.
void EditFrames(FuzzedDataProvider& in, size_t max_edits, std::vector<uint8_t>* file);

// The files of small valid datasets, written once by DatasetWriter into a temporary directory:
// 0: one file of 3x4x5 uint8 images, 10 classes, 100 samples in 4 KiB chunks;
// 1: the same in 2 shards; 2: one file of 16-token int64 rows without labels, in 2 chunks;
// 3: one file of 2-dim 6x7 float32 samples, int32 labels of 300 classes;
// 4: format version 2, 60 images of 3x16x16 in chunks of 16 KiB of data stored zstd-compressed
// (the last, of 18 samples, too); 5: the same with lz4, 100 images in 2 shards; 6: token
// documents in 2 shards, zstd; 7: 300 image/jpeg bytes records of 1 to 13 bytes, 5 classes;
// 8: the same, 120 records of 4 classes with a class names block in each of 2 shards; 9: 40
// images of 3x16x16, 3 named classes, zstd.
// Each is a list of (file name, bytes), shard order.
struct DatasetFiles {
  std::string base;  // the name the dataset is opened by
  std::vector<std::string> names;
  std::vector<std::vector<uint8_t>> bytes;
};
const std::vector<DatasetFiles>& ValidDatasets();

// A valid checkpoint (1x8x8, 3 classes, conv 2,3, hidden 5; world size 2 with one stretch), and
// where its fields lie.
const std::vector<uint8_t>& ValidCheckpoint();
// ValidCheckpoint's run as a mixture of two datasets (its version 5 mixture block: the datasets'
// ids, samples and weights, the stream's steps and draws, each dataset's epoch, place and a
// stretch), a seed of the raw target.
const std::vector<uint8_t>& ValidMixtureCheckpoint();
const std::vector<Field>& CheckpointFields();

// An edge value (0, 1, 2^31, 2^32, 2^63, 2^64-1, ...), give or take 2.
uint64_t EdgeValue(FuzzedDataProvider& in);

// Applies up to `max_edits` edits the input asks for to `bytes`: a field of `fields` set to an
// edge value (0, 1, 2^31, 2^32, 2^63, 2^64-1, ...) or to the input's own bytes, any byte
// overwritten, or the buffer cut or extended (no field edit where `fields` is empty). Stops when
// the input runs out.
void ApplyEdits(FuzzedDataProvider& in, const std::vector<Field>& fields, size_t max_edits,
                std::vector<uint8_t>* bytes);

// Little-endian field access within a buffer (false / 0 where it does not fit).
uint64_t GetField(const std::vector<uint8_t>& bytes, size_t offset, size_t width);
void PutField(std::vector<uint8_t>* bytes, size_t offset, size_t width, uint64_t value);

// Checksum repairs, as a forger makes them: the header's over its first 4088 bytes; the index's
// over its entries (where the header's index_offset and shard_chunks place it inside the file);
// every chunk's, for the entries whose extent lies inside the file. Each a no-op where the
// fields it needs do not fit.
void FixHeaderChecksum(std::vector<uint8_t>* file);
void FixIndexChecksum(std::vector<uint8_t>* file);
void FixChunkChecksums(std::vector<uint8_t>* file);
// The class names block's (header bytes 800-823), where the header places one inside the file;
// before FixHeaderChecksum, whose checksum covers the field.
void FixNamesChecksum(std::vector<uint8_t>* file);

// A directory of this process's own under /dev/shm (or $TMPDIR), removed at exit.
const std::string& ScratchDir();
void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace rf::fuzz
