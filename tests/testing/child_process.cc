#include "tests/testing/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rf::testing {

std::unique_ptr<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv,
                                                  std::string* error) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    if (error) *error = "pipe2 failed";
    return nullptr;
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    if (error) *error = "pipe2 failed";
    return nullptr;
  }
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  if (pid < 0) {
    ::close(in[1]);
    ::close(out[0]);
    if (error) *error = "fork failed";
    return nullptr;
  }
  std::unique_ptr<ChildProcess> c(new ChildProcess());
  c->pid_ = pid;
  c->to_child_ = in[1];
  c->from_child_ = out[0];
  return c;
}

ChildProcess::~ChildProcess() { Stop(); }

std::string ChildProcess::ReadLine(int timeout_ms) {
  while (true) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (from_child_ < 0) return "";
    pollfd p{from_child_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return "";
    char buf[4096];
    const ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n <= 0) return "";
    pending_.append(buf, static_cast<size_t>(n));
  }
}

bool ChildProcess::WriteLine(const std::string& line) {
  const std::string l = line + "\n";
  return to_child_ >= 0 && ::write(to_child_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
}

std::vector<std::string> ChildProcess::Stop() {
  if (to_child_ >= 0) ::close(to_child_);
  to_child_ = -1;
  if (pid_ > 0) {
    for (int i = 0; i < 200; ++i) {  // 2 s, then kill
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      ::usleep(10'000);
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
  }
  std::vector<std::string> lines;
  if (from_child_ >= 0) {  // the child is gone: the pipe holds all it wrote
    char buf[4096];
    for (ssize_t n; (n = ::read(from_child_, buf, sizeof buf)) > 0;)
      pending_.append(buf, static_cast<size_t>(n));
    size_t at = 0;
    for (size_t nl; (nl = pending_.find('\n', at)) != std::string::npos; at = nl + 1)
      lines.push_back(pending_.substr(at, nl - at));
    if (at < pending_.size()) lines.push_back(pending_.substr(at));
    pending_.clear();
    ::close(from_child_);
    from_child_ = -1;
  }
  return lines;
}

}  // namespace rf::testing
