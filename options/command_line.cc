#include "options/command_line.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace rf {
namespace {

// The descriptor of the --config file, closed when the read is done.
class ConfigFd {
 public:
  explicit ConfigFd(int fd) : fd_(fd) {}
  ~ConfigFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ConfigFd(const ConfigFd&) = delete;
  ConfigFd& operator=(const ConfigFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

const OptionSpec* FindKey(const std::vector<OptionSpec>& specs, std::string_view key) {
  for (const OptionSpec& s : specs) {
    if (CommandLineKey(s) == key) return &s;
    for (const std::string& a : s.aliases) {
      if (a == key) return &s;
    }
  }
  return nullptr;
}

const OptionSpec* FindShort(const std::vector<OptionSpec>& specs, char name) {
  for (const OptionSpec& s : specs) {
    if (s.short_name != 0 && s.short_name == name) return &s;
  }
  return nullptr;
}

// `v` stored as option `s`'s value in `out`: a kTexts value added to what it holds already.
void Store(const OptionSpec& s, OptionValue v, ParsedOptions* out) {
  auto at = out->values.find(s.name);
  if (s.type == OptionType::kTexts && at != out->values.end()) {
    std::vector<std::string>& held = std::get<std::vector<std::string>>(at->second);
    for (std::string& t : std::get<std::vector<std::string>>(v)) held.push_back(std::move(t));
  } else {
    out->values[s.name] = std::move(v);
  }
  out->given.insert(s.name);
}

std::string Trim(std::string_view t) {
  const size_t a = t.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return "";
  const size_t b = t.find_last_not_of(" \t\r");
  return std::string(t.substr(a, b - a + 1));
}

// Where a text file's bytes stop being text: the offset of the first NUL, control byte (but tab,
// CR, LF) or byte that is not UTF-8; npos for text.
size_t FirstNonText(const std::string& t) {
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
      ++i;
      continue;
    }
    const size_t len = TextCharLength(t, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string::npos;
}

}  // namespace

Status ParseConfigText(const std::vector<OptionSpec>& specs, const std::string& path,
                       const std::string& text, ParsedOptions* out) {
  const std::set<std::string> from_command_line = out->given;
  size_t line_no = 0, start = 0;
  std::set<std::string> seen;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = Trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = "--config " + path + " line " + std::to_string(line_no) + ": ";
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return Status::Usage(where + "expected name = value, got " + QuoteUserText(line));
    }
    const std::string key = Trim(std::string_view(line).substr(0, eq));
    const std::string value = Trim(std::string_view(line).substr(eq + 1));
    const OptionSpec* s = FindKey(specs, key);
    if (s == nullptr || s->name == "config") {
      return Status::Usage(where + "unknown option " + QuoteUserText(key));
    }
    if (!seen.insert(s->name).second && s->type != OptionType::kTexts) {
      return Status::Usage(where + "--" + key + " given twice in the file");
    }
    Result<OptionValue> v = ParseOptionText(*s, value, OptionFace::kCommandLine);
    if (!v.ok()) return Status::Usage(where + v.status().message());
    if (from_command_line.count(s->name) != 0) continue;  // the command line wins
    Store(*s, std::move(v).value(), out);
  }
  return Status::Ok();
}

