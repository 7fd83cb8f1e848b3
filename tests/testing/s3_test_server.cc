#include "tests/testing/s3_test_server.h"

#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

namespace rf::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string S3rverScript() {
  return EnvOr("RINGFEED_S3RVER", "/opt/ringfeed/s3rver") + "/node_modules/s3rver/bin/s3rver.js";
}
std::string NodeBinary() { return EnvOr("RINGFEED_NODE", "/usr/bin/node"); }

std::string Hex(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace

std::string S3ServerMissing() {
  const std::string install = ": tools/install-deps.sh installs it";
  if (::access(NodeBinary().c_str(), X_OK) != 0)
    return NodeBinary() + " is not installed (apt-get install nodejs)" + install;
  if (::access(S3rverScript().c_str(), R_OK) != 0)
    return S3rverScript() +
           " is not installed (npm install --prefix /opt/ringfeed/s3rver s3rver@3.7.1)" + install;
  std::string out;
  if (RunCommand(std::string(kPython) + " -c 'import botocore.auth'", &out) != 0)
    return "botocore is not installed for /usr/bin/python3 (apt-get install python3-botocore)" +
           install;
  return "";
}

std::unique_ptr<S3TestServer> S3TestServer::Start(const std::string& region,
                                                  const std::vector<S3TestCredential>& credentials,
                                                  std::string* error) {
  std::unique_ptr<S3TestServer> s(new S3TestServer());
  std::vector<std::string> args = {kPython,    RINGFEED_TESTING_SOURCE_DIR "/s3_signing_proxy.py",
                                   "--node",   NodeBinary(),
                                   "--s3rver", S3rverScript(),
                                   "--data",   s->dir_.path(),
                                   "--region", region};
  for (const S3TestCredential& c : credentials) {
    args.push_back("--credential");
    args.push_back(c.key_id + ":" + c.secret + (c.session_token.empty() ? "" : ":") +
                   c.session_token);
  }
  s->proxy_ = ChildProcess::Start(args, error);
  if (s->proxy_ == nullptr) return nullptr;
  std::string first = s->proxy_->ReadLine(20'000);
  if (!first.starts_with("port ")) {
    if (error)
      *error = "the S3 test server did not start: " + (first.empty() ? "no answer" : first);
    return nullptr;
  }
  s->port_ = static_cast<uint16_t>(std::stoi(first.substr(5)));
  return s;
}

// The proxy's stdin closed (ChildProcess's destructor): it stops s3rver and exits.
S3TestServer::~S3TestServer() = default;

std::string S3TestServer::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string S3TestServer::Command(const std::string& line) {
  if (!proxy_->WriteLine(line)) return "";
  return proxy_->ReadLine(20'000);
}

bool S3TestServer::CreateBucket(const std::string& bucket, std::string* error) {
  std::string r = Command("bucket " + bucket);
  if (r == "ok") return true;
  if (error) *error = "creating bucket " + bucket + ": " + r;
  return false;
}

bool S3TestServer::PutObject(const std::string& bucket, const std::string& key,
                             const std::vector<uint8_t>& bytes, std::string* error) {
  std::string file = dir_.File("put.bin");
  WriteAll(file, bytes);
  std::string r = Command("put " + bucket + " " + Hex(key) + " " + file);
  if (r == "ok") return true;
  if (error) *error = "putting " + key + ": " + r;
  return false;
}

S3TestServer::Stats S3TestServer::stats() {
  Stats s;
  std::string r = Command("stats");
  if (!r.starts_with("ok ")) return s;
  nlohmann::json j = nlohmann::json::parse(r.substr(3), nullptr, false);
  if (j.is_discarded()) return s;
  s.requests = j.value("requests", 0u);
  s.refused = j.value("refused", 0u);
  const nlohmann::json& last = j["last"];
  if (last.is_object()) {
    s.last_verdict = last.value("verdict", "");
    s.last_path = last.value("path", "");
    s.last_token = last.value("token", false);
    if (last.contains("signed"))
      for (const auto& h : last["signed"]) {
        if (!s.last_signed_headers.empty()) s.last_signed_headers += ';';
        s.last_signed_headers += h.get<std::string>();  // GCC 12 misfires on "x" + string&&
      }
  }
  return s;
}

}  // namespace rf::testing
