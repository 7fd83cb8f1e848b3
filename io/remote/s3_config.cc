#include "io/remote/s3_config.h"

#include <unistd.h>

#include <cctype>

#include "io/remote/aws_config_file.h"
#include "io/remote/url.h"

extern char** environ;

namespace rf {
namespace {

const std::string* Get(const S3Environment& env, std::string_view name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

const std::string* Get(const AwsSettings* s, std::string_view name) {
  if (s == nullptr) return nullptr;
  auto it = s->find(name);
  return it == s->end() || it->second.empty() ? nullptr : &it->second;
}

bool IsTrue(const std::string* v) {
  if (v == nullptr) return false;
  std::string l;
  for (char c : *v) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "true" || l == "1";
}

// ~/... with $HOME.
std::string ExpandHome(const std::string& path, const S3Environment& env) {
  if (!path.starts_with("~/")) return path;
  const std::string* home = Get(env, "HOME");
  return (home != nullptr ? *home : std::string()) + path.substr(1);
}

// A profile's section of the config file: "[profile NAME]", "[default]" for the default one
// (botocore takes "[profile default]" too).
const AwsSettings* ConfigProfile(const AwsConfigFile& f, const std::string& profile) {
  const AwsSettings* s = f.Find(AwsProfileSection(profile, true));
  if (s == nullptr && profile == "default") s = f.Find("profile default");
  return s;
}

// A key pair from `s` (a credentials or config section): nothing where it holds neither key,
// InvalidArgument where it holds one without the other.
Result<bool> TakeKeys(const AwsSettings* s, const std::string& where, S3Config& c) {
  const std::string* id = Get(s, "aws_access_key_id");
  const std::string* secret = Get(s, "aws_secret_access_key");
  if (id == nullptr && secret == nullptr) return false;
  if (id == nullptr || secret == nullptr)
    return Status::InvalidArgument(where + " has " +
                                   (id ? "aws_access_key_id without aws_secret_access_key"
                                       : "aws_secret_access_key without aws_access_key_id"));
  c.access_key_id = *id;
  c.secret_access_key = *secret;
  if (const std::string* t = Get(s, "aws_session_token")) c.session_token = *t;
  c.credentials_from = where;
  return true;
}

Status FindCredentials(const S3Environment& env, const std::string& profile,
                       const AwsConfigFile& credentials, const AwsConfigFile& config, S3Config& c) {
  const std::string* id = Get(env, "AWS_ACCESS_KEY_ID");
  const std::string* secret = Get(env, "AWS_SECRET_ACCESS_KEY");
  if (id != nullptr || secret != nullptr) {
    if (id == nullptr || secret == nullptr)
      return Status::InvalidArgument(std::string("the environment has ") +
                                     (id ? "AWS_ACCESS_KEY_ID without AWS_SECRET_ACCESS_KEY"
                                         : "AWS_SECRET_ACCESS_KEY without AWS_ACCESS_KEY_ID"));
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    const std::string* token = Get(env, "AWS_SESSION_TOKEN");
    if (token == nullptr) token = Get(env, "AWS_SECURITY_TOKEN");  // botocore's older name
    if (token != nullptr) c.session_token = *token;
    c.credentials_from = "the environment (AWS_ACCESS_KEY_ID)";
    return Status::Ok();
  }
  std::string cred_where = credentials.path + " [" + profile + "]";
  RF_ASSIGN_OR_RETURN(bool found, TakeKeys(credentials.Find(profile), cred_where, c));
  if (found) return Status::Ok();
  const AwsSettings* p = ConfigProfile(config, profile);
  std::string conf_where = config.path + " [" + AwsProfileSection(profile, true) + "]";
  RF_ASSIGN_OR_RETURN(found, TakeKeys(p, conf_where, c));
  if (found) return Status::Ok();
  for (const char* provider : {"role_arn", "sso_start_url", "sso_session", "credential_process",
                               "web_identity_token_file"})
    if (Get(p, provider) != nullptr)
      return Status::Unsupported(conf_where + " gets its credentials through " + provider +
                                 ", which ringfeed does not support yet: give a key pair "
                                 "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)");
  return Status::NotFound("s3://",
                          "no AWS credentials found: not in the environment (AWS_ACCESS_KEY_ID, "
                          "AWS_SECRET_ACCESS_KEY), not in " +
                              cred_where + ", not in " + conf_where);
}

// The endpoint the environment or the profile configures, or empty.
std::string ConfiguredEndpoint(const S3Environment& env, const AwsSettings* p,
                               const AwsConfigFile& config, std::string* from) {
  if (IsTrue(Get(env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) ||
      IsTrue(Get(p, "ignore_configured_endpoint_urls")))
    return "";
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (const std::string* v = Get(env, name)) {
      *from = name;
      return *v;
    }
  }
  for (const char* key : {"s3.endpoint_url", "endpoint_url"}) {
    if (const std::string* v = Get(p, key)) {
      *from = config.path + " (" + key + ")";
      return *v;
    }
  }
  if (const std::string* services = Get(p, "services")) {
    if (const std::string* v = Get(config.Find("services " + *services), "s3.endpoint_url")) {
      *from = config.path + " [services " + *services + "]";
      return *v;
    }
  }
  return "";
}

// A bucket name that is one DNS label (what virtual-hosted addressing over TLS needs).
bool IsDnsLabel(std::string_view b) {
  if (b.size() < 3 || b.size() > 63 || b.front() == '-' || b.back() == '-') return false;
  for (char c : b)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
      return false;
  return true;
}

}  // namespace

S3Environment ProcessS3Environment() {
  S3Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = kv.substr(0, eq);
    if (name.starts_with("AWS_") || name == "HOME") env.emplace(name, kv.substr(eq + 1));
  }
  return env;
}

Result<S3Config> ResolveS3Config(const S3Environment& env) {
  std::string profile = "default";
  if (const std::string* p = Get(env, "AWS_PROFILE")) {
    profile = *p;
  } else if (const std::string* d = Get(env, "AWS_DEFAULT_PROFILE")) {
    profile = *d;
  }
  const std::string* cf = Get(env, "AWS_CONFIG_FILE");
  const std::string* sf = Get(env, "AWS_SHARED_CREDENTIALS_FILE");
  RF_ASSIGN_OR_RETURN(AwsConfigFile config,
                      ReadAwsConfigFile(ExpandHome(cf ? *cf : "~/.aws/config", env)));
  RF_ASSIGN_OR_RETURN(AwsConfigFile credentials,
                      ReadAwsConfigFile(ExpandHome(sf ? *sf : "~/.aws/credentials", env)));
  const AwsSettings* p = ConfigProfile(config, profile);
  if (Get(env, "AWS_PROFILE") != nullptr && p == nullptr && credentials.Find(profile) == nullptr)
    return Status::InvalidArgument("AWS_PROFILE names the profile " + profile + ", which is in " +
                                   "neither " + config.path + " nor " + credentials.path);

  S3Config c;
  RF_RETURN_IF_ERROR(FindCredentials(env, profile, credentials, config, c));
  const std::string* region = Get(env, "AWS_REGION");
  if (region == nullptr) region = Get(env, "AWS_DEFAULT_REGION");
  if (region == nullptr) region = Get(p, "region");
  c.region = region != nullptr ? *region : "us-east-1";
  for (char ch : c.region)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-'))
      return Status::InvalidArgument("the region '" + c.region + "' is not a region name");

  std::string from;
  std::string endpoint = ConfiguredEndpoint(env, p, config, &from);
  if (!endpoint.empty()) {
    if (Status st = CheckFetchableUrl(endpoint); !st.ok())
      return Status::InvalidArgument("the S3 endpoint from " + from + ": " + st.message());
    if (endpoint.find_first_of("?#") != std::string::npos)
      return Status::InvalidArgument("the S3 endpoint from " + from + " (" + RedactUrl(endpoint) +
                                     ") has a query: give scheme://host[:port][/path]");
    while (endpoint.ends_with('/')) endpoint.pop_back();
    c.endpoint = endpoint;
    c.custom_endpoint = true;
  } else {
    c.endpoint = "https://s3." + c.region + ".amazonaws.com";
    if (c.region.starts_with("cn-")) c.endpoint += ".cn";
  }
  if (const std::string* style = Get(p, "s3.addressing_style")) {
    if (*style == "path") {
      c.addressing = S3Addressing::kPath;
    } else if (*style == "virtual") {
      c.addressing = S3Addressing::kVirtualHosted;
    } else if (*style != "auto") {
      return Status::InvalidArgument(config.path + " [" + AwsProfileSection(profile, true) +
                                     "]: s3.addressing_style is '" + *style +
                                     "', not path, virtual or auto");
    }
  }
  return c;
}

Result<S3Location> ParseS3Path(std::string_view path) {
  auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument(std::string(path.substr(0, path.find_first_of("?#"))) + ": " +
                                   why);
  };
  if (path.size() < 5 || path.substr(0, 5).find("://") != 2) return invalid("not an s3:// path");
  std::string_view rest = path.substr(5);
  size_t slash = rest.find('/');
  S3Location loc;
  loc.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) loc.key = std::string(rest.substr(slash + 1));
  if (loc.bucket.empty()) return invalid("no bucket (s3://BUCKET/KEY)");
  for (char c : loc.bucket)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'))
      // Not the path itself: "s3://KEY:SECRET@bucket/..." must not reach a message.
      return Status::InvalidArgument(
          "s3://: a bucket name holds letters, digits, '-', '.' and '_' only; this one holds "
          "another character");
  return loc;
}

