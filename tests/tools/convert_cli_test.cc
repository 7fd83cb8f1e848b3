// The built ringfeed-convert binary: exit codes and the one-line error on stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>

#include "tests/testing/jpeg_testing.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::RunCommand;
using testing::TempDir;

std::string Program() { return testing::ProgramPath("ringfeed-convert"); }

int CountLines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

TEST(ConvertCli, MissingInputExitsOneWithOneLineNamingTheFile) {
  TempDir t;
  std::string out;
  const int rc =
      RunCommand(Program() + " idx --images " + t.File("nope.gz") + " -o " + t.File("d.rfd"), &out);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "ringfeed-convert: " + t.File("nope.gz") +
                     ": cannot open: No such file or directory (errno 2)\n");
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

TEST(ConvertCli, UnknownOptionExitsTwoWithAHint) {
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " cifar --bogus x -o y.rfd", &out), 2);
  EXPECT_EQ(out, "ringfeed-convert: cifar: unknown option '--bogus' (see --help)\n");
  EXPECT_EQ(RunCommand(Program() + " frobnicate", &out), 2);
  EXPECT_EQ(out,
            "ringfeed-convert: unknown command 'frobnicate' (try 'ringfeed-convert --help')\n");
  EXPECT_EQ(RunCommand(Program(), &out), 2);
  EXPECT_EQ(out, "ringfeed-convert: no command given (try 'ringfeed-convert --help')\n");
}

// Every subcommand's options are the table's: an unknown one, a bad value, a missing one and one
// given twice each exit 2 with one line naming the subcommand and the option, and write nothing.
TEST(ConvertCli, EverySubcommandRefusesAnUnknownOptionABadValueAndAMissingOneNamingIt) {
  TempDir t;
  const std::string o = " -o " + t.File("d.rfd");
  struct Case {
    std::string args, line;
  };
  for (const Case& c : {
           Case{"idx --images i" + o + " --imagez j",
                "idx: unknown option '--imagez' (see --help)"},
           Case{"cifar a.bin" + o + " -x", "cifar: unknown option '-x' (see --help)"},
           Case{"npy --images x.npy" + o + " --layout nwhc",
                "npy: --layout must be nchw or nhwc, got \"nwhc\""},
           Case{"raw --records r --shape 3,0" + o,
                "raw: --shape must be 1 to 4 comma-separated whole numbers from 1 to 4294967295, "
                "got '3,0'"},
           Case{"raw --records r --shape 4 --label middle" + o,
                "raw: --label must be first, last, none or file:PATH, got 'middle'"},
           Case{"predecessor --images i" + o, "predecessor: no --labels given (see --help)"},
           Case{"synthetic --samples 4 --order shuffled" + o,
                "synthetic: --order must be random or sorted, got \"shuffled\""},
           Case{"megatron" + o,
                "megatron: no --prefix given (a bare PREFIX or --prefix PREFIX; "
                "see --help)"},
           Case{"npy-docs a b" + o,
                "npy-docs: --input given twice (the second time as a bare 'b')"},
           Case{"jsonl a.jsonl" + o + " --dtype float32",
                "jsonl: --dtype must be uint16, int32 or int64, got \"float32\""},
           Case{"text a.txt" + o, "text: no --tokenizer given (see --help)"},
           Case{"text a.txt --tokenizer bytes --split words" + o,
                "text: --split must be files or lines, got \"words\""},
           Case{"images dir" + o + " --max-image-side 0",
                "images: --max-image-side must be a whole number from 1 to 65535, got 0"},
           Case{"export d.rfd --format tar -o p",
                "export: --format must be raw, idx, cifar, npy, predecessor or megatron, got "
                "\"tar\""},
           Case{"export d.rfd --format raw", "export: no --output given (see --help)"},
           Case{"recompress d.rfd" + o + " --compress-threads 2000",
                "recompress: --compress-threads must be a whole number from 0 to 1024, got 2000"},
           Case{"inspect",
                "inspect: no --dataset given (a bare DATASET or --dataset DATASET; "
                "see --help)"},
           Case{"verify d.rfd --verify", "verify: unknown option '--verify' (see --help)"},
       }) {
    std::string out;
    EXPECT_EQ(RunCommand(Program() + " " + c.args, &out), 2) << c.args;
    EXPECT_EQ(out, "ringfeed-convert: " + c.line + "\n") << c.args;
  }
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
}

