// One owner each for libcurl's easy and multi handles (the project's one-owner-per-resource
// rule): move-only, cleaned up in the destructor, never throwing. CurlGlobalInit runs
// curl_global_init once per process, before the first handle.
//
// Thread safety: a handle is used by one thread at a time; CurlGlobalInit is thread safe.
#pragma once

#include <curl/curl.h>

#include <utility>

#include "core/status.h"

namespace rf {

// curl_global_init(CURL_GLOBAL_DEFAULT), once; its result every later call.
Status CurlGlobalInit();

// The owner of one handle that `Cleanup` releases. (CURL and CURLM are both void in curl.h, so the
// cleanup function is what tells the two kinds apart.)
template <auto Cleanup>
class CurlHandle {
 public:
  CurlHandle() = default;
  explicit CurlHandle(void* h) : h_(h) {}
  ~CurlHandle() {
    if (h_ != nullptr) Cleanup(h_);
  }
  CurlHandle(CurlHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CurlHandle& operator=(CurlHandle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
  void* get() const { return h_; }

 private:
  void* h_ = nullptr;
};

// Classes rather than aliases, so that a header may declare them without curl.h.
class CurlEasy : public CurlHandle<curl_easy_cleanup> {
 public:
  using CurlHandle::CurlHandle;
};
// Every easy handle must have been removed from it first (HttpFetcher's destructor does so).
class CurlMulti : public CurlHandle<curl_multi_cleanup> {
 public:
  using CurlHandle::CurlHandle;
};

}  // namespace rf
