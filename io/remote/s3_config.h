// Where an s3:// object is and how its requests are signed: the endpoint, the region, the
// credentials and the addressing, found the way the AWS tools (botocore, the AWS CLI) find them.
//
//   profile      AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default".
//   files        AWS_CONFIG_FILE (default ~/.aws/config), AWS_SHARED_CREDENTIALS_FILE (default
//                ~/.aws/credentials); ~ is $HOME. A missing file is an empty one.
//   credentials  the first of: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
//                from the environment (even where AWS_PROFILE is set, as botocore does); the
//                profile's aws_access_key_id / aws_secret_access_key (/ aws_session_token) in
//                the credentials file; the same keys in the profile's section of the config
//                file. A key id without its secret (or the reverse) is an error, not a skip.
//                Roles, SSO, credential_process and instance metadata are not supported: a
//                profile that names one (role_arn, sso_*, credential_process) says so.
//   region       AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region`, else
//                us-east-1 (botocore's default for S3, and what MinIO, Ceph and s3rver accept).
//   endpoint     AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the profile's nested
//                "s3 = endpoint_url = ...", else its `endpoint_url`, else the "[services NAME]"
//                section its `services` names ("s3 = endpoint_url = ..."); none of these where
//                AWS_IGNORE_CONFIGURED_ENDPOINT_URLS (or the profile's
//                ignore_configured_endpoint_urls) is true. Without one: AWS itself,
//                https://s3.REGION.amazonaws.com (.amazonaws.com.cn for cn-* regions).
//   addressing   a custom endpoint: path-style (ENDPOINT/BUCKET/KEY), since such stores (MinIO,
//                Ceph, s3rver, a loopback test server) rarely have a wildcard DNS name for
//                buckets. AWS: virtual-hosted (https://BUCKET.s3.REGION.amazonaws.com/KEY), which
//                AWS recommends and which is the only style for newer features, except for a
//                bucket whose name is no DNS label (dots, which break the TLS wildcard's match,
//                capitals, underscores), which goes path-style. The profile's nested
//                "s3 = addressing_style = path|virtual|auto" overrides either.
//
// Secrets: no message made here shows a secret, a session token or an access key id; a
// credential is named by where it was looked for ("AWS_SECRET_ACCESS_KEY", "FILE [profile]").
//
// Thread safety: pure functions and value types; ProcessS3Environment reads the environment.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"
#include "io/remote/remote_object.h"

namespace rf {

// The environment variables the resolution reads (AWS_*, HOME), by name; absent: unset.
using S3Environment = std::map<std::string, std::string, std::less<>>;

// This process's AWS_* variables and HOME.
S3Environment ProcessS3Environment();

enum class S3Addressing { kAuto, kPath, kVirtualHosted };

struct S3Config {
  std::string endpoint;  // "scheme://host[:port][/path]", no trailing '/'
  bool custom_endpoint = false;
  std::string region;
  S3Addressing addressing = S3Addressing::kAuto;  // kAuto: the rule above, bucket by bucket
  std::string access_key_id, secret_access_key, session_token;
  // Where the credentials came from, for messages: "the environment (AWS_ACCESS_KEY_ID)",
  // "/root/.aws/credentials [default]". Never a credential itself.
  std::string credentials_from;
};

// The configuration `env` gives (the rules above). InvalidArgument naming the variable, file or
// profile at fault: half a key pair, an endpoint that is no http(s) URL, a profile that needs
// an unsupported provider; NotFound where no credentials are found anywhere, naming where
// they were looked for.
Result<S3Config> ResolveS3Config(const S3Environment& env);

struct S3Location {
  std::string bucket;
  std::string key;  // as given, not encoded; may be empty (a bucket or prefix)
};

// "s3://BUCKET/KEY" (the scheme in any case) split; InvalidArgument for no bucket or a bucket
// name with characters no store takes ('@', ':', '?', ...). The key is taken as it is: S3 keys
// are not percent-decoded (s3://b/a%20b is the key "a%20b", as the AWS CLI takes it).
Result<S3Location> ParseS3Path(std::string_view path);

// S3's URI encoding (SigV4's): every byte but A-Z a-z 0-9 - _ . ~ (and '/' where keep_slash)
// as %XX, upper-case hex.
std::string S3UriEncode(std::string_view s, bool keep_slash);

// The URL of `bucket`'s root as `config` addresses it, without a trailing '/':
// "http://127.0.0.1:9000/bucket" (path-style) or "https://bucket.s3.us-east-1.amazonaws.com".
std::string S3BucketUrl(const S3Config& config, std::string_view bucket);

// Whether `bucket` is addressed path-style under `config` (the addressing rule above).
bool S3PathStyle(const S3Config& config, std::string_view bucket);

// How requests with `config`'s credentials are signed (libcurl's "aws:amz:REGION:s3").
RequestSigning S3Signing(const S3Config& config);

// The object at `path` ("s3://BUCKET/KEY", KEY not empty) as `config` finds it: the URL with
// the key encoded, the signing, and `shown` = RedactUrl(path) (which is the path itself but for
// a '?' or '#' in the key and what follows: ParseS3Path refuses a bucket that holds userinfo).
Result<RemoteObject> ResolveS3Object(std::string_view path, const S3Config& config);

}  // namespace rf
