// ChildProcess: a helper program a test starts (a server, a proxy) and talks to by lines: its
// stdin is a pipe the test writes, its stdout a pipe the test reads line by line. It never
// outlives the test (PR_SET_PDEATHSIG); the destructor closes its stdin (the helpers' signal to
// stop), waits 2 s for it to exit and then kills it.
//
// Thread safety: none; one test owns a child.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace rf::testing {

class ChildProcess {
 public:
  // Runs argv[0] (a path) with `argv`; nothing, and `error` filled, where it cannot.
  static std::unique_ptr<ChildProcess> Start(const std::vector<std::string>& argv,
                                             std::string* error);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next line of its stdout without its '\n', or "" after `timeout_ms` or at its end.
  std::string ReadLine(int timeout_ms);
  // Writes `line` and a '\n' to its stdin; false where it is gone.
  bool WriteLine(const std::string& line);
  // Closes its stdin and waits for it to exit (2 s, then SIGKILL); the lines it wrote since the
  // last ReadLine, in order. Later calls return nothing.
  std::vector<std::string> Stop();

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // read, not yet a whole line
};

}  // namespace rf::testing
