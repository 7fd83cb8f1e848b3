// The ringfeed dataset format (".rfd"), versions 1, 2 and 3. docs/format.md is the user-facing
// description; this header is the normative one.
//
// A dataset is one file, or N shard files "<stem>-KKKKK-of-NNNNN.rfd" that can sit on different
// drives. Every file is laid out as
//
//   [ header: 4096 bytes ][ chunk ][ chunk ] ... [ chunk index, padded to 4096 ]
//
// and every chunk starts at a multiple of 4096 and is a multiple of 4096 long, so it can be read
// with O_DIRECT straight into a registered buffer. A chunk is self-contained:
//
//   [ samples: n x shape, sample dtype ][ pad to 64 ][ labels: n, label dtype ][ zero pad ]
//
// Global chunk g holds samples [g * chunk_samples, ...) and lives in shard g % shard_count.
// All integers are little-endian. The header ends with an XXH3-64 of its first 4088 bytes; the
// index ends with an XXH3-64 of its entries; each chunk entry carries the XXH3-64 of the chunk's
// whole stored extent (padding included, so a flipped bit anywhere in it is caught).
//
// The sample shape. Every sample of a dataset has one shape of 1 to 4 dimensions (ndim, dims),
// stored row-major, outermost dimension first. The header also keeps the image view of it that
// the model and the per-channel statistics use, channels x height x width, with
// channels * height * width = the shape's element count:
//
//   3 dims (C, H, W)          channels = C, height = H, width = W (an image; C <= kMaxChannels)
//   1, 2 or 4 dims (..., W)   channels = 1, width = the last dim, height = the product of the
//                             others (1 for one dim): (2048) is 1 x 1 x 2048, (H, W) 1 x H x W
//
// Files written before the shape was recorded have ndim 0 there; they read as the 3-dim shape
// (channels, height, width), which is what they meant. A shape is refused (DecodeHeader, and
// CheckSampleShape for writers) with ndim outside 1..4, a zero or 2^32-or-larger dim, or a sample
// larger than kMaxSampleBytes: a chunk holds at least one sample and is read whole into one ring
// slot, so that bounds a sample (the byte size is computed without overflow).
//
// Sample dtypes (core/dtype.h): uint8, float16, bfloat16, float32 hold intensities; uint16, int32,
// int64 hold ids (token ids), stored exactly as given. The per-channel mean and std are the
// stored values' statistics for intensities; for ids the writer leaves them at mean 0, std 1 (a
// float mean of token ids means nothing, and int64 ids do not survive a float sum).
//
// Labels. num_classes >= 1: every label is below it. num_classes 0: the dataset has no labels
// (token sequences usually have none); every stored label is then a uint8 0, so the chunk layout
// is the same as with labels and every reader works unchanged.
//
// Version 2 adds per-chunk compression (io/codec.h) and says what a record is. Its header has,
// after the shape, the codec the writer chose (informational: each chunk names its own) and the
// record kind; its index entries are 64 bytes instead of 48 and add, per chunk, the codec, the
// frame's size and the data's size. A chunk's *data* is what readers hand on: for tensor
// records, exactly a version 1 chunk (samples, labels at 64, zero pad to 4096), data_bytes long.
// Its *stored* extent is what is on disk: the codec's frame of the data, zero-padded to 4096
// (stored_bytes); a chunk that does not shrink is stored raw (codec none: frame = data =
// stored). The checksum covers the stored extent and is checked before decompression; the data
// size is enforced exactly while decompressing. The unit the order and the ranks work in is the
// chunk and its sample count, never its stored size, so a dataset's epochs do not depend on its
// codec. A version 2 chunk's data is at most max(kMaxChunkTarget, one sample's chunk): the
// header and index say so before any reader sizes a buffer from them.
//
// Version 3 is version 2 whose index entries are 72 bytes: each adds, at entry byte 64, the
// chunk's record bytes (records of any size: the end of its record table, the bytes of all its
// records; tensors: its samples' bytes, sample_count x SampleBytes()). So a reader knows every
// chunk's token count from the index alone, without a chunk read: the packed token sequences'
// epoch plan (pipeline/sequences/sequence_plan.h) is made at open from it. A version 3 chunk of
// records has exactly the data size its record bytes give (RecordChunkBytes), and its table must
// end there (Dataset::CheckRecords). Writers write version 3 for records of any size; version 2
// records stay readable (their index does not say the record bytes: ChunkEntry::record_bytes is 0).
//
// Records of any size (version 2, record kinds `tokens` and `bytes`). A record is a 1-D run of
// token ids of the sample dtype (uint16, int32, int64), or opaque bytes (uint8) with the media
// type the header names ("image/jpeg"; empty: unknown). The header's shape is then one dim, the
// largest record's element count (so SampleBytes() bounds every record), chunk_samples is the
// most records a chunk holds, and total_chunks is what the writer wrote (chunks end where the
// next record would pass the chunk target, so it is not a function of the sample count). A
// chunk of n records is, as data:
//
//   [ record table: n + 1 uint64 byte offsets into the records, 0 first, increasing ][ pad 64 ]
//   [ labels: n, label dtype ][ pad to 64 ][ records, back to back ][ zero pad to 4096 ]
//
// Record i is bytes [table[i], table[i + 1]) of the records area. A record holds at least one
// element and a whole number of them, and at most SampleBytes(); the table's last offset ends
// within the chunk's data. DecodeIndex checks what the index says (the sample count fits the
// data beside its table and one element a record); Dataset::CheckData checks each chunk's
// table when the chunk is in hand, before anything reads a record, and names file, chunk and
// the table entry's byte.
//
// Where the records came from (version 2, any record kind): `origin`, at byte 736, 64 bytes of
// printable ASCII without spaces, NUL-padded (at most 63 characters; empty where unknown, and in
// every file written before the field, whose bytes there are zero). The format does not interpret
// it: a tool that made the dataset from another format writes what it needs to write the records
// back as they were (ringfeed-convert: "megatron;dtype=int32;documents=labels",
// tools/convert/megatron.h), and only such a tool reads it. Builds before the field ignore it.
//
// Class names (any version, optional): three u64 at byte 800, the offset, size and XXH3-64 of a
// block of the labels' names in the file, all 0 where there is none (every file written before
// the fields). The block is num_classes names, each one or more bytes without control
// characters (UTF-8 as given: folder names), each ended by '\n', class 0 first; at most
// kMaxClassNamesBytes. It lies after the last chunk (at a multiple of 4096) and ends at or before
// the index, in every shard; nothing else refers to it, so builds before the fields read such a
// file unchanged (their index rules allow space between the last chunk and the index). The
// header cannot hold the names itself: ImageNet's 1000 WordNet ids alone take 10,000 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/checksum.h"
#include "io/codec.h"
#include "io/fields.h"