namespace {

std::string Metavar(const OptionSpec& s) {
  if (!s.metavar.empty()) return s.metavar;
  switch (s.type) {
    case OptionType::kSwitch:
      return "";
    case OptionType::kOnOff:
      return "on|off";
    case OptionType::kCount:
    case OptionType::kInteger:
      return "N";
    case OptionType::kNumber:
      return "X";
    case OptionType::kNumbers:
      return "X,...";
    case OptionType::kByteSize:
      return "SIZE";
    case OptionType::kWord: {
      std::string w;
      for (const std::string& word : s.words) w += (w.empty() ? "" : "|") + word;
      return w;
    }
    case OptionType::kText:
    case OptionType::kTexts:
      return "TEXT";
    case OptionType::kCounts:
      return "N,...";
  }
  return "";
}

// `text` wrapped at `width` columns, starting at column `indent` and indenting every line after
// the first as far.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  std::string out;
  size_t column = indent, i = 0;
  while (i < text.size()) {
    const size_t space = std::min(text.find(' ', i), text.size());
    const std::string word = text.substr(i, space - i);
    i = space + 1;
    if (!out.empty() && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (!out.empty()) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

}  // namespace

Result<std::string> ReadConfigText(const std::string& path) {
  // A FIFO waits for its writer here, as any reader of one does (`--config <(...)` has one).
  ConfigFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return Status::Usage("cannot read --config " + path + ": " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return Status::Usage("cannot read --config " + path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return Status::Usage("--config " + path + " is a directory");
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
    return Status::Usage("--config " + path + " holds " + std::to_string(st.st_size) +
                         " bytes: more than a config file's " + std::to_string(kMaxConfigBytes));
  }
  // At most one byte more than the limit: a device or pipe that goes on is refused at the limit.
  std::string text(kMaxConfigBytes + 1, '\0');
  size_t n = 0;
  while (n < text.size()) {
    const ssize_t got = ::read(fd.get(), text.data() + n, text.size() - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::Usage("cannot read --config " + path + ": " + std::strerror(errno));
    if (got == 0) break;
    n += static_cast<size_t>(got);
  }
  text.resize(n);
  const size_t bad = FirstNonText(text);
  if (bad != std::string::npos) {
    return Status::Usage("--config " + path + " is not a text file: byte " + std::to_string(bad) +
                         " is " + QuoteUserText(text.substr(bad, 1)));
  }
  if (n > kMaxConfigBytes) {
    return Status::Usage("--config " + path + " holds more than a config file's " +
                         std::to_string(kMaxConfigBytes) + " bytes");
  }
  return text;
}

Result<ParsedOptions> ParseCommandLine(const std::vector<OptionSpec>& specs,
                                       const std::vector<std::string>& args) {
  ParsedOptions out;
  const OptionSpec* positional = nullptr;
  for (const OptionSpec& s : specs) {
    if (s.positional) positional = &s;
  }
  bool words_only = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!words_only && (arg == "--help" || arg == "-h")) {
      out.help = true;
      return out;
    }
    if (!words_only && arg == "--") {
      words_only = true;
      continue;
    }
    const OptionSpec* s = nullptr;
    std::string text;
    std::string as;                       // how the option was spelled, for "given twice"
    std::optional<std::string> attached;  // the value in the same argument: --name=V, -oV
    if (words_only || arg.size() < 2 || arg[0] != '-') {
      if (positional == nullptr) {
        return Status::Usage("unexpected argument " + QuoteUserText(arg) + " (see --help)");
      }
      s = positional;
      attached = arg;
      as = "a bare " + QuoteUserText(arg);
    } else if (arg[1] != '-') {
      // A one-letter name: -q, -o OUT, -oOUT.
      s = FindShort(specs, arg[1]);
      as = arg.substr(0, 2);
      if (arg.size() > 2) attached = arg.substr(arg[2] == '=' ? 3 : 2);
    } else {
      const size_t eq = arg.find('=');
      s = FindKey(specs, arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
      as = arg.substr(0, eq);
      if (eq != std::string::npos) attached = arg.substr(eq + 1);
    }
    if (s == nullptr) {
      return Status::Usage("unknown option " + QuoteUserText(arg.substr(0, arg.find('='))) +
                           " (see --help)");
    }
    if (attached) {
      text = *attached;
    } else if (s->type == OptionType::kSwitch) {
      text = "true";
    } else if (i + 1 < args.size()) {
      text = args[++i];
    } else {
      return Status::Usage(as + " needs a value (" + OptionRuleText(*s) + ")");
    }
    if (out.given.count(s->name) != 0 && s->type != OptionType::kTexts) {
      return Status::Usage(OptionName(*s, OptionFace::kCommandLine) + " given twice (the second " +
                           "time as " + as + ")");
    }
    RF_ASSIGN_OR_RETURN(OptionValue v, ParseOptionText(*s, text, OptionFace::kCommandLine));
    Store(*s, std::move(v), &out);
  }
  const auto config = out.values.find("config");
  if (config != out.values.end()) {
    const std::string path = std::get<std::string>(config->second);
    RF_ASSIGN_OR_RETURN(const std::string text, ReadConfigText(path));
    RF_RETURN_IF_ERROR(ParseConfigText(specs, path, text, &out));
  }
  for (const OptionSpec& s : specs) {
    if (!s.required || out.given.count(s.name) != 0) continue;
    const std::string name = OptionName(s, OptionFace::kCommandLine);
    return Status::Usage("no " + name + " given" +
                         (s.positional ? " (a bare " + Metavar(s) + " or " + name + " " +
                                             Metavar(s) + "; see --help)"
                                       : " (see --help)"));
  }
  return out;
}

std::string FormatOptionsHelp(const std::vector<OptionSpec>& specs) {
  constexpr size_t kIndent = 30, kWidth = 100;
  std::string out;
  for (const OptionSpec& s : specs) {
    std::string left = "  ";
    if (s.short_name != 0) left += std::string{'-', s.short_name} + ", ";
    left += OptionName(s, OptionFace::kCommandLine);
    const std::string metavar = Metavar(s);
    if (!metavar.empty()) left += " " + metavar;
    if (s.positional) left += " (or a bare " + metavar + ")";
    for (const std::string& a : s.aliases) left += " (or --" + a + ")";
    // A switch on by default is spelled --no-NAME: it turns off what the help describes.
    std::string text =
        CommandLineKey(s) != s.name && !s.help.empty() ? "turns off: " + s.help : s.help;
    std::vector<std::string> notes;
    if (s.required) notes.push_back("required");
    if (s.type == OptionType::kCount || s.type == OptionType::kInteger ||
        s.type == OptionType::kByteSize || s.type == OptionType::kNumber ||
        s.type == OptionType::kNumbers || s.type == OptionType::kCounts) {
      notes.push_back(OptionRuleText(s));
    }
    // A default the option's own rule refuses stands for "not given" (--max-side's 0: nothing
    // re-encoded), which the help text says; it is not shown as a value to give, nor is the
    // default of an option that must be given.
    const std::string def = OptionValueText(s, s.default_value);
    if (s.type != OptionType::kSwitch && !s.required && !def.empty() &&
        CheckOptionValue(s, s.default_value, OptionFace::kCommandLine).ok()) {
      notes.push_back("default " + def);
    }
    for (const OptionCondition& c : s.only_with) {
      // A condition on an option the program does not take never holds it back (OptionTable's
      // IdleBecause): not a note to read.
      if (std::none_of(specs.begin(), specs.end(),
                       [&](const OptionSpec& o) { return o.name == c.option; })) {
        continue;
      }
      std::string values;
      for (const std::string& v : c.values) values += (values.empty() ? "" : "|") + v;
      notes.push_back("only with --" + c.option + " " + values);
    }
    if (!notes.empty()) {
      text += " (";
      for (size_t i = 0; i < notes.size(); ++i) text += (i ? "; " : "") + notes[i];
      text += ")";
    }
    if (text.empty()) {
      out += left + "\n";
      continue;
    }
    if (left.size() + 2 > kIndent) {
      out += left + "\n" + std::string(kIndent, ' ');
    } else {
      out += left + std::string(kIndent - left.size(), ' ');
    }
    out += Wrap(text, kIndent, kWidth) + "\n";
  }
  return out;
}

}  // namespace rf