// Issue 23, W4: --scale nan, inf, 0 or a negative wrote an all-zero (or NaN) dataset and
// exited 0.
TEST(ConvertCli, ScaleThatIsNotAFinitePositiveNumberIsRefusedWritingNothing) {
  TempDir t;
  const auto x = testing::NpyBytes("<f4", {4, 2, 2}, std::vector<float>(16, 0.5f).data(), 64);
  testing::WriteAll(t.File("x.npy"), x);
  // What the option's rule refuses as text is quoted; a number it reads, named as read.
  for (const auto& [scale, got] :
       {std::pair{"nan", "'nan'"}, std::pair{"inf", "'inf'"}, std::pair{"-inf", "'-inf'"},
        std::pair{"0", "0"}, std::pair{"-2", "-2"}, std::pair{"0x10", "'0x10'"},
        std::pair{"1e99",
                  "1e+99: 1e+99 is past the largest float, 3.4028235e+38, which the "
                  "option is held in"}}) {
    std::string out;
    EXPECT_EQ(RunCommand(Program() + " npy --images " + t.File("x.npy") + " --dtype uint8 -q -o " +
                             t.File("d.rfd") + " --scale=" + scale,
                         &out),
              2)
        << scale;
    EXPECT_EQ(out, "ringfeed-convert: npy: --scale must be a finite number > 0, got " +
                       std::string(got) + "\n");
  }
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"x.npy"});
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " npy --images " + t.File("x.npy") + " --dtype uint8 -q -o " +
                           t.File("d.rfd") + " --scale 2.5e2",
                       &out),
            0)
      << out;
}

// Issue 23, accepted item 2: ringfeed-convert ignored a malformed RINGFEED_FAULTS, which ringfeed
// refuses, so a test planting a misspelled fault passed for the wrong reason.
TEST(ConvertCli, MalformedFaultPlanIsAUsageErrorAsInRingfeed) {
  TempDir t;
  std::string out;
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='write:enospc@pth=d.rfd' " + Program() +
                           " synthetic --samples 4 --shape 1,4,4 -q -o " + t.File("d.rfd"),
                       &out),
            2);
  EXPECT_EQ(out.rfind("ringfeed-convert: RINGFEED_FAULTS", 0), 0u) << out;
  EXPECT_TRUE(testing::FilesIn(t.path()).empty());
  // A well-formed plan is followed: the write fails as planted.
  EXPECT_EQ(RunCommand("RINGFEED_FAULTS='write:enospc@path=d.rfd' " + Program() +
                           " synthetic --samples 4 --shape 1,4,4 -q -o " + t.File("d.rfd"),
                       &out),
            1)
      << out;
}

// The help entry of `option` in a subcommand's --help (its line and the wrapped lines after it,
// joined), or "" where it lists none.
std::string HelpEntry(const std::string& help, const std::string& option) {
  std::string entry;
  size_t at = 0;
  while (at < help.size()) {
    const size_t end = std::min(help.find('\n', at), help.size());
    const std::string line = help.substr(at, end - at);
    at = end + 1;
    if (!entry.empty() && line.rfind("    ", 0) == 0) {
      entry += ' ';
      entry += line.substr(line.find_first_not_of(' '));
    } else if (!entry.empty()) {
      break;
    } else if (line.rfind("  " + option + " ", 0) == 0 || line == "  " + option ||
               line.find(", " + option + " ") == 4) {
      entry = line;
    }
  }
  return entry;
}

