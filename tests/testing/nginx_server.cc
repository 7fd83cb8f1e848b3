#include "tests/testing/nginx_server.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace rf::testing {
namespace {

// A port that was free a moment ago (the kernel's choice for port 0). nginx may lose it to
// another process before it binds; Start then tries another.
uint16_t FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

bool Accepts(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string Config(const std::string& dir, uint16_t port, const NginxOptions& o) {
  std::string c;
  if (::geteuid() == 0) {  // workers would otherwise run as nobody, who cannot read the root
    passwd* pw = ::getpwuid(::geteuid());
    group* gr = ::getgrgid(::getegid());
    c += "user " + std::string(pw ? pw->pw_name : "root") + " " + (gr ? gr->gr_name : "root") +
         ";\n";
  }
  c += "daemon off;\nmaster_process off;\nworker_processes 1;\n";
  c += "pid " + dir + "/nginx.pid;\nerror_log " + dir + "/error.log info;\n";
  c += "events { worker_connections 256; }\n";
  c += "http {\n  default_type application/octet-stream;\n  sendfile on;\n";
  c += "  keepalive_requests 100000;\n";
  c += "  log_format rf '$request_uri $status $connection $connection_requests';\n";
  c += "  access_log " + dir + "/access.log rf;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c += std::string("  ") + t + "_temp_path " + dir + "/" + t + ";\n";
  c += "  server {\n    listen 127.0.0.1:" + std::to_string(port) +
       (o.certificate.empty() ? "" : " ssl") + ";\n";
  if (!o.certificate.empty())
    c += "    ssl_certificate " + o.certificate + ";\n    ssl_certificate_key " + o.key + ";\n";
  c += "    root " + o.root + ";\n" + o.server_directives + "\n  }\n}\n";
  return c;
}

}  // namespace

std::string NginxMissing(bool tls) {
  for (const char* bin : {kNginxBinary, tls ? kOpensslBinary : kNginxBinary})
    if (::access(bin, X_OK) != 0)
      return std::string(bin) +
             " is not installed: apt-get install nginx openssl, or "
             "tools/install-deps.sh";
  return "";
}

std::unique_ptr<NginxServer> NginxServer::Start(const NginxOptions& o, std::string* error) {
  std::unique_ptr<NginxServer> s(new NginxServer());
  s->tls_ = !o.certificate.empty();
  const std::string& dir = s->dir_.path();
  for (int attempt = 0; attempt < 5; ++attempt) {
    s->port_ = FreeLoopbackPort();
    std::string conf = dir + "/nginx.conf";
    std::ofstream(conf) << Config(dir, s->port_, o);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test
      ::execl(kNginxBinary, kNginxBinary, "-p", dir.c_str(), "-e", (dir + "/error.log").c_str(),
              "-c", conf.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    s->pid_ = pid;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      int st = 0;
      if (::waitpid(pid, &st, WNOHANG) == pid) {  // it exited: most likely the port was taken
        s->pid_ = -1;
        break;
      }
      if (Accepts(s->port_)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (s->pid_ > 0) break;  // running but never accepting: give up
  }
  if (error) *error = "nginx did not start; its error log:\n" + ReadText(dir + "/error.log");
  return nullptr;
}

NginxServer::~NginxServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int st = 0;
  ::waitpid(pid_, &st, 0);
}

std::string NginxServer::Url(const std::string& path) const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<std::string> NginxServer::AccessLog() const {
  std::vector<std::string> lines;
  std::ifstream f(dir_.File("access.log"));
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

size_t NginxServer::Requests(const std::string& path, size_t at_least) const {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  size_t n = 0;
  while (true) {
    n = 0;
    for (const std::string& line : AccessLog()) n += line.starts_with(path) ? 1 : 0;
    if (n >= at_least || std::chrono::steady_clock::now() >= until) return n;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool MakeTestCertificate(const std::string& dir, const std::string& name, std::string* error) {
  std::string base = dir + "/" + name;
  // Appended in steps: GCC 12's -Warray-bounds misfires on chains of std::string&& + literal.
  std::string cmd = kOpensslBinary;
  cmd += " req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2";
  cmd += " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout ";
  cmd += base;
  cmd += ".key -out ";
  cmd += base;
  cmd += ".pem";
  std::string out;
  if (RunCommand(cmd, &out) == 0) return true;
  if (error) *error = cmd + ": " + out;
  return false;
}

}  // namespace rf::testing
