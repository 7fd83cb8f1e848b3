// The option declarations themselves (src/train_options.h, pipeline/sources/pipeline_config.h,
// pipeline/plan/loader_options.h): every bound fits the field it guards, the faces share their
// defaults, every size has an upper end, and the option tables of docs/options.md (the README
// links them) say what the declarations say.
//
// The tables (OPTION_TABLE_FORMAT, for whoever writes docs/options.md): under a heading
// whose text starts with "ringfeed train" or "ringfeed read" (the command's options, spelled
// --name) or is "Python" (the loader's, spelled name), down to the next heading of its level or
// above, every Markdown table whose header's first two cells are "option" and "default" is read.
// A row's first cell names one or more options, each in backticks, a metavar after a space
// allowed (`--io`, `--gpu N`); its second cell their defaults, in the same order, separated by
// ", " (backticks stripped; a switch's is off or on: whether the switch as spelled is given), or
// nothing at all where the row states no default. Every option named must be declared for that
// program (or be an alias of one), every default must be the declaration's, and every declared
// option of the program must be named in some table of its section (but the positional one).
#include "src/train_options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "pipeline/plan/loader_options.h"
#include "pipeline/sources/pipeline_config.h"
#include "src/read_options.h"

namespace rf {
namespace {

// The largest value a declaration lets through, set and read back: the field holds it.
template <typename Config>
void ExpectBoundsFitTheirFields(const OptionTable<Config>& table) {
  for (const auto& e : table.entries()) {
    const OptionSpec& s = e.spec;
    OptionValue top;
    switch (s.type) {
      case OptionType::kCount:
      case OptionType::kByteSize:
        top = s.max_int / s.multiple * s.multiple;
        break;
      case OptionType::kInteger:
        top = static_cast<int64_t>(s.max_int);
        break;
      case OptionType::kNumber:
        top = s.max_open ? s.max_real * (1 - 1e-6) : s.max_real;
        break;
      default:
        continue;
    }
    Config c;
    ASSERT_TRUE(table.Set(&c, e, top, OptionFace::kCommandLine).ok()) << s.name;
    const OptionValue back = e.get(c);
    if (s.type == OptionType::kNumber) {
      // A float field rounds; it must not overflow or change sign.
      EXPECT_NEAR(std::get<double>(back), std::get<double>(top),
                  std::abs(std::get<double>(top)) * 1e-6)
          << s.name;
    } else {
      EXPECT_EQ(back, top) << s.name;
    }
  }
}

TEST(TrainOptions, EveryBoundFitsTheFieldItGuards) {
  ExpectBoundsFitTheirFields(TrainOptionTable());
  ExpectBoundsFitTheirFields(LoaderOptionTable());
  ExpectBoundsFitTheirFields(PipelineOptionTable());
}

// Issue 23: "every size a user gives has an upper bound that is checked before anything is
// allocated". These size memory, queues or loops; each is bounded well below its field's top.
TEST(TrainOptions, EverySizeHasAnUpperBound) {
  const std::map<std::string, uint64_t> bounds = {
      {"queue-depth", 32768}, {"batch-size", 1u << 20}, {"shuffle-window", 4096},
      {"ring-slots", 1024},   {"copy-streams", 16},     {"managed-prefetch", 65536},
      {"world-size", 65536},  {"rank", 65535},          {"read-size", 1u << 30},
      {"prefetch", 64},       {"epochs", 4294967295u},  {"hidden", 65536},
      {"image-size", 8192}};
  for (const auto& [name, bound] : bounds) {
    const auto* loader = LoaderOptionTable().FindByName(name);
    const auto* train = TrainOptionTable().FindByName(name);
    ASSERT_TRUE(loader != nullptr || train != nullptr) << name;
    EXPECT_EQ((loader != nullptr ? loader->spec : train->spec).max_int, bound) << name;
  }
}

// One default for every face: an option the command line and Python both take has one value.
TEST(TrainOptions, PythonAndTheCommandLineShareEveryDefault) {
  int shared = 0;
  for (const OptionSpec& py : LoaderOptionTable().Specs(kLoaderApi)) {
    const auto* cli = TrainOptionTable().FindByName(py.name);
    if (cli == nullptr) continue;
    ++shared;
    EXPECT_EQ(OptionValueText(py, py.default_value),
              OptionValueText(cli->spec, cli->spec.default_value))
        << py.name;
  }
  EXPECT_GE(shared, 15);
  EXPECT_EQ(std::get<uint64_t>(TrainOptionTable().FindByName("seed")->spec.default_value), 1u);
}

// --- docs/options.md's tables --------------------------------------------------------------

struct DocRow {
  int line = 0;
  std::vector<std::string> names, defaults;
};

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool code = false;
  for (size_t i = 1; i < line.size(); ++i) {  // after the leading '|'
    if (line[i] == '`') code = !code;
    if (line[i] == '|' && !code) {
      cells.push_back(Trim(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

std::string StripTicks(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
  return Trim(s);
}

// The option tables of the section whose heading matches `heading`: its rows.
std::vector<DocRow> OptionRows(const std::string& page, bool (*heading)(const std::string&)) {
  std::ifstream in(page);
  std::vector<DocRow> rows;
  std::string line;
  int n = 0, level = 0;  // level: the matching heading's, 0 outside the section
  bool table = false;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind('#', 0) == 0) {
      const size_t hashes = line.find_first_not_of('#');
      const int l = static_cast<int>(hashes);
      const std::string text = Trim(line.substr(hashes));
      if (heading(text)) {
        level = l;
      } else if (level != 0 && l <= level) {
        level = 0;
      }
      table = false;
      continue;
    }
    if (level == 0) continue;
    if (line.rfind('|', 0) != 0) {
      table = false;
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() >= 2 && cells[0] == "option" && cells[1] == "default") {
      table = true;
      continue;
    }
    if (!table || cells.size() < 2 || cells[0].find_first_not_of("-: ") == std::string::npos) {
      continue;
    }
    DocRow r;
    r.line = n;
    for (size_t at = cells[0].find('`'); at != std::string::npos; at = cells[0].find('`', at)) {
      const size_t end = cells[0].find('`', at + 1);
      const std::string item = cells[0].substr(at + 1, end - at - 1);
      r.names.push_back(item.substr(0, item.find(' ')));
      at = end + 1;
    }
    const std::string defaults = StripTicks(cells[1]);
    for (size_t start = 0; !defaults.empty() && start <= defaults.size();) {
      const size_t comma = std::min(defaults.find(", ", start), defaults.size());
      r.defaults.push_back(defaults.substr(start, comma - start));
      start = comma + 2;
    }
    rows.push_back(r);
  }
  return rows;
}

// The default as a table states it: a switch's on/off as spelled, the rest as the command line
// writes the value.
std::string DefaultText(const OptionSpec& s) {
  if (s.type == OptionType::kSwitch) {
    const bool spelled_on = std::get<bool>(s.default_value) != (CommandLineKey(s) != s.name);
    return spelled_on ? "on" : "off";
  }
  return OptionValueText(s, s.default_value);
}

bool SameDefault(const std::string& written, const std::string& declared) {
  if (written == declared) return true;
  char* end = nullptr;
  const double a = std::strtod(written.c_str(), &end);
  if (written.empty() || *end != '\0') return false;
  const double b = std::strtod(declared.c_str(), &end);
  return !declared.empty() && *end == '\0' && static_cast<float>(a) == static_cast<float>(b);
}

// The options OPTION_TABLE_FORMAT's check leaves out, by program: declared but not in the
// tables yet. None: the tables name every option.
const std::map<std::string, std::vector<std::string>> kTablePending = {};

void CheckOptionSection(const std::string& program, bool (*heading)(const std::string&),
                        const std::vector<OptionSpec>& specs, OptionFace face) {
  const std::string page = std::string(RINGFEED_SOURCE_DIR) + "/docs/options.md";
  const std::vector<DocRow> rows = OptionRows(page, heading);
  if (rows.empty() && face == OptionFace::kPython) return;  // no table: nothing to compare
  ASSERT_FALSE(rows.empty()) << "no option table under a \"" << program << "\" heading";
  std::set<std::string> named;
  for (const DocRow& r : rows) {
    SCOPED_TRACE("docs/options.md line " + std::to_string(r.line));
    EXPECT_TRUE(r.defaults.empty() || r.defaults.size() == r.names.size())
        << r.names.size() << " options, " << r.defaults.size() << " defaults";
    for (size_t i = 0; i < r.names.size(); ++i) {
      const OptionSpec* s = nullptr;
      for (const OptionSpec& o : specs) {
        if (OptionName(o, face) == r.names[i]) s = &o;
        for (const std::string& a : o.aliases) {
          if (face == OptionFace::kCommandLine && "--" + a == r.names[i]) s = &o;
        }
      }
      ASSERT_NE(s, nullptr) << program << " declares no option " << r.names[i];
      named.insert(s->name);
      if (r.defaults.size() == r.names.size()) {
        EXPECT_TRUE(SameDefault(r.defaults[i], DefaultText(*s)))
            << r.names[i] << ": docs/options.md says " << r.defaults[i] << ", the declaration "
            << DefaultText(*s);
      }
    }
  }
  const auto pending = kTablePending.find(program);
  for (const OptionSpec& s : specs) {
    if (s.positional || named.count(s.name) != 0) continue;
    const std::string name = OptionName(s, face);
    if (pending != kTablePending.end() &&
        std::find(pending->second.begin(), pending->second.end(), name) != pending->second.end()) {
      continue;
    }
    ADD_FAILURE() << program << "'s option " << name << " is in no option table of docs/options.md";
  }
}

TEST(TrainOptions, TheOptionTablesOfTheDocsAreTheDeclarations) {
  CheckOptionSection(
      "ringfeed read", [](const std::string& h) { return h.rfind("ringfeed read", 0) == 0; },
      ReadOptionTable().Specs(kReadCommand), OptionFace::kCommandLine);
  CheckOptionSection(
      "ringfeed train", [](const std::string& h) { return h.rfind("ringfeed train", 0) == 0; },
      TrainOptionTable().Specs(kTrainCommand), OptionFace::kCommandLine);
  CheckOptionSection(
      "Python", [](const std::string& h) { return h == "Python"; },
      LoaderOptionTable().Specs(kLoaderApi), OptionFace::kPython);
}

}  // namespace
}  // namespace rf