TEST(ConvertCli, EverySubcommandHelpListsItsOptionsWithDefaults) {
  for (const char* cmd : {"idx", "cifar", "npy", "raw", "predecessor", "synthetic"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Program() + " " + cmd + " --help", &out), 0) << cmd;
    EXPECT_NE(HelpEntry(out, "--chunk-size").find("default 4MiB)"), std::string::npos)
        << cmd << "\n"
        << out;
    EXPECT_NE(HelpEntry(out, "--test-split").find("default 0)"), std::string::npos) << cmd;
    EXPECT_NE(HelpEntry(out, "--compress").find("default none)"), std::string::npos) << cmd;
    EXPECT_NE(HelpEntry(out, "--memory-budget").find("default 256MiB)"), std::string::npos) << cmd;
  }
  for (const char* cmd : {"export", "recompress", "inspect", "verify"}) {
    std::string out;
    EXPECT_EQ(RunCommand(Program() + " " + cmd + " --help", &out), 0) << cmd;
    EXPECT_NE(out.find("Usage: ringfeed-convert " + std::string(cmd)), std::string::npos);
  }
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " --help", &out), 0);
  EXPECT_NE(out.find("predecessor"), std::string::npos);
  EXPECT_NE(out.find("recompress"), std::string::npos);
  EXPECT_EQ(RunCommand(Program() + " recompress --help", &out), 0);
  for (const auto& [option, note] :
       {std::pair{"--compress", "default none)"}, std::pair{"--compress-threads", "default 0)"},
        std::pair{"--format-version", "default 0)"}, std::pair{"--output", "(required)"}}) {
    EXPECT_NE(HelpEntry(out, option).find(note), std::string::npos) << option << "\n" << out;
  }
  EXPECT_NE(out.find("  -o, --output OUT "), std::string::npos) << out;
  EXPECT_NE(out.find("  -q, --quiet "), std::string::npos) << out;
  // Per subcommand, the default of its own meaning of a name.
  EXPECT_EQ(RunCommand(Program() + " jsonl --help", &out), 0);
  EXPECT_NE(HelpEntry(out, "--memory-budget").find("default 16MiB)"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Program() + " synthetic --help", &out), 0);
  EXPECT_NE(HelpEntry(out, "--classes").find("default 10)"), std::string::npos) << out;
  EXPECT_NE(HelpEntry(out, "--dtype").find("default uint8)"), std::string::npos) << out;
}

TEST(ConvertCli, BadCifarExitsOneNamingTheOffsetAndLeavesNothing) {
  TempDir t;
  testing::WriteAll(t.File("c.bin"), std::vector<uint8_t>(3073 + 7, 1));
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " cifar " + t.File("c.bin") + " -o " + t.File("c.rfd"), &out),
            1);
  EXPECT_EQ(CountLines(out), 1) << out;
  EXPECT_EQ(out.rfind("ringfeed-convert: " + t.File("c.bin") + ": at byte 3073: ", 0), 0u) << out;
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"c.bin"});
}

