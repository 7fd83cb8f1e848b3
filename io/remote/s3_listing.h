// The objects under an s3:// prefix, listed with ListObjectsV2: a shard set's or a split
// dataset's parts, found from their folder.
//
// What is listed: the objects whose keys start with the prefix as given and hold no further '/'
// after it (delimiter '/': "s3://b/data/" lists data/x.rfd, not data/old/y.rfd;
// "s3://b/data/train-" lists data/train-*), as s3:// paths, sorted by byte order (S3's own
// order, checked here rather than trusted). Every page is followed through its continuation
// token. A zero-byte "folder" marker whose key is the prefix itself is not listed.
//
// Requests: one at a time, signed like the objects' (io/remote/s3_config.h), retried like
// ranges (io/remote/retry_policy.h); a page's answer goes into one buffer made per listing.
// Errors name the prefix (redacted), the HTTP status and S3's error code (NoSuchBucket,
// AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId); never a credential.
//
// Thread safety: each call makes its own fetcher; calls on separate threads are independent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/remote/retry_policy.h"
#include "io/remote/s3_config.h"

namespace rf {

struct S3ListOptions {
  uint32_t max_keys = 1000;  // keys a page (S3's max-keys, 1000 at most); tests walk many pages
  uint64_t max_page_bytes = 8u << 20;  // a page of 1000 keys of 1 KiB each is under 2 MiB
  HttpFetchOptions fetch;
};

// The s3:// paths of the objects directly under `prefix` (above), with the endpoint, region
// and credentials of this process's environment. For an http:// or https:// prefix,
// Unsupported (a web server has no listing to ask); InvalidArgument for a local path.
Result<std::vector<std::string>> ListRemotePrefix(std::string_view prefix);

// The same with a configuration and options of the caller's.
Result<std::vector<std::string>> ListS3Prefix(std::string_view prefix, const S3Config& config,
                                              const S3ListOptions& options = {});

// The ListObjectsV2 query for a page: its parameters sorted by name and S3-encoded, as SigV4's
// canonical query wants it (libcurl 7.88 signs the query as it is sent, unsorted).
std::string ListObjectsV2Query(std::string_view key_prefix, uint32_t max_keys,
                               std::string_view continuation_token);

}  // namespace rf
