// ringfeed: trains neural networks on datasets larger than GPU memory and host RAM by streaming
// chunked dataset files from disk to the GPU. This file only dispatches to a subcommand.
#include <cstdio>
#include <cstring>

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
               "Datasets are made with ringfeed-convert.\n");
}

}  // namespace

int main(int argc, char** argv) {
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
  if (std::strcmp(cmd, "read") == 0) return rf::RunReadCommand(argc - 1, argv + 1);
  if (std::strcmp(cmd, "train") == 0) return rf::RunTrainCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "ringfeed: unknown command '%s'\n", cmd);
  Usage(stderr);
  return 2;
}
