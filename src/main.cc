// ringfeed: trains neural networks on datasets larger than GPU memory and host RAM by streaming
// chunked dataset files from disk to the GPU. This file dispatches to a subcommand and is the one
// place that turns how a command ended into an exit code (src/commands.h): 0 success, 1 a data,
// file, I/O or run-time error, 2 a usage error; every error is one line on stderr.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "src/commands.h"

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: ringfeed <command> [options]\n"
               "\n"
               "commands:\n"
               "  read DATASET   drain a dataset through the io_uring reader and report GB/s\n"
               "  train          train the model on a dataset (--data TRAIN.rfd)\n"
               "\n"
               "'ringfeed <command> --help' lists a command's options.\n"
               "Datasets are made with ringfeed-convert.\n"
               "Exit status: 0 success, 1 a data, file or run-time error, 2 a usage error.\n");
}

int ExitCode(const rf::CommandStatus& r) {
  if (r.status.ok()) return 0;
  std::fprintf(stderr, "%s: %s\n", r.who, r.status.ToString().c_str());
  return r.status.IsUsage() ? 2 : 1;
}

int Dispatch(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const char* cmd = argv[1];
  if (std::strcmp(cmd, "--help") == 0 || std::strcmp(cmd, "-h") == 0 ||
      std::strcmp(cmd, "help") == 0) {
    Usage(stdout);
    return 0;
  }
  if (std::strcmp(cmd, "read") == 0) return ExitCode(rf::RunReadCommand(argc - 1, argv + 1));
  if (std::strcmp(cmd, "train") == 0) return ExitCode(rf::RunTrainCommand(argc - 1, argv + 1));
  std::fprintf(stderr, "ringfeed: unknown command '%s'\n", cmd);
  Usage(stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing below throws on purpose; an exception that escapes anyway (out of memory, a library's
  // own) ends the run with one line, not an abort.
  try {
    return Dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ringfeed: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringfeed: %s\n", e.what());
  }
  return 1;
}