TEST(ConvertCli, SyntheticThenInspectAndVerifyThenAFlippedBitFails) {
  TempDir t;
  std::string out;
  ASSERT_EQ(RunCommand(Program() + " synthetic --samples 2000 --shape 1,16,16 --classes 4 " +
                           "--chunk-size 64KiB --threads 2 -o " + t.File("s.rfd"),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote " + t.File("s.rfd") + ": 2000 samples"), std::string::npos) << out;
  EXPECT_NE(out.find("MB/s"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Program() + " inspect " + t.File("s.rfd"), &out), 0);
  EXPECT_NE(out.find("samples:      2000"), std::string::npos) << out;
  EXPECT_NE(out.find("shape:        1 x 16 x 16"), std::string::npos) << out;
  EXPECT_NE(out.find("classes:      4"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(Program() + " verify " + t.File("s.rfd"), &out), 0);
  EXPECT_EQ(out, "OK: 8 chunks, 2000 samples verified\n");
  testing::FlipBit(t.File("s.rfd"), 4096 + 65536 + 10);  // inside chunk 1
  EXPECT_EQ(RunCommand(Program() + " verify " + t.File("s.rfd"), &out), 1);
  EXPECT_EQ(CountLines(out), 1) << out;
  EXPECT_NE(out.find("ringfeed-convert: " + t.File("s.rfd") + ": chunk 1"), std::string::npos)
      << out;
}

// Defect: "-o" naming an input printed "wrote" and replaced the input with a dataset (the rename
// that commits an output replaces whatever has that name). Every way of naming the input is
// refused before anything is written, and the input keeps its bytes.
TEST(ConvertCli, AnOutputOntoAnInputIsRefusedAndTheInputKept) {
  TempDir t;
  const std::vector<uint8_t> records = testing::PositionalSamples(50, 17);
  testing::WriteAll(t.File("in.records"), records);
  testing::WriteAll(t.File("plain.records"), testing::PositionalSamples(50, 16));
  testing::WriteAll(t.File("labels.bin"), testing::PositionalLabels(50));
  ASSERT_EQ(::symlink(t.File("in.records").c_str(), t.File("link.rfd").c_str()), 0);
  ASSERT_EQ(::link(t.File("in.records").c_str(), t.File("hard.rfd").c_str()), 0);
  const std::string raw = Program() + " raw --records " + t.File("in.records") +
                          " --shape 1,4,4 --label first --classes 256 -o ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {t.File("in.records"), t.File("in.records")},        // the same name
      {t.path() + "/./in.records", t.File("in.records")},  // another spelling
      {t.File("link.rfd"), t.File("in.records")},          // a symlink to it
      {t.File("hard.rfd"), t.File("in.records")},          // a hard link to it
  };
  for (const auto& [output, input] : cases) {
    std::string out;
    EXPECT_EQ(RunCommand(raw + output, &out), 2) << output;
    EXPECT_EQ(CountLines(out), 1) << out;
    EXPECT_NE(out.find("output " + output + " is the input " + input), std::string::npos) << out;
    EXPECT_NE(out.find("refusing to replace an input"), std::string::npos) << out;
  }
  // A labels file is an input too, and so is the test split's output name.
  std::string out;
  EXPECT_EQ(RunCommand(Program() + " raw --records " + t.File("plain.records") +
                           " --shape 1,4,4 --label file:" + t.File("labels.bin") + " -o " +
                           t.File("labels.bin"),
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("output " + t.File("labels.bin") + " is the input"), std::string::npos) << out;
  ASSERT_EQ(::rename(t.File("labels.bin").c_str(), t.File("d.test.rfd").c_str()), 0);
  EXPECT_EQ(RunCommand(Program() + " raw --records " + t.File("plain.records") +
                           " --shape 1,4,4 --label file:" + t.File("d.test.rfd") +
                           " --test-split 0.5 -o " + t.File("d.rfd"),
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("output " + t.File("d.test.rfd") + " is the input"), std::string::npos) << out;
  EXPECT_EQ(testing::ReadAll(t.File("in.records")), records);
  EXPECT_EQ(testing::ReadAll(t.File("d.test.rfd")), testing::PositionalLabels(50));
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"d.test.rfd", "hard.rfd", "in.records", "link.rfd",
                                      "plain.records"}));
}

TEST(ConvertCli, IdxOutputOntoItsImagesIsRefused) {
  TempDir t;
  const std::vector<uint8_t> images =
      testing::IdxBytes(0x08, {3, 2, 2}, std::vector<uint8_t>(12, 7));
  testing::WriteAll(t.File("imgs"), images);
  std::string out;
  EXPECT_EQ(
      RunCommand(Program() + " idx --images " + t.File("imgs") + " -o " + t.File("imgs"), &out), 2);
  EXPECT_NE(out.find("is the input"), std::string::npos) << out;
  EXPECT_EQ(testing::ReadAll(t.File("imgs")), images);
}

TEST(ConvertCli, ExportOntoItsOwnDatasetIsRefused) {
  TempDir t;
  std::string out;
  ASSERT_EQ(RunCommand(Program() + " synthetic --samples 64 --shape 1,4,4 --classes 4 " +
                           "--threads 1 -q -o " + t.File("s.bin"),
                       &out),
            0)
      << out;
  const std::vector<uint8_t> dataset = testing::ReadAll(t.File("s.bin"));
  // cifar export writes PREFIX.bin: with the prefix "s" that is the dataset itself.
  EXPECT_EQ(
      RunCommand(Program() + " export " + t.File("s.bin") + " --format cifar -o " + t.File("s"),
                 &out),
      2);
  EXPECT_NE(out.find("output " + t.File("s.bin") + " is the input"), std::string::npos) << out;
  EXPECT_EQ(testing::ReadAll(t.File("s.bin")), dataset);
}

// Issue 23, D4: `npy --images d-00000-of-00002.rfd --labels d-00001-of-00002.rfd -o d.rfd`
// removed both inputs, and a text file named like a shard went too. Only older ringfeed datasets
// of the name are removed, each named. Issue 40, W5: a file of the name that stays (an input, a
// file that is not a dataset) left a dataset nothing could open by its name; refused at once.
TEST(ConvertCli, InputsAndOtherFilesNamedLikeShardsOfTheOutputAreKept) {
  TempDir t;
  std::vector<uint8_t> pixels(6 * 4 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i);
  const std::vector<uint8_t> labels = {0, 1, 2, 0, 1, 2};
  const std::vector<uint8_t> images_npy = testing::NpyBytes("|u1", {6, 4, 4}, pixels.data(), 96);
  const std::vector<uint8_t> labels_npy = testing::NpyBytes("|u1", {6}, labels.data(), 6);
  testing::WriteAll(t.File("d-00000-of-00002.rfd"), images_npy);
  testing::WriteAll(t.File("d-00001-of-00002.rfd"), labels_npy);
  testing::WriteAll(t.File("d-00003-of-00007.rfd"), "a note", 6);
  const std::vector<std::string> before = testing::FilesIn(t.path());
  std::string out;
  EXPECT_EQ(
      RunCommand(Program() + " synthetic --samples 64 --shape 1,4,4 --classes 4 --threads 1 " +
                     "--shards 3 -q -o " + t.File("d.rfd"),
                 &out),
      2)
      << out;
  EXPECT_NE(out.find(t.File("d-00000-of-00002.rfd") +
                     " has the name of the dataset being written and would stay (it is not a "
                     "ringfeed dataset)"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCommand(Program() + " npy --images " + t.File("d-00000-of-00002.rfd") +
                           " --labels " + t.File("d-00001-of-00002.rfd") + " -o " + t.File("d.rfd"),
                       &out),
            2)
      << out;
  EXPECT_NE(out.find(t.File("d-00000-of-00002.rfd") +
                     " has the name of the dataset being written and would stay (it is an input)"),
            std::string::npos)
      << out;
  EXPECT_EQ(testing::FilesIn(t.path()), before);
  // An older dataset of the output's name, in 3 shards: the one thing the new dataset replaces.
  ASSERT_EQ(
      RunCommand(Program() + " synthetic --samples 64 --shape 1,4,4 --classes 4 --threads 1 " +
                     "--shards 3 -q -o " + t.File("e.rfd"),
                 &out),
      0)
      << out;
  ASSERT_EQ(RunCommand(Program() + " npy --images " + t.File("d-00000-of-00002.rfd") +
                           " --labels " + t.File("d-00001-of-00002.rfd") + " -o " + t.File("e.rfd"),
                       &out),
            0)
      << out;
  for (int s = 0; s < 3; ++s) {
    const std::string old = t.File("e-0000" + std::to_string(s) + "-of-00003.rfd");
    EXPECT_NE(out.find("removed " + old + " (an older dataset of the same name)"),
              std::string::npos)
        << out;
  }
  EXPECT_EQ(testing::FilesIn(t.path()),
            (std::vector<std::string>{"d-00000-of-00002.rfd", "d-00001-of-00002.rfd",
                                      "d-00003-of-00007.rfd", "e.rfd"}));
  EXPECT_EQ(testing::ReadAll(t.File("d-00000-of-00002.rfd")), images_npy);
  EXPECT_EQ(testing::ReadAll(t.File("d-00001-of-00002.rfd")), labels_npy);
  // A device as -o is written in place (as root, where one can be made) and stays a device.
  if (::mknod(t.File("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    EXPECT_EQ(RunCommand(Program() + " synthetic --samples 64 --shape 1,4,4 --classes 4 " +
                             "--threads 1 -q -o " + t.File("null"),
                         &out),
              0)
        << out;
    struct stat st;
    ASSERT_EQ(::lstat(t.File("null").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
}

// ringfeed-convert images --max-side / --quality through the binary: a value out of range exits
// 2 with one line naming the option and its range; a re-encode exits 0 and says what it did; an
// image no decoder takes exits 1 naming the file. Nothing is written but by the good run.
TEST(ConvertCli, ImagesReencodeOptionsOutOfRangeExitTwoAndAReencodeSaysWhatItDid) {
  TempDir t;
  ::mkdir(t.File("tree").c_str(), 0755);
  ::mkdir(t.File("tree/c").c_str(), 0755);
  testing::WriteAll(t.File("tree/c/big.jpg"), testing::MakeJpeg(300, 400));
  testing::WriteAll(t.File("tree/c/small.jpg"), testing::MakeJpeg(30, 40));
  const std::string images = Program() + " images " + t.File("tree") + " -o " + t.File("d.rfd");
  struct Case {
    std::string flags, line;
  };
  for (const Case& c :
       {Case{"--max-side 65536",
             "images: --max-side must be a whole number from 1 to 65535, got 65536"},
        Case{"--max-side 0", "images: --max-side must be a whole number from 1 to 65535, got 0"},
        Case{"--max-side 64 --quality 101",
             "images: --quality must be a whole number from 1 to 100, got 101"},
        Case{"--max-side 64 --quality 0",
             "images: --quality must be a whole number from 1 to 100, got 0"}}) {
    std::string out;
    EXPECT_EQ(RunCommand(images + " " + c.flags, &out), 2) << c.flags;
    EXPECT_EQ(out, "ringfeed-convert: " + c.line + "\n") << c.flags;
  }
  EXPECT_TRUE(testing::FilesIn(t.path()) == std::vector<std::string>{"tree"});
  std::string out;
  EXPECT_EQ(RunCommand(images + " --max-side 100 --quality 80", &out), 0) << out;
  EXPECT_NE(out.find("re-encoded 1 image above --max-side 100 at quality 80: resized to 100 "
                     "pixels on the longer side, as baseline JPEGs\n"),
            std::string::npos)
      << out;
  testing::WriteAll(t.File("tree/c/p.png"), "\x89PNG\r\n\x1a\n", 8);
  EXPECT_EQ(RunCommand(images + " --max-side 100 -q", &out), 1);
  // Under --max-side, the refusal names only --skip-bad as what would help.
  EXPECT_EQ(out, "ringfeed-convert: 1 image refused, nothing written: " + t.File("tree/c/p.png") +
                     ": PNG: truncated: the data ends inside the IHDR chunk (--skip-bad writes the "
                     "others and lists these in " +
                     t.File("d.skipped.tsv") + ")\n");
}

}  // namespace
}  // namespace rf
