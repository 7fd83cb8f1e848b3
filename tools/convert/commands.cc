#include "tools/convert/commands.h"

#include <functional>

#include "options/option_spec.h"

namespace rf::convert {
namespace {

struct Command {
  const char* name;
  const char* summary;
  std::function<Status(const std::vector<std::string>&, std::ostream&)> run;
};

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"idx", "IDX (MNIST family) images and labels, plain or gzipped", RunIdxCommand},
      {"cifar", "CIFAR-10 (or --cifar100) binary batches", RunCifarCommand},
      {"npy", "NumPy .npy images and labels", RunNpyCommand},
      {"raw", "fixed-size binary records", RunRawCommand},
      {"predecessor", "the predecessor's feature-major float32 images + int32 labels",
       RunPredecessorCommand},
      {"synthetic", "generate a learnable synthetic dataset", RunSyntheticCommand},
      {"megatron", "Megatron-LM's indexed dataset (PREFIX.bin + PREFIX.idx) as token records",
       RunMegatronCommand},
      {"npy-docs", ".npy token documents (a directory, or ids with --offsets)", RunNpyDocsCommand},
      {"jsonl", "JSON lines of token ids", RunJsonlCommand},
      {"text", "text files through the byte tokenizer (--tokenizer bytes)", RunTextCommand},
      {"images", "JPEG images: an ImageFolder tree or WebDataset .tar shards", RunImagesCommand},
      {"export", "write a dataset back as raw, idx, cifar, npy, predecessor or megatron files",
       RunExportCommand},
      {"recompress", "write a dataset again with another codec, chunk for chunk",
       RunRecompressCommand},
      {"inspect", "print a dataset's header (and --verify its chunks)", RunInspectCommand},
      {"verify", "read every chunk, check its checksum and decompress it", RunVerifyCommand},
  };
  return kCommands;
}

void PrintUsage(std::ostream& out) {
  out << "Usage: ringfeed-convert <command> [options]   (ringfeed-convert <command> --help)\n"
         "Commands:\n";
  for (const Command& c : Commands()) {
    out << "  " << c.name << std::string(13 - std::string(c.name).size(), ' ') << c.summary << "\n";
  }
  out << "Inputs are regular files: a FIFO, a pipe or a device is refused at once (each input is\n"
         "read at offsets, some twice).\n";
}

}  // namespace

Status RunCommand(const std::vector<std::string>& args, std::ostream& out) {
  if (args.empty()) return Status::Usage("no command given (try 'ringfeed-convert --help')");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintUsage(out);
    return Status::Ok();
  }
  for (const Command& c : Commands()) {
    if (args[0] == c.name)
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()), out);
  }
  return Status::Usage("unknown command " + QuoteUserText(args[0]) +
                       " (try 'ringfeed-convert --help')");
}

}  // namespace rf::convert
