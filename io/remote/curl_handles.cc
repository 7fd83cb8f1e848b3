#include "io/remote/curl_handles.h"

#include <mutex>
#include <string>

namespace rf {

Status CurlGlobalInit() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (rc != CURLE_OK)
    return Status::IOError("libcurl", std::string("curl_global_init: ") + curl_easy_strerror(rc));
  return Status::Ok();
}

}  // namespace rf
