#include "io/remote/remote_object.h"

#include <cctype>

#include "io/remote/s3_config.h"
#include "io/remote/url.h"

namespace rf {
namespace {

// Whether `path` begins with `scheme` ("s3://"), the scheme in any case.
bool HasScheme(std::string_view path, std::string_view scheme) {
  if (path.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(path[i])) != scheme[i]) return false;
  }
  return true;
}

}  // namespace

bool IsRemotePath(std::string_view path) {
  return HasScheme(path, "https://") || HasScheme(path, "http://") || HasScheme(path, "s3://");
}

bool IsS3Path(std::string_view path) { return HasScheme(path, "s3://"); }

Result<RemoteObject> ResolveRemoteObject(std::string_view path) {
  RemoteObject o;
  o.path = std::string(path);
  o.shown = RedactUrl(path);
#ifdef RINGFEED_REMOTE_UNAVAILABLE
  return Status::Unsupported(o.shown +
                             ": ringfeed was built without libcurl headers (apt-get install "
                             "libcurl4-openssl-dev, then rebuild)");
#endif
  if (IsS3Path(path)) {
    RF_ASSIGN_OR_RETURN(S3Config config, ResolveS3Config(ProcessS3Environment()));
    return ResolveS3Object(path, config);
  }
  RF_RETURN_IF_ERROR(CheckFetchableUrl(path));
  o.url = o.path;
  return o;
}

std::string ShownPath(std::string_view path) {
  return IsRemotePath(path) ? RedactUrl(path) : std::string(path);
}

std::string RemoteFileName(std::string_view path) {
  path = path.substr(0, path.find_first_of("?#"));
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Result<RemoteObject> SiblingObject(const RemoteObject& object, std::string_view name) {
  if (object.path.find_first_of("?#") != std::string::npos) {
    return Status::InvalidArgument(object.shown +
                                   ": a URL with a query (a presigned URL) names one object; its "
                                   "shards cannot be found from it: give each shard's own URL");
  }
  size_t slash = object.path.rfind('/');
  std::string sibling = object.path.substr(0, slash + 1);
  sibling += name;
  return ResolveRemoteObject(sibling);
}

}  // namespace rf
