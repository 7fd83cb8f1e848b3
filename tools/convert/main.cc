// ringfeed-convert: turns IDX, CIFAR, .npy, raw and predecessor files (or a synthetic generator)
// into ringfeed datasets, exports them back, recompresses them with another codec, and inspects
// and verifies them. See `ringfeed-convert --help` and `ringfeed-convert <command> --help`.
//
// Exit codes: 0 success, 1 a data or file error, 2 a command line that cannot be run. Every
// failure is one line on stderr: "ringfeed-convert: <file>: at byte <offset>: <what>". Killed by
// a signal it can catch, it removes its temporary files and dies of that signal
// (io/live_temporaries.h).
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "io/fault_plan.h"
#include "io/live_temporaries.h"
#include "tools/convert/commands.h"

int main(int argc, char** argv) {
  // A conversion killed by SIGTERM, SIGINT, SIGHUP (`timeout`, Ctrl-C, a closed terminal) removes
  // its temporary files on its way out, then dies of the signal.
  rf::RemoveLiveTemporariesOnSignals();
  const std::vector<std::string> args(argv + 1, argv + argc);
  // A malformed RINGFEED_FAULTS is refused here as `ringfeed` refuses it, not ignored: a test that
  // plants a fault and misspells it would otherwise pass for the wrong reason.
  if (const rf::Result<std::optional<rf::FaultPlan>> plan = rf::FaultPlanFromEnv(); !plan.ok()) {
    std::cerr << "ringfeed-convert: " << plan.status().ToString() << "\n";
    return 2;
  }
  try {
    const rf::Status st = rf::convert::RunCommand(args, std::cout);
    if (!st.ok()) {
      std::cerr << "ringfeed-convert: " << st.ToString() << "\n";
      return st.IsUsage() ? 2 : 1;  // Usage: a command line that cannot be run
    }
    return 0;
  } catch (const std::bad_alloc&) {
    std::cerr << "ringfeed-convert: out of memory (--memory-budget bounds the block of samples "
                 "being converted)\n";
    return 1;
  } catch (const std::exception& e) {
    // Nothing below throws on purpose (as ringfeed's main): one line, not an abort.
    std::cerr << "ringfeed-convert: " << e.what() << "\n";
    return 1;
  }
}
