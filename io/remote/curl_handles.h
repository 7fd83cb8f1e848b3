// One owner each for libcurl's easy and multi handles and header lists (the project's
// one-owner-per-resource rule): move-only, released in the destructor, never throwing. Each is
// made only after CurlLibrary() succeeded (io/remote/curl_library.h), whose entry points release
// it.
//
// Thread safety: a handle is used by one thread at a time.
#pragma once

#include <curl/curl.h>

#include <utility>

#include "io/remote/curl_library.h"

namespace rf {

// The owner of one handle of type T that the library's `Cleanup` member releases.
template <typename T, auto CurlApi::*Cleanup>
class CurlHandle {
 public:
  CurlHandle() = default;
  explicit CurlHandle(T* h) : h_(h) {}
  ~CurlHandle() {
    if (h_ != nullptr) (Curl().*Cleanup)(h_);
  }
  CurlHandle(CurlHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CurlHandle& operator=(CurlHandle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
  T* get() const { return h_; }
  // Hands the handle over (to libcurl, say), keeping nothing.
  T* release() { return std::exchange(h_, nullptr); }

 private:
  T* h_ = nullptr;
};

// Classes rather than aliases, so that a header may declare them without curl.h.
class CurlEasy : public CurlHandle<CURL, &CurlApi::easy_cleanup> {
 public:
  using CurlHandle::CurlHandle;
};
// Every easy handle must have been removed from it first (HttpFetcher's destructor does so).
class CurlMulti : public CurlHandle<CURLM, &CurlApi::multi_cleanup> {
 public:
  using CurlHandle::CurlHandle;
};
// A header list (CURLOPT_HTTPHEADER), which must outlive every transfer that uses it.
class CurlHeaders : public CurlHandle<curl_slist, &CurlApi::slist_free_all> {
 public:
  using CurlHandle::CurlHandle;
};

}  // namespace rf
