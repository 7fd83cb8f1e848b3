// ringfeed-bench-whole-shard: the peers' way with compression, MosaicML's MDS and litdata's,
// against ringfeed's, on the same bytes and codec (issue 27's comparison). They compress whole
// shards (64 MB by default) and, before the first sample of a shard is read, read the whole
// compressed shard and decompress it into a local cache file; ringfeed compresses each chunk and
// decompresses it in memory as it is read.
//
//   --prepare  writes the dataset's samples as whole compressed shards (WORK/shard-K.bin), the
//              stand-in for an MDS/litdata dataset, and prints both datasets' disk space;
//   (default)  times the first batch, from a cold cache (the caller drops it): whole shard =
//              read shard 0, decompress it, write it to the cache (fsync'd, as a cache on disk
//              is), read the batch back; ringfeed = open the version 2 dataset, read and
//              decompress its chunk 0, take the batch.
// Usage: ringfeed-bench-whole-shard --raw RAW.rfd --chunked V2.rfd --codec zstd:1 --work DIR
//        [--shard-mb 64] [--batch 256] [--prepare]
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/chunk_fetcher.h"
#include "io/codec.h"
#include "io/dataset.h"
#include "io/file.h"

namespace rf {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int Fail(const Status& st) {
  std::fprintf(stderr, "ringfeed-bench-whole-shard: %s\n", st.ToString().c_str());
  return 1;
}

struct Args {
  std::string raw, chunked, codec = "zstd:1", work;
  uint64_t shard_bytes = 64ull << 20;
  uint32_t batch = 256;
  bool prepare = false;
};

Status Prepare(const Args& a, const Dataset& raw, const CodecSpec& spec) {
  RF_ASSIGN_OR_RETURN(ChunkFetcher f, ChunkFetcher::Create(raw));
  std::vector<uint8_t> chunk(raw.max_chunk_bytes()), shard, frame;
  Compressor c(spec);
  uint64_t stored = 0, shards = 0;
  auto flush = [&]() -> Status {
    frame.resize(CompressBound(spec.codec, shard.size()));
    RF_ASSIGN_OR_RETURN(size_t n,
                        c.Compress(shard.data(), shard.size(), frame.data(), frame.size()));
    const std::string path = a.work + "/shard-" + std::to_string(shards++) + ".bin";
    // The frame, then the shard's data size (what a reader allocates its cache file from).
    const uint64_t data = shard.size();
    std::vector<uint8_t> out(frame.begin(), frame.begin() + n);
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(&data),
               reinterpret_cast<const uint8_t*>(&data) + 8);
    RF_RETURN_IF_ERROR(WriteFileAtomically(path, out.data(), out.size()));
    stored += out.size();
    shard.clear();
    return Status::Ok();
  };
  const uint64_t sample = raw.header().SampleBytes();
  for (size_t g = 0; g < raw.chunk_count(); ++g) {
    RF_RETURN_IF_ERROR(f.Fetch(g, chunk.data()));
    const uint64_t n = raw.chunk(g).entry.sample_count;
    shard.insert(shard.end(), chunk.begin(), chunk.begin() + n * sample);  // samples only
    if (shard.size() >= a.shard_bytes) RF_RETURN_IF_ERROR(flush());
  }
  if (!shard.empty()) RF_RETURN_IF_ERROR(flush());
  RF_ASSIGN_OR_RETURN(Dataset chunked, Dataset::Open(a.chunked));
  std::printf(
      "disk space, %s: whole %llu MB shards %llu shards %.3f GB; ringfeed chunks %.3f GB "
      "(%llu of %zu chunks compressed); raw %.3f GB\n",
      CodecText(spec).c_str(), static_cast<unsigned long long>(a.shard_bytes >> 20),
      static_cast<unsigned long long>(shards), stored / 1e9, chunked.total_bytes() / 1e9,
      static_cast<unsigned long long>(chunked.compressed_chunks()), chunked.chunk_count(),
      raw.total_bytes() / 1e9);
  return Status::Ok();
}