namespace rf::format {

inline constexpr uint64_t kAlign = 4096;
inline constexpr size_t kHeaderBytes = 4096;
inline constexpr uint32_t kVersion = 3;  // the newest this build reads and writes
inline constexpr uint32_t kOldestVersion = 1;
inline constexpr uint32_t kMaxChannels = 64;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint64_t kMaxSampleBytes = uint64_t{1} << 32;
inline constexpr size_t kIndexEntryBytes = 48;    // version 1
inline constexpr size_t kIndexEntryBytesV2 = 64;  // version 2
inline constexpr size_t kIndexEntryBytesV3 = 72;  // version 3
// The largest chunk target a writer takes (a chunk is read whole into one ring slot); a version
// 2 chunk's data is at most this, or one sample's chunk where a sample is larger.
inline constexpr uint64_t kMaxChunkTarget = uint64_t{1} << 30;
inline constexpr uint64_t kLabelAlign = 64;
inline constexpr char kMagic[8] = {'R', 'F', 'E', 'E', 'D', 'D', 'S', '\x1a'};
inline constexpr const char* kExtension = ".rfd";
// Where the header's shard index and count lie (u32 each), for errors about them.
inline constexpr uint64_t kShardFieldsOffset = 24;

constexpr uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// What a record is (version 2; version 1 holds tensors only). Stored as a uint32; never
// renumber.
// kFields: samples of several named fields (io/fields.h), each sample one record of bytes.
enum class RecordKind : uint32_t { kTensor = 0, kTokens = 1, kBytes = 2, kFields = 3 };
const char* RecordKindName(RecordKind k);
// Records of any size (tokens, bytes, fields): the record table layout above.
inline bool IsVariable(RecordKind k) { return k != RecordKind::kTensor; }
// "tensor", "tokens", "bytes", "fields" -> the kind; false for anything else.
bool ParseRecordKind(const std::string& name, RecordKind* out);
// The longest media type a header holds (bytes records), ASCII without controls.
inline constexpr size_t kMaxMediaType = 63;
// The longest origin a header holds (above), ASCII without controls or spaces.
inline constexpr size_t kMaxOrigin = 63;
// The largest class names block (above): 1 MiB, about 100K ImageNet-style names.
inline constexpr uint64_t kMaxClassNamesBytes = uint64_t{1} << 20;
// Whether `text` is at most `max` characters of printable ASCII without spaces (0x21 to 0x7e):
// what the header's media type and origin hold.
bool IsHeaderText(const std::string& text, size_t max);

struct Header {
  // 1 unless set: a header built field by field is a version 1 header, as before version 2.
  uint32_t version = 1;
  uint64_t dataset_id = 0;  // random; the same in every shard of one dataset
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  DType sample_dtype = DType::kUInt8;
  DType label_dtype = DType::kUInt8;
  // The image view of the sample shape (the mapping above).
  uint32_t channels = 0, height = 0, width = 0;
  // The sample shape, dims[0..ndim). 0 here (a header built field by field, or one of a file
  // written before the shape was recorded) means the 3-dim shape (channels, height, width):
  // EncodeHeader writes it so, and DecodeHeader always returns ndim 1 to 4. Set a shape with
  // SetSampleShape, which keeps the image view in step.
  uint32_t ndim = 0;
  std::array<uint32_t, kMaxDims> dims{};
  uint32_t num_classes = 0;    // 0: no labels (above)
  uint64_t total_samples = 0;  // in the whole dataset
  uint64_t total_chunks = 0;   // in the whole dataset
  uint32_t chunk_samples = 0;  // samples in every chunk but the dataset's last
  uint64_t shard_samples = 0;  // in this file
  uint32_t shard_chunks = 0;   // in this file
  uint64_t index_offset = 0;   // where this file's chunk index starts
  uint64_t file_size = 0;      // this file's exact size
  // Per-channel statistics of the stored values (as floats), for normalizing on the device.
  std::array<float, kMaxChannels> mean{};
  std::array<float, kMaxChannels> stddev{};
  // Version 2 only (version 1 reads as tensor records, no codec).
  RecordKind record_kind = RecordKind::kTensor;
  CodecSpec codec = {};    // what the writer compressed with; each chunk's entry names its own
  std::string media_type;  // bytes records: what they are ("image/jpeg"); "" unknown
  std::string origin;      // where the records came from (above); "" unknown
  // The class names block (above): 0, 0, 0 where the dataset has none.
  uint64_t names_offset = 0;
  uint64_t names_bytes = 0;
  uint64_t names_checksum = 0;
  // Record kind fields (version 3): the samples' fields (io/fields.h's table); empty otherwise.
  std::vector<FieldSpec> fields;

