#include "io/remote/url.h"

#include <curl/curl.h>

#include <memory>

namespace rf {

std::string RedactUrl(std::string_view url) {
  // The query and the fragment go first: an '@' or "://" inside them says nothing of the rest.
  url = url.substr(0, url.find_first_of("?#"));
  size_t scheme_end = url.find("://");
  size_t authority = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  size_t path = url.find('/', authority);
  std::string_view host_part = url.substr(
      authority, path == std::string_view::npos ? std::string_view::npos : path - authority);
  // The userinfo ends at the authority's last '@' (a password may itself hold one).
  size_t at = host_part.rfind('@');
  std::string out(url.substr(0, authority));
  out += at == std::string_view::npos ? host_part : host_part.substr(at + 1);
  if (path != std::string_view::npos) out += url.substr(path);
  return out;
}

Status CheckFetchableUrl(std::string_view url) {
  auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument(RedactUrl(url) + ": " + why);
  };
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
  if (!u) return invalid("out of memory parsing the URL");
  std::string copy(url);  // curl wants a NUL-terminated string
  if (CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, copy.c_str(), 0); rc != CURLUE_OK)
    return invalid(std::string("not a URL (") + curl_url_strerror(rc) + ")");
  char* scheme = nullptr;
  if (curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) return invalid("no scheme");
  std::string s(scheme);  // curl lower-cases the scheme
  curl_free(scheme);
  if (s != "http" && s != "https") return invalid("only http:// and https:// URLs are fetched");
  char* host = nullptr;
  if (curl_url_get(u.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) return invalid("no host");
  curl_free(host);
  return Status::Ok();
}

}  // namespace rf
