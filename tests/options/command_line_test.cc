// The command line and --config file read by a program's declarations: the forms each takes,
// what counts as given, the command line winning, and the --config files that must be refused
// before their content is used (a device, a directory, binary bytes, too many bytes).
#include "options/command_line.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::TempDir;

std::vector<OptionSpec> Specs() {
  std::vector<OptionSpec> s;
  s.push_back(OptionSpec::Of("data", OptionType::kText).Positional());
  s.push_back(OptionSpec::Of("config", OptionType::kText));
  s.push_back(OptionSpec::Of("queue-depth", OptionType::kCount).Range(1, 32768));
  s.push_back(OptionSpec::Of("gpu", OptionType::kInteger).Range(-1, 1023));
  s.push_back(OptionSpec::Of("drop-last", OptionType::kSwitch));
  OptionSpec verify = OptionSpec::Of("verify", OptionType::kSwitch);
  verify.default_value = true;
  s.push_back(verify);
  return s;
}

std::string Refusal(std::vector<std::string> args) {
  Result<ParsedOptions> p = ParseCommandLine(Specs(), args);
  if (p.ok()) return "";
  EXPECT_TRUE(p.status().IsUsage());
  return p.status().message();
}

TEST(CommandLine, TakesEachFormAndCountsWhatIsGiven) {
  Result<ParsedOptions> p = ParseCommandLine(
      Specs(), {"d.rfd", "--queue-depth=4", "--gpu", "-1", "--drop-last", "--no-verify"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(std::get<std::string>(p->values.at("data")), "d.rfd");
  EXPECT_EQ(std::get<uint64_t>(p->values.at("queue-depth")), 4u);
  EXPECT_EQ(std::get<int64_t>(p->values.at("gpu")), -1);  // a value may start with '-'
  EXPECT_TRUE(std::get<bool>(p->values.at("drop-last")));
  EXPECT_FALSE(std::get<bool>(p->values.at("verify")));
  EXPECT_EQ(p->given, (std::set<std::string>{"data", "queue-depth", "gpu", "drop-last", "verify"}));
  EXPECT_TRUE(ParseCommandLine(Specs(), {"--queue-depth", "2", "-h"})->help);
}

TEST(CommandLine, RefusesUnknownRepeatedAndMissingValuesNamingThem) {
  EXPECT_EQ(Refusal({"--queue-depht", "4"}), "unknown option '--queue-depht' (see --help)");
  EXPECT_EQ(Refusal({"-q"}), "unknown option '-q' (see --help)");
  EXPECT_EQ(Refusal({"--queue-depth", "4", "--queue-depth=5"}),
            "--queue-depth given twice (the second time as --queue-depth)");
  EXPECT_EQ(Refusal({"a.rfd", "--data", "b.rfd"}),
            "--data given twice (the second time as --data)");
  EXPECT_EQ(Refusal({"a.rfd", "b.rfd"}), "--data given twice (the second time as a bare 'b.rfd')");
  EXPECT_EQ(Refusal({"--queue-depth"}),
            "--queue-depth needs a value (a whole number from 1 to 32768)");
  // A value starting with '-' reaches the option's rule instead of being read as an option.
  EXPECT_EQ(Refusal({"--queue-depth", "-4"}),
            "--queue-depth must be a whole number from 1 to 32768, got '-4'");
  EXPECT_EQ(Refusal({"--queue-depth", "4294967295"}),
            "--queue-depth must be a whole number from 1 to 32768, got 4294967295");
}

// ringfeed-convert's forms: one-letter names, an option of several texts given again or as bare
// words, and options that must be given.
std::vector<OptionSpec> ConvertSpecs() {
  std::vector<OptionSpec> s;
  s.push_back(OptionSpec::Of("input", OptionType::kTexts).Positional().Required().Metavar("FILE"));
  s.push_back(OptionSpec::Of("output", OptionType::kText).Short('o').Required());
  s.push_back(OptionSpec::Of("quiet", OptionType::kSwitch).Short('q'));
  s.push_back(OptionSpec::Of("shards", OptionType::kCount).Range(1, 99999));
  return s;
}

TEST(CommandLine, TakesOneLetterNamesSeveralTextsAndRefusesWhatMustBeGivenMissing) {
  Result<ParsedOptions> p =
      ParseCommandLine(ConvertSpecs(), {"a.bin", "-o", "d.rfd", "--input", "b.bin", "-q", "c.bin"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(std::get<std::vector<std::string>>(p->values.at("input")),
            (std::vector<std::string>{"a.bin", "b.bin", "c.bin"}));
  EXPECT_EQ(std::get<std::string>(p->values.at("output")), "d.rfd");
  EXPECT_TRUE(std::get<bool>(p->values.at("quiet")));
  p = ParseCommandLine(ConvertSpecs(), {"a.bin", "-od.rfd"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(std::get<std::string>(p->values.at("output")), "d.rfd");
  const auto refusal = [](std::vector<std::string> args) {
    Result<ParsedOptions> r = ParseCommandLine(ConvertSpecs(), args);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.status().message();
  };
  EXPECT_EQ(refusal({"a.bin"}), "no --output given (see --help)");
  EXPECT_EQ(refusal({"-o", "d.rfd"}), "no --input given (a bare FILE or --input FILE; see --help)");
  EXPECT_EQ(refusal({"a.bin", "-o", "d.rfd", "-o", "e.rfd"}),
            "--output given twice (the second time as -o)");
  EXPECT_EQ(refusal({"a.bin", "-x", "1"}), "unknown option '-x' (see --help)");
  EXPECT_EQ(refusal({"a.bin", "-images", "x"}), "unknown option '-images' (see --help)");
  EXPECT_EQ(refusal({"a.bin", "-o"}), "-o needs a value (text)");
  EXPECT_EQ(refusal({"a.bin", "-o", "d.rfd", "--shards", "-2"}),
            "--shards must be a whole number from 1 to 99999, got '-2'");
  // --help needs nothing else.
  EXPECT_TRUE(ParseCommandLine(ConvertSpecs(), {"--help"})->help);
}

TEST(CommandLine, ConfigFileSetsWhatTheCommandLineDoesNotAndCountsAsGiven) {
  TempDir t;
  std::ofstream(t.File("a.cfg")) << "# a comment\n\nqueue-depth = 16\n  no-verify = true  \n"
                                 << "gpu=3\n";
  Result<ParsedOptions> p =
      ParseCommandLine(Specs(), {"--config", t.File("a.cfg"), "--queue-depth", "4"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(std::get<uint64_t>(p->values.at("queue-depth")), 4u);  // the command line wins
  EXPECT_FALSE(std::get<bool>(p->values.at("verify")));
  EXPECT_EQ(std::get<int64_t>(p->values.at("gpu")), 3);
  EXPECT_EQ(p->given.count("verify"), 1u);
}

TEST(CommandLine, ConfigFileLinesAreCheckedNamingFileAndLine) {
  TempDir t;
  const std::string f = t.File("bad.cfg");
  const auto refusal = [&](const std::string& text) {
    std::ofstream(f, std::ios::trunc) << text;
    return Refusal({"--config", f});
  };
  EXPECT_EQ(
      refusal("queue-depth = 0\n"),
      "--config " + f + " line 1: --queue-depth must be a whole number from 1 to 32768, got 0");
  EXPECT_EQ(refusal("\nqueue-depth 4\n"),
            "--config " + f + " line 2: expected name = value, got 'queue-depth 4'");
  EXPECT_EQ(refusal("speed = 4\n"), "--config " + f + " line 1: unknown option 'speed'");
  EXPECT_EQ(refusal("config = other.cfg\n"), "--config " + f + " line 1: unknown option 'config'");
  EXPECT_EQ(refusal("gpu = 1\ngpu = 2\n"),
            "--config " + f + " line 2: --gpu given twice in the file");
}

// Issue 23, H2: --config /dev/zero grew memory without bound; a directory was taken as an empty
// file; a binary file's bytes went to the terminal, and a NUL cut the message.
TEST(CommandLine, ConfigThatIsNoTextFileIsRefusedBeforeItsContentIsUsed) {
  TempDir t;
  EXPECT_EQ(Refusal({"--config", "/dev/zero"}),
            "--config /dev/zero is not a text file: byte 0 is '\\x00'");
  EXPECT_EQ(Refusal({"--config", t.path()}), "--config " + t.path() + " is a directory");
  const std::string bin = t.File("bin.cfg");
  std::ofstream(bin) << std::string("gpu = 1\n\x1b[2J\0", 12);
  EXPECT_EQ(Refusal({"--config", bin}),
            "--config " + bin + " is not a text file: byte 8 is '\\x1b'");
  const std::string big = t.File("big.cfg");
  std::ofstream(big) << std::string(kMaxConfigBytes + 1, '#');
  EXPECT_EQ(Refusal({"--config", big}), "--config " + big + " holds " +
                                            std::to_string(kMaxConfigBytes + 1) +
                                            " bytes: more than a config file's 1048576");
  EXPECT_EQ(Refusal({"--config", t.File("none.cfg")}),
            "cannot read --config " + t.File("none.cfg") + ": No such file or directory");
}

// A pipe or device that goes on past the limit is refused at the limit, having read no more.
TEST(CommandLine, ConfigStreamLongerThanTheLimitIsRefusedAtTheLimit) {
  TempDir t;
  const std::string fifo = t.File("cfg.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t writer = ::fork();
  if (writer == 0) {
    std::ofstream out(fifo);
    const std::string line(1023, '#');
    for (int i = 0; i < 2048 && out; ++i) out << line << "\n";  // 2 MiB of comment lines
    ::_exit(0);
  }
  EXPECT_EQ(Refusal({"--config", fifo}),
            "--config " + fifo + " holds more than a config file's 1048576 bytes");
  ::kill(writer, SIGKILL);
  int status = 0;
  ::waitpid(writer, &status, 0);
}

TEST(CommandLine, HelpShowsEachOptionsFormBoundsDefaultAndWhereItApplies) {
  std::vector<OptionSpec> specs = Specs();
  specs[2].Help("reads in flight").OnlyWith("mode", {"streaming"}, "the reader's");
  specs[2].default_value = uint64_t{8};
  specs[4].Help("skip the last batch").OnlyWith("sampler", {"sequential"}, "no such option here");
  specs.push_back(OptionSpec::Of("mode", OptionType::kWord).Words({"streaming", "managed"}));
  const std::string help = FormatOptionsHelp(specs);
  EXPECT_NE(help.find("  --queue-depth N"), std::string::npos) << help;
  EXPECT_NE(help.find("  --queue-depth N             reads in flight (a whole number from 1 to "
                      "32768; default 8; only with\n                              --mode "
                      "streaming)\n"),
            std::string::npos)
      << help;
  EXPECT_EQ(help.find(" \n"), std::string::npos) << help;  // no trailing spaces
  EXPECT_NE(help.find("  --no-verify\n"), std::string::npos) << help;
  // A condition on an option the program does not take is no note.
  EXPECT_NE(help.find("  --drop-last                 skip the last batch\n"), std::string::npos)
      << help;
  EXPECT_NE(help.find("  --data TEXT (or a bare TEXT)"), std::string::npos) << help;
  // A one-letter name beside the long one; what must be given, said; a default the option's own
  // rule refuses (0 where 1 to 65535 is taken: "not given") is not shown as one.
  std::vector<OptionSpec> convert = ConvertSpecs();
  convert.push_back(OptionSpec::Of("max-side", OptionType::kCount).Range(1, 65535).Help("resize"));
  const std::string convert_help = FormatOptionsHelp(convert);
  EXPECT_NE(convert_help.find("  -o, --output TEXT           (required)\n"), std::string::npos)
      << convert_help;
  EXPECT_NE(convert_help.find("  -q, --quiet\n"), std::string::npos) << convert_help;
  EXPECT_NE(convert_help.find("  --max-side N                resize (a whole number from 1 to "
                              "65535)\n"),
            std::string::npos)
      << convert_help;
  for (size_t start = 0, end; start < help.size(); start = end + 1) {
    end = help.find('\n', start);
    EXPECT_LE(end - start, 100u) << help.substr(start, end - start);
  }
}

}  // namespace
}  // namespace rf
