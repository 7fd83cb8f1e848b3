// docs/options.md's ringfeed-convert section (the README links it) says what the program
// declares: every subcommand of `ringfeed-convert --help` is named in its "Subcommands:"
// paragraph, and its option table names every option some subcommand's --help lists, and no
// other. (The train and read tables have
// their own check, tests/src/train_options_test.cc. The converter's --help is made from its
// table, tools/convert/convert_options.h, per subcommand, so reading it reads the declarations.)
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// docs/options.md's lines from the "## ringfeed-convert" heading to the next heading of its level.
std::vector<std::string> ConvertSection() {
  std::ifstream in(std::string(RINGFEED_SOURCE_DIR) + "/docs/options.md");
  std::vector<std::string> section;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## ringfeed-convert";
    if (inside) section.push_back(line);
  }
  return section;
}

// The subcommands `ringfeed-convert --help` lists ("  name   summary" under "Commands:").
std::vector<std::string> Subcommands() {
  std::string out;
  EXPECT_TRUE(testing::Convert({"--help"}, &out).ok());
  std::vector<std::string> names;
  bool listed = false;
  for (const std::string& line : Lines(out)) {
    if (listed && line.rfind("  ", 0) == 0) names.push_back(line.substr(2, line.find(' ', 2) - 2));
    if (line == "Commands:") listed = true;
  }
  return names;
}

// The long names a subcommand's --help lists: "  --name N" or "  -o, --output OUT".
std::set<std::string> HelpOptions(const std::string& command) {
  std::string out;
  EXPECT_TRUE(testing::Convert({command, "--help"}, &out).ok()) << command;
  std::set<std::string> names;
  for (const std::string& line : Lines(out)) {
    if (line.rfind("  -", 0) != 0) continue;
    const size_t at = line.find("--");
    names.insert(line.substr(at, line.find_first_of(" ]", at) - at));
  }
  names.erase("--help");
  return names;
}

TEST(ConvertOptionsPage, TheSubcommandsAndTheOptionTableAreTheProgramsOwn) {
  const std::vector<std::string> section = ConvertSection();
  ASSERT_FALSE(section.empty()) << "no \"## ringfeed-convert\" section in docs/options.md";
  std::string subcommands;  // the paragraph that starts "Subcommands:"
  std::set<std::string> table;
  bool paragraph = false;
  for (const std::string& line : section) {
    if (line.rfind("Subcommands:", 0) == 0) paragraph = true;
    if (line.empty()) paragraph = false;
    if (paragraph) subcommands += line + " ";
    if (line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(1, line.find('|', 1) - 1);
    for (size_t at = first.find("`--"); at != std::string::npos; at = first.find("`--", at + 1)) {
      table.insert(first.substr(at + 1, first.find('`', at + 1) - at - 1));
    }
  }
  std::set<std::string> declared;
  const std::vector<std::string> commands = Subcommands();
  EXPECT_EQ(commands.size(), 15u);
  for (const std::string& c : commands) {
    EXPECT_NE(subcommands.find("`" + c + "`"), std::string::npos)
        << c << " is not named in docs/options.md's \"Subcommands:\" paragraph";
    for (const std::string& o : HelpOptions(c)) {
      declared.insert(o);
      EXPECT_EQ(table.count(o), 1u)
          << c << "'s option " << o << " is in no table row of docs/options.md";
    }
  }
  for (const std::string& o : table) {
    EXPECT_EQ(declared.count(o), 1u)
        << "docs/options.md names " << o << ", which no subcommand takes";
  }
}

}  // namespace
}  // namespace rf
