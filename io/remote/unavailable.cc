// rf_remote built without curl/curl.h (io/remote/CMakeLists.txt): the fetcher exists, so that
// its users link, but it cannot be made; no other member is reachable without an instance.
#include <memory>

#include "io/remote/http_fetcher.h"
#include "io/remote/s3_listing.h"

namespace rf {

class CurlMulti {};
struct TransferTarget {};
struct HttpFetcher::Slot {};

Result<std::unique_ptr<HttpFetcher>> HttpFetcher::Create(const HttpFetchOptions&) {
  return Status::Unsupported(
      "remote reads: ringfeed was built without libcurl headers (apt-get install "
      "libcurl4-openssl-dev, then rebuild)");
}
HttpFetcher::~HttpFetcher() = default;
Result<uint32_t> HttpFetcher::AddUrl(std::string_view) { return Create({}).status(); }
Result<uint32_t> HttpFetcher::AddObject(const RemoteObject&) { return Create({}).status(); }
uint32_t HttpFetcher::capacity() const { return 0; }
Status HttpFetcher::Prepare(const HttpRequest&) { return Create({}).status(); }
Status HttpFetcher::Submit() { return Create({}).status(); }
Status HttpFetcher::Wait(std::vector<HttpCompletion>&, uint32_t) { return Create({}).status(); }
Result<uint64_t> HttpFetcher::Size(std::string_view) { return Create({}).status(); }
Result<uint64_t> HttpFetcher::Size(const RemoteObject&) { return Create({}).status(); }
Result<uint64_t> HttpFetcher::FetchWhole(const RemoteObject&, void*, uint64_t) {
  return Create({}).status();
}
Result<std::vector<std::string>> ListRemotePrefix(std::string_view) {
  return HttpFetcher::Create({}).status();
}

}  // namespace rf