Status FirstBatch(const Args& a, const CodecSpec& spec) {
  // Whole shard: read it, decompress it, write the cache file, read the batch from the cache.
  double t0 = Now();
  const std::string path = a.work + "/shard-0.bin";
  RF_ASSIGN_OR_RETURN(File in, File::Open(path, O_RDONLY));
  RF_ASSIGN_OR_RETURN(uint64_t size, in.Size());
  std::vector<uint8_t> frame(size);
  RF_RETURN_IF_ERROR(in.ReadAt(frame.data(), size, 0));
  uint64_t data = 0;
  std::memcpy(&data, frame.data() + size - 8, 8);
  std::vector<uint8_t> shard(data);
  Decompressor d;
  RF_RETURN_IF_ERROR(d.Decompress(spec.codec, frame.data(), size - 8, shard.data(), data));
  const std::string cache = a.work + "/cache-0.bin";
  RF_RETURN_IF_ERROR(WriteFileAtomically(cache, shard.data(), shard.size()));
  RF_ASSIGN_OR_RETURN(Dataset chunked, Dataset::Open(a.chunked));
  const uint64_t batch_bytes = uint64_t{a.batch} * chunked.header().SampleBytes();
  std::vector<uint8_t> batch(batch_bytes);
  RF_ASSIGN_OR_RETURN(File c, File::Open(cache, O_RDONLY));
  RF_RETURN_IF_ERROR(c.ReadAt(batch.data(), batch_bytes, 0));
  const double whole = Now() - t0;
  ::unlink(cache.c_str());
  // ringfeed: chunk 0 of the version 2 dataset (opening it is counted: the header and index).
  t0 = Now();
  RF_ASSIGN_OR_RETURN(Dataset fresh, Dataset::Open(a.chunked));
  RF_ASSIGN_OR_RETURN(ChunkFetcher f, ChunkFetcher::Create(fresh));
  std::vector<uint8_t> chunk(fresh.max_chunk_bytes());
  RF_RETURN_IF_ERROR(f.Fetch(0, chunk.data()));
  std::memcpy(batch.data(), chunk.data(),
              std::min<uint64_t>(batch_bytes,
                                 fresh.chunk(0).entry.sample_count * fresh.header().SampleBytes()));
  const double mine = Now() - t0;
  std::printf(
      "first batch of %u, cold, %s: whole shard %.1f ms (%.1f MB read, %.1f MB "
      "decompressed and cached); ringfeed chunk %.1f ms (%.2f MB read)\n",
      a.batch, CodecText(spec).c_str(), whole * 1e3, size / 1e6, data / 1e6, mine * 1e3,
      fresh.chunk(0).entry.stored_bytes / 1e6);
  return Status::Ok();
}

}  // namespace
}  // namespace rf

int main(int argc, char** argv) {
  rf::Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--raw")
      a.raw = val();
    else if (k == "--chunked")
      a.chunked = val();
    else if (k == "--codec")
      a.codec = val();
    else if (k == "--work")
      a.work = val();
    else if (k == "--shard-mb")
      a.shard_bytes = std::stoull(val()) << 20;
    else if (k == "--batch")
      a.batch = static_cast<uint32_t>(std::stoul(val()));
    else if (k == "--prepare")
      a.prepare = true;
    else {
      std::fprintf(stderr,
                   "usage: ringfeed-bench-whole-shard --raw RAW.rfd --chunked V2.rfd "
                   "--codec C --work DIR [--shard-mb 64] [--batch 256] [--prepare]\n");
      return 2;
    }
  }
  rf::Result<rf::CodecSpec> spec = rf::ParseCodec(a.codec);
  if (!spec.ok()) return rf::Fail(spec.status());
  if (a.prepare) {
    rf::Result<rf::Dataset> raw = rf::Dataset::Open(a.raw);
    if (!raw.ok()) return rf::Fail(raw.status());
    const rf::Status st = rf::Prepare(a, *raw, *spec);
    return st.ok() ? 0 : rf::Fail(st);
  }
  const rf::Status st = rf::FirstBatch(a, *spec);
  return st.ok() ? 0 : rf::Fail(st);
}
