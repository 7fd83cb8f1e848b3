#include "io/remote/curl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/dl_symbol.h"

namespace rf {
namespace {

constexpr const char* kSoname = "libcurl.so.4";
constexpr unsigned kOldest = 0x075500;  // 7.85.0: CURLOPT_PROTOCOLS_STR

const CurlApi* loaded_api = nullptr;  // set once, inside CurlLibrary()'s call_once

Result<const CurlApi*> Load() {
  const char* env = std::getenv("RINGFEED_LIBCURL");
  std::string name = env != nullptr && *env != '\0' ? env : kSoname;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<CurlApi> api, OpenCurlLibrary(name));
  // curl_global_init is not thread safe in every libcurl; here it runs inside a call_once.
  if (CURLcode rc = api->global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
    return Status::Unsupported(api->path + ": curl_global_init failed: " + api->easy_strerror(rc));
  loaded_api = api.release();  // never unloaded: handles may outlive any owner of it
  return loaded_api;
}

}  // namespace

Result<std::unique_ptr<CurlApi>> OpenCurlLibrary(const std::string& name) {
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Unsupported(name + " not found (" + (why != nullptr ? why : "dlopen failed") +
                               "); install libcurl4 (apt-get install libcurl4), or set "
                               "RINGFEED_LIBCURL to libcurl.so.4's path");
  }
  auto api = std::make_unique<CurlApi>();
  api->path = name;
  std::string missing;
  const bool all =
      BindSymbol(lib, "curl_global_init", &api->global_init, &missing) &&
      BindSymbol(lib, "curl_version_info", &api->version_info, &missing) &&
      BindSymbol(lib, "curl_easy_init", &api->easy_init, &missing) &&
      BindSymbol(lib, "curl_easy_cleanup", &api->easy_cleanup, &missing) &&
      BindSymbol(lib, "curl_easy_setopt", &api->easy_setopt, &missing) &&
      BindSymbol(lib, "curl_easy_getinfo", &api->easy_getinfo, &missing) &&
      BindSymbol(lib, "curl_easy_strerror", &api->easy_strerror, &missing) &&
      BindSymbol(lib, "curl_multi_init", &api->multi_init, &missing) &&
      BindSymbol(lib, "curl_multi_cleanup", &api->multi_cleanup, &missing) &&
      BindSymbol(lib, "curl_multi_setopt", &api->multi_setopt, &missing) &&
      BindSymbol(lib, "curl_multi_add_handle", &api->multi_add_handle, &missing) &&
      BindSymbol(lib, "curl_multi_remove_handle", &api->multi_remove_handle, &missing) &&
      BindSymbol(lib, "curl_multi_perform", &api->multi_perform, &missing) &&
      BindSymbol(lib, "curl_multi_info_read", &api->multi_info_read, &missing) &&
      BindSymbol(lib, "curl_multi_poll", &api->multi_poll, &missing) &&
      BindSymbol(lib, "curl_multi_strerror", &api->multi_strerror, &missing) &&
      BindSymbol(lib, "curl_slist_append", &api->slist_append, &missing) &&
      BindSymbol(lib, "curl_slist_free_all", &api->slist_free_all, &missing);
  if (!all) {
    dlclose(lib);
    return Status::Unsupported(name + " has no " + missing + ": not a libcurl 7.85 or later");
  }
  const curl_version_info_data* v = api->version_info(CURLVERSION_NOW);
  api->version = v != nullptr && v->version != nullptr ? v->version : "unknown";
  if (v == nullptr || v->version_num < kOldest) {
    dlclose(lib);
    return Status::Unsupported(name + " is libcurl " + api->version +
                               "; ringfeed needs 7.85 or later (apt-get install libcurl4)");
  }
  return api;
}

Result<const CurlApi*> CurlLibrary() {
  static std::once_flag once;
  static Result<const CurlApi*> result = Status::Unsupported("libcurl: not loaded");
  std::call_once(once, [] { result = Load(); });
  return result;
}

const CurlApi& Curl() { return *loaded_api; }

}  // namespace rf
