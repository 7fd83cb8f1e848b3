#include "io/remote/url.h"

#include <cctype>

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

// A small parser of its own rather than curl_url(): checking a path needs no libcurl loaded,
// so a malformed URL is named as such even where libcurl is missing. It checks what the fetcher
// relies on; libcurl parses the URL again when it requests it (and a URL it refuses fails as
// CURLE_URL_MALFORMAT, not retried).
Status CheckFetchableUrl(std::string_view url) {
  auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument(RedactUrl(url) + ": " + why);
  };
  for (char c : url)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
      return invalid("not a URL (a space or control character: percent-encode it)");
  size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return invalid("not a URL (no scheme://)");
  std::string scheme;
  for (char c : url.substr(0, colon)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
      return invalid("not a URL (a malformed scheme)");
    scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (scheme != "http" && scheme != "https")
    return invalid("only http:// and https:// URLs are fetched");
  std::string_view authority = url.substr(colon + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos)
    authority = authority.substr(at + 1);
  std::string_view host = authority, port;
  if (authority.starts_with('[')) {  // an IPv6 literal, "[::1]:8080"
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid("not a URL (an unclosed IPv6 address)");
    host = authority.substr(0, close + 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':'))
      return invalid("not a URL (text after the IPv6 address)");
    if (!rest.empty()) port = rest.substr(1);
  } else if (size_t c = authority.rfind(':'); c != std::string_view::npos) {
    host = authority.substr(0, c);
    port = authority.substr(c + 1);
  }
  if (host.empty() || host == "[]") return invalid("no host");
  unsigned long port_number = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return invalid("not a URL (a malformed port)");
    port_number = port_number * 10 + static_cast<unsigned long>(c - '0');
    if (port_number > 65535) return invalid("not a URL (a port over 65535)");
  }
  return Status::Ok();
}

}  // namespace rf