std::string S3UriEncode(std::string_view s, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool S3PathStyle(const S3Config& config, std::string_view bucket) {
  return config.addressing == S3Addressing::kPath ||
         (config.addressing == S3Addressing::kAuto &&
          (config.custom_endpoint || !IsDnsLabel(bucket)));
}

std::string S3BucketUrl(const S3Config& config, std::string_view bucket) {
  if (S3PathStyle(config, bucket)) return config.endpoint + "/" + S3UriEncode(bucket, false);
  size_t host = config.endpoint.find("://") + 3;
  return config.endpoint.substr(0, host) + std::string(bucket) + "." + config.endpoint.substr(host);
}

RequestSigning S3Signing(const S3Config& config) {
  RequestSigning s;
  s.aws_sigv4 = "aws:amz:" + config.region + ":s3";
  s.access_key_id = config.access_key_id;
  s.secret_access_key = config.secret_access_key;
  s.session_token = config.session_token;
  return s;
}

Result<RemoteObject> ResolveS3Object(std::string_view path, const S3Config& config) {
  RF_ASSIGN_OR_RETURN(S3Location loc, ParseS3Path(path));
  RemoteObject o;
  o.path = std::string(path);
  o.shown = RedactUrl(path);
  if (loc.key.empty()) return Status::InvalidArgument(o.shown + ": no key (s3://BUCKET/KEY)");
  o.url = S3BucketUrl(config, loc.bucket) + "/" + S3UriEncode(loc.key, true);
  o.signing = S3Signing(config);
  return o;
}

}  // namespace rf
