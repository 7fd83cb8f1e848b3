// URLs of remote objects as the fetcher takes them, and as every message shows them.
//
// RedactUrl is the one way a URL reaches a message, a log or a Status: it drops the userinfo
// ("user:password@") and everything from the query on ("?X-Amz-Signature=...", "#..."), where
// credentials and the signatures of presigned URLs live. It never fails: a string that is no
// URL at all is shown with the same parts dropped.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace rf {

// "https://user:secret@host:8443/bucket/key?X-Amz-Signature=abc" -> "https://host:8443/bucket/key".
std::string RedactUrl(std::string_view url);

// Ok for an absolute http:// or https:// URL with a host (the scheme in any case); otherwise
// InvalidArgument naming the redacted URL and what is wrong with it.
Status CheckFetchableUrl(std::string_view url);

}  // namespace rf
