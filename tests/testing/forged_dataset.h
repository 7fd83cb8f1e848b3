// Forging a dataset file the way a hostile user (or a broken writer) would: a field changed and
// every checksum recomputed, so the damage passes the checksums and only the readers' own checks
// of the fields can refuse it. For the tests of those checks (io, tools, src) and the fuzz seeds.
//
// Each edits a single file of a dataset in place (one shard: its own header and index).
// A failure adds a test failure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/format.h"

namespace rf::testing {

// Decodes the file's header, lets `edit` change any field, and writes it back with a valid
// checksum (EncodeHeader's: the sample shape written is h.Shape()).
void ForgeHeader(const std::string& path, const std::function<void(format::Header*)>& edit);
// The same for the chunk index: decoded, edited, re-encoded with a valid index checksum. (The
// edit may not change the entry count.)
void ForgeIndex(const std::string& path,
                const std::function<void(std::vector<format::ChunkEntry>*)>& edit);
// Sets label `i` of chunk `chunk` (the file's chunk, in index order; a chunk stored raw) to
// `value` in the file's label dtype, and recomputes that chunk's checksum in the index.
void ForgeLabel(const std::string& path, size_t chunk, uint32_t i, int64_t value);

// Lets `edit` change the stored bytes of raw chunk `chunk` (the file's chunk, in index order; its
// whole stored extent) in place, and recomputes that chunk's checksum in the index.
void ForgeChunk(const std::string& path, size_t chunk,
                const std::function<void(uint8_t* stored, uint64_t bytes)>& edit);

// The codec frame of chunk `chunk` (the file's chunk, in index order): the first frame_bytes of
// its stored extent (the whole extent for a raw chunk).
std::vector<uint8_t> ChunkFrame(const std::string& path, size_t chunk);
// `data` compressed into one frame of `spec` (what a forger puts in a chunk's place).
std::vector<uint8_t> FrameOf(CodecSpec spec, const std::vector<uint8_t>& data);
// Puts `frame` in chunk `chunk`'s place as a frame of `codec`, as a forger would: the stored
// extent becomes the frame zero-padded to 4096 (it must fit where the chunk was: the extent may
// shrink, never grow), and the entry's codec, frame and stored sizes and checksum follow it. The
// entry's data size is left as it was, so the frame must inflate to it (or be refused for not
// doing so). The file's format version must be 2.
void ForgeFrame(const std::string& path, size_t chunk, Codec codec,
                const std::vector<uint8_t>& frame);

}  // namespace rf::testing
