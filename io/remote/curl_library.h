// libcurl, loaded at run time: every curl_* entry point io/remote calls, found with dlopen/dlsym
// in the system's libcurl.so.4 when the first fetcher asks for them (cuda/nvjpeg_library.h is
// the same pattern for nvJPEG).
//
// Why at run time and not linked: a wheel carries every library but glibc and the C++ runtime,
// and libcurl cannot go in statically (it drags in OpenSSL, nghttp2, libssh, ... and the
// system's CA configuration); loading the system's own libcurl.so.4 keeps the wheel
// self-contained and TLS as up to date as the machine's. Only curl/curl.h is needed to build:
// the signatures below are the header's own (decltype of each declaration), so a mismatch is a
// compile error, and no curl symbol is linked.
//
// Where it is looked for: $RINGFEED_LIBCURL (a path or a file name) if set, else libcurl.so.4
// through the dynamic loader's search (LD_LIBRARY_PATH, the ld cache). Debian's libcurl4
// (OpenSSL) provides it; libcurl3-gnutls's libcurl-gnutls.so.4 is another ABI name and is not
// used. A libcurl older than 7.85 (CURLOPT_PROTOCOLS_STR) is refused.
//
// Lifetime and threads: the library is opened once per process (the first CurlLibrary() call,
// thread-safe; curl_global_init runs inside that once) and never closed. The entry points are
// plain function pointers, as thread-safe as libcurl makes each call.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>

#include "core/status.h"

#if LIBCURL_VERSION_NUM < 0x075500
#error "io/remote needs curl/curl.h of libcurl 7.85 or later (apt-get install libcurl4-openssl-dev)"
#endif

namespace rf {

struct CurlApi {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_version_info) version_info;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_cleanup) multi_cleanup;
  decltype(&::curl_multi_setopt) multi_setopt;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_perform) multi_perform;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_multi_poll) multi_poll;
  decltype(&::curl_multi_strerror) multi_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  std::string path;     // what was loaded ("libcurl.so.4")
  std::string version;  // its version ("7.88.1")
};

// The process's libcurl, loaded and initialised on the first call; later calls answer the same.
// Unsupported, one line, where it cannot be: "libcurl.so.4 not found (<dlerror>); install
// libcurl4 (apt-get install libcurl4)", or naming the entry point it lacks, or its version.
Result<const CurlApi*> CurlLibrary();

// The library CurlLibrary() loaded. Only for code that runs after a CurlLibrary() that
// succeeded (a handle's destructor, a fetcher's transfers): a loaded library is never unloaded.
const CurlApi& Curl();

// Opens `name` (a path or a file name for dlopen) and binds every entry point, without
// curl_global_init and without keeping it for Curl(): what CurlLibrary() does first, exposed so
// that tests can name a library that is not there. The handle is never closed.
Result<std::unique_ptr<CurlApi>> OpenCurlLibrary(const std::string& name);

}  // namespace rf
