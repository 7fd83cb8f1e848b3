// Dataset::Open of a remote path (io/dataset.h): the same checks as a local dataset's, over
// range requests (io/remote/object_reader.h).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "io/checksum.h"
#include "io/dataset.h"
#include "io/dataset_shards.h"
#include "io/format.h"
#include "io/remote/object_reader.h"
#include "io/remote/s3_config.h"
#include "io/remote/s3_listing.h"
#include "io/remote/url.h"

namespace rf {
namespace {

// Shards of one set opened at once (each on its own connection).
constexpr uint32_t kShardOpenThreads = 8;

// The file names (last segments) of the objects an s3:// prefix lists, fetched with `remote`.
Result<std::vector<std::string>> ListedNames(const std::string& prefix,
                                             const HttpFetchOptions& remote) {
  RF_ASSIGN_OR_RETURN(S3Config config, ResolveS3Config(ProcessS3Environment()));
  S3ListOptions o;
  o.fetch = remote;
  RF_ASSIGN_OR_RETURN(std::vector<std::string> paths, ListS3Prefix(prefix, config, o));
  std::vector<std::string> names;
  for (const std::string& p : paths) names.push_back(RemoteFileName(p));
  return names;
}

// The s3:// dataset name `path` (no shard's name): the object itself, or the first shard of its
// one shard set, found by listing; refused where both, or shards of two counts, are there (as a
// local name is: io/dataset.h).
Result<std::string> FirstOfS3Name(const std::string& path, const std::string& shown,
                                  const HttpFetchOptions& remote) {
  const std::string file = RemoteFileName(path);
  std::string stem = path.substr(0, path.size() - file.size());
  const std::string ext = format::kExtension;
  stem += file.ends_with(ext) ? file.substr(0, file.size() - ext.size()) : file;
  RF_ASSIGN_OR_RETURN(std::vector<std::string> listed, ListedNames(stem, remote));
  bool itself = false;
  std::vector<std::string> shards;
  std::vector<uint32_t> counts;
  for (const std::string& f : listed) {
    if (f == file) itself = true;
    std::string base;
    uint32_t index = 0, count = 0;
    if (f == file || !format::ParseShardName(f, &base, &index, &count) || base != file) continue;
    shards.push_back(f);
    if (std::find(counts.begin(), counts.end(), count) == counts.end()) counts.push_back(count);
  }
  if (static_cast<size_t>(itself) + counts.size() > 1) {
    return Status::InvalidArgument(shown + ": " + std::to_string(itself + counts.size()) +
                                   " datasets have this name (the object itself and shards, or "
                                   "shards of two counts); remove the stale one(s) or name one "
                                   "shard");
  }
  if (itself) return path;
  if (shards.empty()) {
    return Status::NotFound(shown, "no such dataset (no object, no shards)", ENOENT);
  }
  return path.substr(0, path.size() - file.size()) + shards.front();
}

// A shard's last bytes fetched with its header at open: class names and an index of up to about
// 900 chunks (72 bytes each: a 3.6 GB shard of 4 MiB chunks). An object shorter comes whole.
constexpr uint64_t kTailGuess = uint64_t{64} << 10;
// The most of a shard's end (its class names and chunk index) fetched at open in one range when
// the guess fell short: an index of about 58,000 chunks, a 230 GB shard of 4 MiB chunks. Past
// it, each is read in pieces as DecodeShard asks, its buffer grown as they arrive.
constexpr uint64_t kTailAtOpen = uint64_t{4} << 20;

// One shard's header, index and names, read from `o` (named `shown`) in one round trip where
// they fit its ends: its size with its first bytes and, at once, its last ones
// (ObjectReader::SizeAndEnds); where the index starts before those, a second range from there to
// the end (at most kTailAtOpen), else reads as DecodeShard asks. Every byte is checked by
// DecodeShard as a local file's is. `alone`: the dataset was named by this one object's URL, so
// a 404 says how remote datasets are named.
Result<OpenedShard> OpenObject(ObjectReader& reader, const RemoteObject& o,
                               const std::string& shown, bool alone) {
  std::vector<uint8_t> head(format::kHeaderBytes), tail(kTailGuess);
  Result<HttpFetcher::Ends> ends =
      reader.SizeAndEnds(o, head.data(), head.size(), tail.data(), tail.size());
  if (!ends.ok() && ends.status().IsNotFound() && alone) {
    return Status::NotFound(
        shown,
        "no such object (HTTP 404; a remote dataset is named by its file or one "
        "shard's URL; shards are not looked for under a base name over "
        "http(s)://)",
        ENOENT);
  }
  if (!ends.ok()) return ends.status();
  const uint64_t bytes = ends->size;
  head.resize(static_cast<size_t>(ends->head_bytes));
  tail.resize(static_cast<size_t>(ends->tail_bytes));  // none where the tail's request failed
  uint64_t tail_at = tail.empty() ? bytes : ends->tail_at;
  if (Result<format::Header> h = format::DecodeHeader(head.data(), head.size(), shown); h.ok()) {
    uint64_t start = h->index_offset;
    if (h->names_bytes != 0) start = std::min(start, h->names_offset);
    if (start < tail_at && start >= head.size() && start < bytes && bytes - start <= kTailAtOpen) {
      tail.resize(static_cast<size_t>(bytes - start));
      RF_RETURN_IF_ERROR(reader.ReadAt(o, tail.data(), tail.size(), start));
      tail_at = start;
    }
  }
  return DecodeShard(shown, bytes, [&](void* buf, size_t n, uint64_t offset) -> Result<size_t> {
    const uint64_t len = offset >= bytes ? 0 : std::min<uint64_t>(n, bytes - offset);
    if (offset + len <= head.size()) {
      std::memcpy(buf, head.data() + offset, static_cast<size_t>(len));
    } else if (offset >= tail_at && offset + len <= tail_at + tail.size()) {
      std::memcpy(buf, tail.data() + (offset - tail_at), static_cast<size_t>(len));
    } else {
      RF_RETURN_IF_ERROR(reader.ReadAt(o, buf, len, offset));
    }
    return static_cast<size_t>(len);
  });
}

}  // namespace

Result<Dataset> Dataset::OpenRemote(const std::string& path, const HttpFetchOptions& remote) {
  if (!path.ends_with('/')) return OpenRemoteNamed(path, remote);
  if (!IsS3Path(path)) {
    return Status::Unsupported(RedactUrl(path) +
                               ": a directory of datasets is read from a store that lists "
                               "(s3://); over http(s):// name a dataset's file or one shard");
  }
  RF_ASSIGN_OR_RETURN(const std::vector<std::string> files, ListedNames(path, remote));
  const std::string shown = RedactUrl(path);
  RF_ASSIGN_OR_RETURN(Dataset d,
                      OpenParts(shown, DatasetNamesOf(files), [&](const std::string& name) {
                        return OpenRemoteNamed(path + name, remote);
                      }));
  d.remote_ = remote;
  return d;
}

Result<Dataset> Dataset::OpenRemoteNamed(const std::string& path, const HttpFetchOptions& remote) {
  RF_ASSIGN_OR_RETURN(RemoteObject given, ResolveRemoteObject(path));
  const bool s3 = IsS3Path(path);
  if (s3 && format::ShardBase(given.shown).empty()) {
    RF_ASSIGN_OR_RETURN(std::string first, FirstOfS3Name(path, given.shown, remote));
    if (first != path) {
      RF_ASSIGN_OR_RETURN(given, ResolveRemoteObject(first));
    }
  }
  // The shards are opened at once, kShardOpenThreads at a time, each thread with a reader (and
  // its connections) of its own from `readers`: a set's opens overlap their round trips.
  std::mutex mu;                                // guards objects and readers
  std::map<std::string, RemoteObject> objects;  // by shown name: the files opened
  std::vector<std::unique_ptr<ObjectReader>> readers;
  objects.emplace(given.shown, given);
  const bool shard_name = !format::ShardBase(given.shown).empty();
  ShardOpener open = [&](const std::string& shown) -> Result<OpenedShard> {
    RemoteObject o;
    std::unique_ptr<ObjectReader> reader;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = objects.find(shown);
      if (it == objects.end()) {
        RF_ASSIGN_OR_RETURN(RemoteObject sibling, SiblingObject(given, RemoteFileName(shown)));
        it = objects.emplace(shown, std::move(sibling)).first;
      }
      o = it->second;
      if (!readers.empty()) {
        reader = std::move(readers.back());
        readers.pop_back();
      }
    }
    if (reader == nullptr) {
      RF_ASSIGN_OR_RETURN(reader, ObjectReader::Create(remote));
    }
    Result<OpenedShard> r =
        OpenObject(*reader, o, shown, shown == given.shown && !shard_name && !s3);
    std::lock_guard<std::mutex> lock(mu);
    readers.push_back(std::move(reader));
    return r;
  };
  RF_ASSIGN_OR_RETURN(Dataset d,
                      OpenShardSet(RedactUrl(path), given.shown, open, kShardOpenThreads));
  for (const std::string& p : d.shard_paths_) d.objects_.push_back(objects.at(p));
  d.remote_ = remote;
  return d;
}

uint64_t Dataset::CacheId() const {
  std::vector<uint64_t> words;
  words.reserve(2 + 2 * chunks_.size());
  words.push_back(header_.dataset_id);
  words.push_back(chunks_.size());
  for (const ChunkLocation& c : chunks_) {
    words.push_back(c.entry.stored_bytes);
    words.push_back(c.entry.checksum);
  }
  return Checksum(words.data(), words.size() * sizeof(uint64_t));
}

}  // namespace rf
