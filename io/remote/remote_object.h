// Remote objects as the dataset layer names them: a path that is a URL ("https://", "http://",
// "s3://") resolved to what the fetcher requests (the URL) and how each request is signed.
//
//   https://HOST/PATH, http://HOST/PATH   fetched as they are (a presigned URL keeps its query:
//                                          its signature); no signing.
//   s3://BUCKET/KEY                        an S3-compatible store's object: the endpoint, region
//                                          and credentials found as the AWS tools find them
//                                          (io/remote/s3_config.h), each request signed with
//                                          Signature V4 by libcurl.
//
// Names: `shown` is what every message, log and Dataset::shard_path() carries: the path with
// userinfo and query dropped (RedactUrl); the credentials and signatures live only in `url` and
// `signing`, which no message shows.
//
// Thread safety: pure functions and value types.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace rf {

// How each request to an object is signed. Empty aws_sigv4: not signed.
struct RequestSigning {
  // libcurl's CURLOPT_AWS_SIGV4 provider string, "aws:amz:REGION:s3"; empty: none.
  std::string aws_sigv4;
  std::string access_key_id, secret_access_key;
  std::string session_token;  // sent as x-amz-security-token where set
  bool signed_requests() const { return !aws_sigv4.empty(); }
};

struct RemoteObject {
  std::string path;   // as the user gave it (s3://BUCKET/KEY or the URL)
  std::string url;    // what is requested: an http(s):// URL
  std::string shown;  // RedactUrl(path): for every message
  RequestSigning signing;
};

// Whether `path` names a remote object: it begins with "http://", "https://" or "s3://"
// (the scheme in any case). Everything else is a local path.
bool IsRemotePath(std::string_view path);
// Whether `path` begins with "s3://" (any case): an object store that lists.
bool IsS3Path(std::string_view path);

// The object `path` (IsRemotePath) names. InvalidArgument naming the redacted path for a
// malformed one (no host, no bucket, no key); for s3://, the errors of finding the store and its
// credentials (io/remote/s3_config.h).
Result<RemoteObject> ResolveRemoteObject(std::string_view path);

// `object` with its last path segment (the file name, before any query) replaced by `name`:
// the sibling a shard set's other shards are found at. InvalidArgument for a URL with a query
// (a presigned URL signs one object only: its siblings cannot be named from it).
Result<RemoteObject> SiblingObject(const RemoteObject& object, std::string_view name);

// How a path the user gave is shown in any message or output: a remote one redacted
// (RedactUrl), a local one as it is.
std::string ShownPath(std::string_view path);

// The last path segment of a remote path, before any query ("data-00000-of-00004.rfd").
std::string RemoteFileName(std::string_view path);

}  // namespace rf
