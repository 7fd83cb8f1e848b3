// Dataset::Open of a remote path (io/dataset.h): the same checks as a local dataset's, over
// range requests (io/remote/object_reader.h).
#include <algorithm>
#include <map>
#include <memory>

#include "io/dataset.h"
#include "io/dataset_shards.h"
#include "io/remote/object_reader.h"

namespace rf {

Result<Dataset> Dataset::OpenRemote(const std::string& path, const HttpFetchOptions& remote) {
  RF_ASSIGN_OR_RETURN(RemoteObject given, ResolveRemoteObject(path));
  if (given.shown.ends_with('/')) {
    return Status::Unsupported(given.shown +
                               ": a directory of datasets is read from a store that lists "
                               "(s3://); over http(s):// name a dataset's file or one shard");
  }
  RF_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> reader, ObjectReader::Create(remote));
  std::map<std::string, RemoteObject> objects;  // by shown name: the files opened
  objects.emplace(given.shown, given);
  const bool shard_name = !format::ShardBase(given.shown).empty();
  ShardOpener open = [&](const std::string& shown) -> Result<OpenedShard> {
    auto it = objects.find(shown);
    if (it == objects.end()) {
      RF_ASSIGN_OR_RETURN(RemoteObject o, SiblingObject(given, RemoteFileName(shown)));
      it = objects.emplace(shown, std::move(o)).first;
    }
    const RemoteObject& o = it->second;
    Result<uint64_t> size = reader->Size(o);
    if (!size.ok() && size.status().IsNotFound() && !shard_name && shown == given.shown) {
      return Status::NotFound(
          shown,
          "no such object (HTTP 404; a remote dataset is named by its file or one "
          "shard's URL; shards are not looked for under a base name over "
          "http(s)://)",
          ENOENT);
    }
    if (!size.ok()) return size.status();
    const uint64_t bytes = *size;
    return DecodeShard(shown, bytes, [&](void* buf, size_t n, uint64_t offset) -> Result<size_t> {
      const uint64_t len = offset >= bytes ? 0 : std::min<uint64_t>(n, bytes - offset);
      RF_RETURN_IF_ERROR(reader->ReadAt(o, buf, len, offset));
      return static_cast<size_t>(len);
    });
  };
  RF_ASSIGN_OR_RETURN(Dataset d, OpenShardSet(given.shown, given.shown, open));
  for (const std::string& p : d.shard_paths_) d.objects_.push_back(objects.at(p));
  d.remote_ = remote;
  return d;
}

}  // namespace rf
