#include "io/remote/s3_listing.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "io/remote/http_fetcher.h"
#include "io/remote/s3_xml.h"
#include "io/remote/url.h"

namespace rf {
namespace {

bool HasScheme(std::string_view path, std::string_view scheme) {
  if (path.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(path[i])) != scheme[i]) return false;
  return true;
}

}  // namespace

std::string ListObjectsV2Query(std::string_view key_prefix, uint32_t max_keys,
                               std::string_view continuation_token) {
  std::string q;
  if (!continuation_token.empty())
    q += "continuation-token=" + S3UriEncode(continuation_token, false) + "&";
  q += "delimiter=%2F&list-type=2&max-keys=" + std::to_string(max_keys);
  q += "&prefix=" + S3UriEncode(key_prefix, false);
  return q;
}

Result<std::vector<std::string>> ListS3Prefix(std::string_view prefix, const S3Config& config,
                                              const S3ListOptions& options) {
  RF_ASSIGN_OR_RETURN(S3Location loc, ParseS3Path(prefix));
  const std::string shown = RedactUrl(prefix);
  if (options.max_keys == 0 || options.max_keys > 1000)
    return Status::InvalidArgument("ListS3Prefix: max_keys is " + std::to_string(options.max_keys) +
                                   ", not 1 to 1000");
  HttpFetchOptions fo = options.fetch;
  fo.max_in_flight = 1;  // one page at a time: each names the next
  RF_ASSIGN_OR_RETURN(std::unique_ptr<HttpFetcher> fetcher, HttpFetcher::Create(fo));
  std::vector<char> page(options.max_page_bytes);
  RemoteObject request;
  request.path = std::string(prefix);
  request.shown = shown;
  request.signing = S3Signing(config);
  // Path-style lists GET /BUCKET?..., virtual-hosted GET /?... (as botocore sends them).
  const std::string base =
      S3BucketUrl(config, loc.bucket) + (S3PathStyle(config, loc.bucket) ? "?" : "/?");
  std::vector<std::string> out;
  std::string token;
  for (uint64_t pages = 1;; ++pages) {
    request.url = base + ListObjectsV2Query(loc.key, options.max_keys, token);
    RF_ASSIGN_OR_RETURN(uint64_t n, fetcher->FetchWhole(request, page.data(), page.size()));
    RF_ASSIGN_OR_RETURN(S3ListPage p, ParseListObjectsV2({page.data(), n}, shown));
    for (std::string& key : p.keys) {
      if (key == loc.key && key.ends_with('/')) continue;  // the folder's own marker
      if (!key.starts_with(loc.key) || key.find('/', loc.key.size()) != std::string::npos)
        return Status::Corruption(shown, "the listing holds a key outside the prefix");
      out.push_back("s3://" + loc.bucket + "/" + key);
    }
    if (!p.truncated) break;
    if (p.next_token == token)
      return Status::Corruption(
          shown, "the listing's page " + std::to_string(pages) + " names itself as the next page");
    token = std::move(p.next_token);
  }
  std::sort(out.begin(), out.end());  // std::string compares bytes as unsigned: S3's order
  return out;
}

Result<std::vector<std::string>> ListRemotePrefix(std::string_view prefix) {
  if (HasScheme(prefix, "http://") || HasScheme(prefix, "https://"))
    return Status::Unsupported(RedactUrl(prefix) +
                               ": only s3:// prefixes are listed (an http(s) server has no "
                               "listing to ask): give each shard's URL");
  if (!HasScheme(prefix, "s3://"))
    return Status::InvalidArgument(RedactUrl(prefix) + ": not an s3:// prefix");
  RF_ASSIGN_OR_RETURN(S3Config config, ResolveS3Config(ProcessS3Environment()));
  return ListS3Prefix(prefix, config);
}

}  // namespace rf