  bool variable() const { return IsVariable(record_kind); }

  // The sample shape, outermost dimension first: dims[0..ndim), or {channels, height, width}
  // where ndim is 0.
  std::vector<uint64_t> Shape() const;
  uint64_t SampleElems() const { return uint64_t{channels} * height * width; }
  uint64_t SampleBytes() const { return SampleElems() * DTypeSize(sample_dtype); }
  size_t LabelBytes() const { return DTypeSize(label_dtype); }
  bool HasLabels() const { return num_classes != 0; }
};

// The media types of image records: "image/jpeg", "image/png" and "image/webp" (a dataset of one
// codec), "image/*" (of several: each record's codec is known by its first bytes,
// decode/image_record.h).
bool IsImageMediaType(const std::string& media_type);
// Whether image records of `media_type` may be JPEGs ("image/jpeg", "image/*"): what nvJPEG may
// take.
bool MayHoldJpeg(const std::string& media_type);
// Whether a dataset holds image records (bytes records of an image media type): what the loader
// decodes into images.
bool HoldsImageRecords(const Header& h);

// InvalidArgument naming the shape where it cannot be stored with this sample dtype (the rules
// above: 1 to 4 dims, each 1 to 2^32-1, 3-dim shapes at most kMaxChannels channels, at most
// kMaxSampleBytes a sample).
Status CheckSampleShape(const std::vector<uint64_t>& shape, DType sample_dtype);
// Checks the shape against h->sample_dtype, then sets ndim, dims and the image view.
Status SetSampleShape(const std::vector<uint64_t>& shape, Header* h);
// "3x32x32", "2048".
std::string ShapeText(const std::vector<uint64_t>& shape);

struct ChunkEntry {
  uint64_t index = 0;         // global chunk number
  uint64_t first_sample = 0;  // global index of its first sample
  uint64_t offset = 0;        // in its file; a multiple of kAlign
  uint64_t stored_bytes = 0;  // what a reader reads; a multiple of kAlign
  uint32_t sample_count = 0;
  uint64_t checksum = 0;  // XXH3-64 of the stored_bytes at offset
  // Version 2 (version 1: none, and both equal stored_bytes). The codec's frame is the first
  // frame_bytes of the stored extent; it decompresses to data_bytes, what readers hand on.
  Codec codec = Codec::kNone;
  uint64_t frame_bytes = 0;
  uint64_t data_bytes = 0;
  // Version 3: the chunk's record bytes (above); 0 in versions 1 and 2 where the index does not
  // say (DecodeIndex fills it in for tensors of any version).
  uint64_t record_bytes = 0;
  bool compressed() const { return codec != Codec::kNone; }
};

// Where the parts of a chunk of n samples sit.
struct ChunkLayout {
  uint64_t labels_offset;
  uint64_t payload_bytes;
  uint64_t stored_bytes;
};
ChunkLayout LayoutFor(uint64_t n, uint64_t sample_bytes, size_t label_bytes);

// Where the parts of a chunk of n records of any size sit (the record table layout above):
// the table at 0, labels at labels_offset, the records from records_offset.
struct RecordLayout {
  uint64_t labels_offset;
  uint64_t records_offset;
};
RecordLayout RecordLayoutFor(uint64_t n, size_t label_bytes);
// A chunk's data size for n records of `record_bytes` in all.
inline uint64_t RecordChunkBytes(uint64_t n, size_t label_bytes, uint64_t record_bytes) {
  return RoundUp(RecordLayoutFor(n, label_bytes).records_offset + record_bytes, kAlign);
}
// LayoutFor, or false where a size would overflow 64 bits (sizes read from a file: DecodeHeader
// and DecodeIndex use it, so a forged chunk_samples x sample size cannot wrap to a small chunk).
bool CheckedLayoutFor(uint64_t n, uint64_t sample_bytes, size_t label_bytes, ChunkLayout* out);

// The most classes labels of this label dtype can name (every value from 0 to its largest):
// 256 for uint8, 65536 for uint16, 2^31 for int32. A header's num_classes above it is refused.
uint64_t MaxClassesFor(DType label_dtype);

// Index bytes of a file of this version with `chunks` chunks, padding included.
size_t IndexEntryBytes(uint32_t version);
uint64_t IndexStoredBytes(uint64_t chunks, uint32_t version = 1);
// The most data bytes a chunk of this header's dataset may hold (the format's bound above:
// version 2 only; version 1 chunks are bounded by their file).
uint64_t MaxChunkDataBytes(const Header& h);
// The most data bytes a chunk of n records of any size may hold: its table, labels and n records
// of the header's largest record (SampleBytes()), within MaxChunkDataBytes. DecodeIndex holds
// every entry to it, so a forged data size cannot make a reader size a buffer past what the
// header's own records allow.
uint64_t MaxRecordChunkBytes(const Header& h, uint64_t n);

void EncodeHeader(const Header& h, uint8_t out[kHeaderBytes]);
// Checks magic, version, checksum and that every field is in range and consistent with the
// others. `path` names the file in errors, with the offset of the field at fault. A header it
// accepts sizes nothing that overflows 64 bits: the sample shape (at most kMaxSampleBytes), a
// chunk of chunk_samples samples, the chunk count, the index and the file size are each computed
// with overflow checks; num_classes is at most MaxClassesFor(label_dtype); total_samples >= 1.
// What it cannot know (that the file holds the chunks it claims) DecodeIndex and CheckFileSize
// check, so a reader allocates nothing from a forged header before those pass.
Result<Header> DecodeHeader(const uint8_t* in, size_t n, const std::string& path);
// Checks that the header's size fields agree with the real file size.
Status CheckFileSize(const Header& h, uint64_t actual_size, const std::string& path);

// Entries of a version 1 index must be raw (codec none, frame = data = stored).
std::vector<uint8_t> EncodeIndex(const std::vector<ChunkEntry>& entries, uint32_t version = 1);
// Decodes and validates the index of the file described by h (a header DecodeHeader accepted):
// entry numbering, alignment, bounds, sizes and sample counts; for version 2 also the codec id,
// that the data size is the sample count's chunk, and that the frame fits its stored extent
// (stored = frame rounded up to 4096; raw chunks: frame = data = stored), that a compressed
// chunk's data is no more than its frame can make (MaxDecompressedBytes, io/codec.h) and that a
// chunk of records holds no more than MaxRecordChunkBytes. Every chunk lies after
// the header and the chunk before it, and ends at or before the index (offset + stored_bytes
// computed without overflow), so chunks neither overlap nor run past the file.
Result<std::vector<ChunkEntry>> DecodeIndex(const Header& h, const uint8_t* in, size_t n,
                                            const std::string& path);

// The class names block (above) for `names`; InvalidArgument for an empty name, one with a
// control character, or a block larger than kMaxClassNamesBytes.
Result<std::vector<uint8_t>> EncodeClassNames(const std::vector<std::string>& names);
// The names in the block h names (its n bytes read from the file at h.names_offset): checksum,
// the names' bytes and their count (num_classes) are checked; errors name file and byte.
Result<std::vector<std::string>> DecodeClassNames(const Header& h, const uint8_t* in, size_t n,
                                                  const std::string& path);

// Checks a chunk's stored bytes against its entry; the error names file, chunk and offset.
Status VerifyChunk(const ChunkEntry& e, const void* data, const std::string& path);
// A chunk's data from its stored bytes (already verified, or not: a damaged frame is refused
// all the same): decompressed into out (data_bytes), or copied where the chunk is raw. The error
// names file, chunk and offset. `d` is the calling thread's (one per thread).
Status DecodeChunkData(const ChunkEntry& e, const void* stored, void* out, Decompressor& d,
                       const std::string& path);

// Shard file names: "<stem>-00002-of-00004.rfd" for stem "<stem>.rfd" or "<stem>".
std::string ShardPath(const std::string& base, uint32_t index, uint32_t count);
// The base a shard file name came from, or "" if the name is not a shard name.
std::string ShardBase(const std::string& shard_path);
// What a shard file name says: its base, index and count; false if the name is not a shard name.
bool ParseShardName(const std::string& shard_path, std::string* base, uint32_t* index,
                    uint32_t* count);

}  // namespace rf::format
