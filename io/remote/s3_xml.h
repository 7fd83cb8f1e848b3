// The two XML answers of S3 that io/remote reads, parsed with expat: an error's
// <Error><Code>...</Code></Error> and a ListObjectsV2 page (<ListBucketResult>).
//
// What is kept: an error's Code only (never its Message, StringToSign, CanonicalRequest or
// AWSAccessKeyId, which a signature error echoes); a page's object keys, its common prefixes,
// IsTruncated and NextContinuationToken. A document with a DOCTYPE is refused (no entity of
// any kind is expanded).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace rf {

struct S3ListPage {
  std::vector<std::string> keys;             // <Contents><Key>, in the page's order
  std::vector<std::string> common_prefixes;  // <CommonPrefixes><Prefix>
  bool truncated = false;                    // <IsTruncated>true</IsTruncated>
  std::string next_token;                    // <NextContinuationToken>
};

// The S3 error code of an error answer's body ("NoSuchKey", "SignatureDoesNotMatch", ...), or
// empty where the body is no S3 error document (nginx's HTML 404). A body cut off after its
// <Code> still names it.
std::string S3ErrorCode(std::string_view body);

// A ListObjectsV2 answer; Corruption naming `shown` (the listed prefix) where the body is no
// well-formed <ListBucketResult>, or is truncated without a continuation token.
Result<S3ListPage> ParseListObjectsV2(std::string_view body, const std::string& shown);

}  // namespace rf
