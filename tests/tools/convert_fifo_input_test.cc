// ringfeed-convert against inputs that are not regular files (issue 40, M2): a FIFO hung every
// subcommand that read one (opened, closed unread, opened again, blocked), `text <(...)` said "no
// document holds an id" and `jsonl <(...)` "read failed: Illegal seek", each leaving a temporary
// file behind. Each input that is not a regular file is refused at once naming it, before any
// output exists. Every run here is under `timeout`, so a hang fails instead of waiting.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

struct Outcome {
  int rc;
  std::string out;
};
Outcome ConvertRun(const std::string& args) {
  Outcome o;
  o.rc = testing::RunCommand("timeout 20 " + Program() + " " + args, &o.out);
  return o;
}

const char kWhy[] =
    ", not a regular file (ringfeed-convert reads its inputs at offsets, some twice: write the "
    "data to a file first)\n";

std::string Refusal(const std::string& path, const std::string& kind = "a FIFO") {
  return "ringfeed-convert: " + path + ": " + kind + kWhy;
}

void MakeFifo(const std::string& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << path; }

TEST(ConvertFifoInput, EveryTokenSubcommandRefusesAFifoAtOnceNamingIt) {
  TempDir t;
  const std::string pin = t.File("pin");
  MakeFifo(pin);
  const std::string out = " -q -o " + t.File("f.rfd");
  Outcome o = ConvertRun("text " + pin + " --tokenizer bytes" + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(pin));
  o = ConvertRun("text " + pin + " --tokenizer bytes --split lines" + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(pin));
  o = ConvertRun("jsonl " + pin + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(pin));
  MakeFifo(t.File("m.idx"));
  o = ConvertRun("megatron " + t.File("m") + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(t.File("m.idx")));
  o = ConvertRun("npy-docs " + pin + " --offsets " + pin + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(pin));
  // A FIFO named like a document of the directory.
  std::filesystem::create_directory(t.File("docs"));
  MakeFifo(t.File("docs/a.npy"));
  o = ConvertRun("npy-docs " + t.File("docs") + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(t.File("docs/a.npy")));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"docs", "m.idx", "pin"}));
}

TEST(ConvertFifoInput, EverySampleSubcommandRefusesAFifoOrADeviceAtOnce) {
  TempDir t;
  const std::string pin = t.File("pin");
  MakeFifo(pin);
  testing::WriteAll(t.File("f.bin"), std::vector<uint8_t>(64, 0));
  const std::string file = t.File("f.bin");
  const std::string out = " -q -o " + t.File("f.rfd");
  for (const std::string& args :
       {"idx --images " + pin, "idx --images " + file + " --labels " + pin, "cifar " + pin,
        "npy --images " + pin, "npy --images " + file + " --labels " + pin,
        "raw --records " + pin + " --shape 7",
        "raw --records " + file + " --shape 7 --label file:" + pin,
        "predecessor --images " + pin + " --labels " + file + " --shape 1,2,2",
        "predecessor --images " + file + " --labels " + pin + " --shape 1,2,2"}) {
    const Outcome o = ConvertRun(args + out);
    EXPECT_EQ(o.rc, 1) << args;
    EXPECT_EQ(o.out, Refusal(pin)) << args;
  }
  // A character device, which reads forever (/dev/zero), is refused as a FIFO is.
  Outcome o = ConvertRun("raw --records /dev/zero --shape 7" + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal("/dev/zero", "a character device"));
  o = ConvertRun("inspect " + pin);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(pin));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"f.bin", "pin"}));
}

TEST(ConvertFifoInput, ImagesRefuseAFifoAsAShardOrAsAnImageOfTheTree) {
  TempDir t;
  MakeFifo(t.File("s.tar"));
  const std::string out = " -q -o " + t.File("f.rfd");
  Outcome o = ConvertRun("images " + t.File("s.tar") + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(t.File("s.tar")));
  std::filesystem::create_directories(t.File("tree/a"));
  MakeFifo(t.File("tree/a/x.jpg"));
  o = ConvertRun("images " + t.File("tree") + out);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, Refusal(t.File("tree/a/x.jpg")));
  EXPECT_EQ(testing::FilesIn(t.path()), (std::vector<std::string>{"s.tar", "tree"}));
}

// `text <(printf hello)` said "no document holds an id", `jsonl <(...)` "read failed: Illegal
// seek": a pipe is refused as a FIFO is, whatever is written to it.
TEST(ConvertFifoInput, AProcessSubstitutionIsRefusedNamingIt) {
  TempDir t;
  const std::string out = " -q -o " + t.File("f.rfd");
  for (const char* command : {"text", "jsonl"}) {
    std::string output;
    const std::string tokenizer = std::string(command) == "text" ? " --tokenizer bytes" : "";
    const int rc = testing::RunCommand("bash -c 'timeout 20 " + Program() + " " + command +
                                           " <(printf \"[1]\\n\")" + tokenizer + out + "'",
                                       &output);
    EXPECT_EQ(rc, 1) << command;
    EXPECT_NE(output.find(": a FIFO, not a regular file (ringfeed-convert reads its inputs"),
              std::string::npos)
        << output;
    EXPECT_EQ(output.find("/dev/fd/"), std::string("ringfeed-convert: ").size()) << output;
  }
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

}  // namespace
}  // namespace rf
