// NginxServer: a real nginx (Debian's /usr/sbin/nginx) that a test starts on loopback and stops
// in its destructor. It writes its own configuration into a temporary directory: listen on
// 127.0.0.1 at a free port, serve `root`, no daemon and no master process (one process, killed
// with its test: PR_SET_PDEATHSIG), pid file, logs and temporary files in that directory, run as
// the current user. The access log has one line a request: "<uri> <status> <connection>
// <requests on the connection>".
//
// MakeTestCertificate makes a self-signed certificate for 127.0.0.1 with the openssl command
// line; the test passes it to nginx (tls) and to the client as its CA bundle.
//
// Thread safety: none; one test owns a server.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace rf::testing {

inline constexpr const char* kNginxBinary = "/usr/sbin/nginx";
inline constexpr const char* kOpensslBinary = "/usr/bin/openssl";

struct NginxOptions {
  std::string root;  // the directory served
  // HTTPS with this certificate and key (PEM files); empty: plain HTTP.
  std::string certificate, key;
  // Further directives inside the server block (locations that answer 404, 403, 500, ...).
  std::string server_directives;
};

// Why a test of nginx (and, with `tls`, of openssl too) cannot run here: which is not installed
// and how to install it; empty where both are. A test skips with it.
std::string NginxMissing(bool tls = false);

class NginxServer {
 public:
  // Starts nginx and waits (10 s at most) until it accepts connections. Nothing and `error`
  // filled (with nginx's error log) where it does not start.
  static std::unique_ptr<NginxServer> Start(const NginxOptions& o, std::string* error);
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port><path>" (https with a certificate); path starts with '/'.
  std::string Url(const std::string& path) const;
  // The access log's lines so far.
  std::vector<std::string> AccessLog() const;
  // The requests logged whose URI starts with `path`, waiting up to 2 s for `at_least` of them
  // (nginx logs a request once it has sent the answer, a moment after the client has it).
  size_t Requests(const std::string& path, size_t at_least = 1) const;

 private:
  NginxServer() = default;
  TempDir dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  bool tls_ = false;
};

// Writes <dir>/<name>.pem and <dir>/<name>.key: a self-signed certificate for the IP address
// 127.0.0.1 (its subjectAltName). False, with openssl's output in `error`, where it fails.
bool MakeTestCertificate(const std::string& dir, const std::string& name, std::string* error);

}  // namespace rf::testing
