// ringfeed-convert against inputs that are not regular files (issue 40, M2): a FIFO hung every
// subcommand that read one (opened, closed unread, opened again, blocked), `text <(...)` said "no
// document holds an id" and `jsonl <(...)` "read failed: Illegal seek", each leaving a temporary
// file behind; and a conversion killed by a signal left its temporaries. Each input that is not a
// regular file is refused at once naming it, before any output exists; a killed conversion
// removes its temporaries. Every run here is under `timeout`, so a hang fails instead of waiting.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

using Outcome = testing::ProgramOutcome;
Outcome ConvertRun(const std::string& args) { return testing::RunConverter(args, 20); }

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

// A conversion killed by SIGTERM (`timeout`), SIGINT (Ctrl-C) or SIGHUP (its terminal gone) left
// f.rfd.tmp.PID.0: it removes its temporaries, then dies of the signal.
TEST(ConvertFifoInput, AConversionKilledBySignalLeavesNoTemporary) {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    TempDir t;
    const std::string program = Program(), output = t.File("f.rfd");
    // Long enough to be killed mid-run (a few GB of samples through zstd's slowest level), and
    // writing little meanwhile.
    const std::vector<std::string> args = {
        program,   "synthetic", "--samples", "100000000", "--shape", "1,8,8", "--compress",
        "zstd:19", "--shards",  "2",         "-q",        "-o",      output};
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_DFL);  // as a shell would start it
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      ::_exit(127);
    }
    // Until both shards' temporaries exist (they are made before the first sample is written).
    size_t temporaries = 0;
    for (int i = 0; i < 400 && temporaries < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      temporaries = 0;
      for (const std::string& name : testing::FilesIn(t.path()))
        temporaries += name.find(".tmp.") != std::string::npos;
    }
    EXPECT_EQ(temporaries, 2u) << "signal " << sig << ": " << testing::FilesIn(t.path()).size();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(::kill(pid, sig), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig)
        << "signal " << sig << ": status " << status;
    EXPECT_TRUE(testing::FilesIn(t.path()).empty()) << "signal " << sig;
  }
}

}  // namespace
}  // namespace rf
