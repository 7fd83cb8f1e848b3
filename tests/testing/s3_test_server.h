// S3TestServer: an S3-compatible store that a test starts on loopback and that stops with it —
// s3rver (npm; objects, ranges, ListObjectsV2, S3's errors) behind tests/testing/
// s3_signing_proxy.py, which checks every request's Signature V4 with botocore's signer against
// the credentials the test gave, and refuses a wrong one as S3 does (403 SignatureDoesNotMatch,
// InvalidAccessKeyId, InvalidToken), so that a wrong key or secret is refused for real.
//
// Lifetime: one process tree a server, the proxy (Debian's /usr/bin/python3 with
// python3-botocore) and s3rver its child. The proxy is killed with the test's thread that
// started it (PR_SET_PDEATHSIG), s3rver with the proxy; the destructor closes the proxy's stdin,
// which stops both. Data lives in the server's own temporary directory.
//
// Where things are: s3rver at $RINGFEED_S3RVER, else /opt/ringfeed/s3rver (tools/install-deps.sh
// installs it there); node at $RINGFEED_NODE, else /usr/bin/node.
//
// Thread safety: none; one test (or one suite) owns a server.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/testing/child_process.h"
#include "tests/testing/temp_dir.h"

namespace rf::testing {

struct S3TestCredential {
  std::string key_id, secret;
  std::string session_token;  // required (and checked) where set
};

// Why the S3 tests cannot run here (node, s3rver or botocore missing, and how to install it);
// empty where they can. A test skips with it.
std::string S3ServerMissing();

class S3TestServer {
 public:
  // Starts the store for `region` with `credentials`, waiting (20 s at most) until it listens.
  // Nothing, and `error` filled, where it does not start.
  static std::unique_ptr<S3TestServer> Start(const std::string& region,
                                             const std::vector<S3TestCredential>& credentials,
                                             std::string* error);
  ~S3TestServer();
  S3TestServer(const S3TestServer&) = delete;
  S3TestServer& operator=(const S3TestServer&) = delete;

  // "http://127.0.0.1:PORT": what AWS_ENDPOINT_URL_S3 names.
  std::string endpoint() const;
  // Puts straight into s3rver (no signature needed): false with `error` where it fails.
  bool CreateBucket(const std::string& bucket, std::string* error);
  bool PutObject(const std::string& bucket, const std::string& key,
                 const std::vector<uint8_t>& bytes, std::string* error);

  struct Stats {
    uint64_t requests = 0;  // that reached the proxy
    uint64_t refused = 0;   // its signature check refused
    // The last request: the proxy's verdict ("ok", "SignatureDoesNotMatch", ...), its signed
    // headers (';'-joined), whether it sent x-amz-security-token, its path and query.
    std::string last_verdict, last_signed_headers, last_path;
    bool last_token = false;
  };
  Stats stats();

 private:
  S3TestServer() = default;
  // One command line to the proxy, its one line of answer ("" where the proxy is gone).
  std::string Command(const std::string& line);

  TempDir dir_;
  std::unique_ptr<ChildProcess> proxy_;  // tests/testing/s3_signing_proxy.py, s3rver its child
  uint16_t port_ = 0;
};

}  // namespace rf::testing
