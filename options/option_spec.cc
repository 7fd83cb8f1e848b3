#include "options/option_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/units.h"

namespace rf {
namespace {

bool IsDigits(std::string_view t) {
  return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
}

// The shortest text that reads back as `v`: as a float where `single` (a float field's default,
// 0.01f, prints as "0.01", not "0.009999999776"), else as a double.
std::string ShortestNumber(double v, bool single) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    const double back = std::strtod(buf, nullptr);
    if (single ? static_cast<float>(back) == static_cast<float>(v) : back == v) break;
  }
  return buf;
}

// `v` as the spec's field holds it: rounded to float where the field is one.
double Held(const OptionSpec& s, double v) {
  return s.single_precision ? static_cast<double>(static_cast<float>(v)) : v;
}

std::string BytesText(uint64_t bytes) {
  for (const auto& [unit, size] :
       {std::pair{"GiB", uint64_t{1} << 30}, std::pair{"MiB", uint64_t{1} << 20},
        std::pair{"KiB", uint64_t{1} << 10}}) {
    if (bytes != 0 && bytes % size == 0) return std::to_string(bytes / size) + unit;
  }
  return std::to_string(bytes);
}

std::string IntText(const OptionSpec& s, uint64_t v) {
  return s.type == OptionType::kByteSize ? BytesText(v) : std::to_string(v);
}

Status Refused(const OptionSpec& s, OptionFace face, const std::string& got) {
  return Status::Usage(OptionName(s, face) + " must be " + OptionRuleText(s) + ", got " + got);
}

// A decimal number: digits, '.', an exponent; no hex, inf or nan (strtod would take them).
std::optional<double> ParseDecimal(std::string_view t) {
  if (t.empty() || t.size() > 64 || t.find_first_not_of("0123456789.eE+-") != std::string::npos ||
      t.find_first_of("0123456789") == std::string::npos) {
    return std::nullopt;
  }
  const std::string text(t);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Where a finite `v` is no float, for a field that holds one: ": V is past the largest float,
// ..." (it would be infinite) or ": V is below the smallest float, ..." (it would be 0, unlike
// V); "" otherwise, as for any value of a double field.
std::string FloatWhy(const OptionSpec& s, double v) {
  if (!s.single_precision || !std::isfinite(v)) return "";
  const double held = Held(s, v);
  const std::string named = ": " + ShortestNumber(v, false);
  if (!std::isfinite(held)) {
    return named + " is past the largest float, " +
           ShortestNumber(std::numeric_limits<float>::max(), true) +
           ", which the option is held in";
  }
  if (held == 0 && v != 0) {
    return named + " is below the smallest float, " +
           ShortestNumber(std::numeric_limits<float>::denorm_min(), true) +
           ", which the option is held in (it would be 0)";
  }
  return "";
}

bool InRealRange(const OptionSpec& s, double v) {
  if (!std::isfinite(v)) return false;
  if (s.min_open ? !(v > s.min_real) : !(v >= s.min_real)) return false;
  if (s.max_open ? !(v < s.max_real) : !(v <= s.max_real)) return false;
  return true;
}

// "a finite number > 0", "a number in [0, 1)", "a finite number" (kNumber); with `list`, the same
// for each of a list: "a list of finite numbers > 0".
std::string RealRangeText(const OptionSpec& s, bool list) {
  const float highest = std::numeric_limits<float>::max();
  const std::string numbers = list ? "a list of numbers" : "a number";
  const std::string finite = list ? "a list of finite numbers" : "a finite number";
  if (s.min_real <= -highest && s.max_real >= highest) return finite;
  if (s.max_real >= highest) {
    return finite + (s.min_open ? " > " : " >= ") + ShortestNumber(s.min_real, s.single_precision);
  }
  return numbers + " in " + (s.min_open ? "(" : "[") +
         ShortestNumber(s.min_real, s.single_precision) + ", " +
         ShortestNumber(s.max_real, s.single_precision) + (s.max_open ? ")" : "]");
}

std::string JoinWords(const std::vector<std::string>& words, const char* last) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? last : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace

OptionSpec OptionSpec::Of(std::string name, OptionType type) {
  OptionSpec s;
  s.name = std::move(name);
  s.type = type;
  // A value of the type (the tables set the field's own).
  switch (type) {
    case OptionType::kSwitch:
    case OptionType::kOnOff:
      s.default_value = false;
      break;
    case OptionType::kCount:
    case OptionType::kByteSize:
      s.default_value = uint64_t{0};
      break;
    case OptionType::kInteger:
      s.default_value = int64_t{0};
      break;
    case OptionType::kNumber:
      s.default_value = 0.0;
      break;
    case OptionType::kNumbers:
      s.default_value = std::vector<double>{};
      break;
    case OptionType::kCounts:
      s.default_value = std::vector<uint64_t>{};
      break;
    case OptionType::kTexts:
      s.default_value = std::vector<std::string>{};
      break;
    case OptionType::kWord:
    case OptionType::kText:
      s.default_value = std::string();
      break;
  }
  return s;
}

OptionSpec& OptionSpec::Help(std::string text) {
  help = std::move(text);
  return *this;
}
OptionSpec& OptionSpec::For(uint32_t u) {
  users = u;
  return *this;
}
OptionSpec& OptionSpec::Range(int64_t min, uint64_t max) {
  min_int = min;
  max_int = max;
  return *this;
}
OptionSpec& OptionSpec::MultipleOf(uint64_t m) {
  multiple = m;
  return *this;
}
OptionSpec& OptionSpec::RangeReal(double min, double max, bool open_min, bool open_max) {
  if (single_precision) {
    // The bounds a float field can hold, rounded inward: the rule states what the field takes
    // (2^32 - 1 is 4294967040 in a float; 4294967296 would pass a bound of 2^32 - 1).
    float lo = static_cast<float>(min), hi = static_cast<float>(max);
    if (lo < min) lo = std::nextafter(lo, std::numeric_limits<float>::infinity());
    if (hi > max) hi = std::nextafter(hi, -std::numeric_limits<float>::infinity());
    min = lo;
    max = hi;
  }
  min_real = min;
  max_real = max;
  min_open = open_min;
  max_open = open_max;
  return *this;
}
OptionSpec& OptionSpec::OnlyWith(std::string option, std::vector<std::string> values,
                                 std::string why) {
  only_with.push_back({std::move(option), std::move(values), std::move(why)});
  return *this;
}
OptionSpec& OptionSpec::Metavar(std::string m) {
  metavar = std::move(m);
  return *this;
}
OptionSpec& OptionSpec::Unset(std::string meaning) {
  unset = std::move(meaning);
  return *this;
}
OptionSpec& OptionSpec::Positional() {
  positional = true;
  return *this;
}
OptionSpec& OptionSpec::BoolWords(std::string when_true, std::string when_false) {
  true_word = std::move(when_true);
  false_word = std::move(when_false);
  return *this;
}

OptionSpec& OptionSpec::Words(std::vector<std::string> w) {
  words = std::move(w);
  return *this;
}

OptionSpec& OptionSpec::Alias(std::string old_name) {
  aliases.push_back(std::move(old_name));
  return *this;
}

OptionSpec& OptionSpec::Items(size_t min, size_t max) {
  min_items = min;
  max_items = max;
  return *this;
}

OptionSpec& OptionSpec::Short(char name) {
  short_name = name;
  return *this;
}

OptionSpec& OptionSpec::PythonName(std::string name) {
  python_name = std::move(name);
  return *this;
}

OptionSpec& OptionSpec::Required() {
  required = true;
  return *this;
}

OptionSpec& OptionSpec::TextRule(std::string rule, std::function<bool(std::string_view)> t) {
  text_rule = std::move(rule);
  takes = std::move(t);
  return *this;
}

std::string CommandLineKey(const OptionSpec& s) {
  const bool negated = s.type == OptionType::kSwitch &&
                       std::holds_alternative<bool>(s.default_value) &&
                       std::get<bool>(s.default_value);
  return negated ? "no-" + s.name : s.name;
}

std::string OptionName(const OptionSpec& s, OptionFace face) {
  if (face == OptionFace::kCommandLine) return "--" + CommandLineKey(s);
  if (!s.python_name.empty()) return s.python_name;
  std::string n = s.name;
  for (char& c : n) c = c == '-' ? '_' : c;
  return n;
}

std::string OptionRuleText(const OptionSpec& s) {
  switch (s.type) {
    case OptionType::kSwitch:
      return "true or false";
    case OptionType::kOnOff:
      return "on or off";
    case OptionType::kCount:
    case OptionType::kInteger:
      return "a whole number from " +
             (s.min_int < 0 ? std::to_string(s.min_int) : IntText(s, s.min_int)) + " to " +
             IntText(s, s.max_int);
    case OptionType::kByteSize:
      return (s.multiple > 1 ? "a multiple of " + IntText(s, s.multiple)
                             : std::string("a byte size")) +
             " from " + IntText(s, s.min_int) + " to " + IntText(s, s.max_int);
    case OptionType::kNumber:
      return RealRangeText(s, false);
    case OptionType::kNumbers:
      return RealRangeText(s, true);
    case OptionType::kWord:
      return JoinWords(s.words, " or ");
    case OptionType::kText:
      return s.text_rule.empty() ? "text" : s.text_rule;
    case OptionType::kCounts:
      return (s.min_items == s.max_items
                  ? std::to_string(s.min_items)
                  : std::to_string(s.min_items) + " to " + std::to_string(s.max_items)) +
             " comma-separated whole numbers from " + IntText(s, s.min_int) + " to " +
             IntText(s, s.max_int);
    case OptionType::kTexts:
      return "texts";
  }
  return "";
}

size_t TextCharLength(std::string_view text, size_t at) {
  const auto c = static_cast<unsigned char>(text[at]);
  if (c < 0x20 || c == 0x7f) return 0;
  // A UTF-8 sequence: its lead byte gives its length, every byte after it is 10xxxxxx.
  const size_t len = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
  if (len == 0 || at + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(text[at + k]) & 0xc0) != 0x80) return 0;
  }
  return len;
}

std::string QuoteUserText(std::string_view text, size_t max) {
  std::string out = "'";
  size_t i = 0;
  while (i < text.size() && i < max) {
    const size_t len = TextCharLength(text, i);
    if (len == 0) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(text[i]));
      out += esc;
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  if (i < text.size()) out += "...";
  return out + "'";
}

Result<OptionValue> ParseOptionText(const OptionSpec& s, std::string_view text, OptionFace face) {
  const std::string got = QuoteUserText(text);
  switch (s.type) {
    case OptionType::kSwitch: {
      // The text is the value of the spelling the command line uses (--no-verify = true: off).
      const bool negated = CommandLineKey(s) != s.name;
      for (const char* yes : {"true", "on", "yes", "1"}) {
        if (text == yes) return OptionValue(!negated);
      }
      for (const char* no : {"false", "off", "no", "0"}) {
        if (text == no) return OptionValue(negated);
      }
      return Status::Usage(OptionName(s, face) + " is a switch: true or false, got " + got);
    }
    case OptionType::kOnOff:
      if (text == "on") return OptionValue(true);
      if (text == "off") return OptionValue(false);
      return Refused(s, face, got);
    case OptionType::kCount: {
      if (!IsDigits(text)) return Refused(s, face, got);
      errno = 0;
      const std::string t(text);
      const unsigned long long v = std::strtoull(t.c_str(), nullptr, 10);
      if (errno == ERANGE) return Refused(s, face, got);
      const OptionValue out = static_cast<uint64_t>(v);
      RF_RETURN_IF_ERROR(CheckOptionValue(s, out, face));
      return out;
    }
    case OptionType::kInteger: {
      const bool negative = !text.empty() && text[0] == '-';
      if (!IsDigits(negative ? text.substr(1) : text)) return Refused(s, face, got);
      errno = 0;
      const std::string t(text);
      const long long v = std::strtoll(t.c_str(), nullptr, 10);
      if (errno == ERANGE) return Refused(s, face, got);
      const OptionValue out = static_cast<int64_t>(v);
      RF_RETURN_IF_ERROR(CheckOptionValue(s, out, face));
      return out;
    }
    case OptionType::kNumber: {
      const std::optional<double> v = ParseDecimal(text);
      if (!v) return Refused(s, face, got);
      RF_RETURN_IF_ERROR(CheckOptionValue(s, *v, face));  // names the number given
      return OptionValue{Held(s, *v)};
    }
    case OptionType::kNumbers: {
      std::vector<double> values;
      size_t start = 0;
      while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::optional<double> v = ParseDecimal(text.substr(start, comma - start));
        if (!v) return Refused(s, face, got);
        values.push_back(*v);
        start = comma + 1;
      }
      RF_RETURN_IF_ERROR(CheckOptionValue(s, values, face));  // names the numbers given
      for (double& v : values) v = Held(s, v);
      return OptionValue{std::move(values)};
    }
    case OptionType::kByteSize: {
      // core/units.h's sizes, in decimal (strtod there would read "0x10" as hex).
      if (text.empty() || text.find_first_of("xX") != std::string_view::npos) {
        return Refused(s, face, got);
      }
      Result<uint64_t> bytes = ParseByteSize(std::string(text));
      if (!bytes.ok()) return Refused(s, face, got);
      const OptionValue out = *bytes;
      RF_RETURN_IF_ERROR(CheckOptionValue(s, out, face));
      return out;
    }
    case OptionType::kWord: {
      const OptionValue out = std::string(text);
      RF_RETURN_IF_ERROR(CheckOptionValue(s, out, face));
      return out;
    }
    case OptionType::kText:
      if (s.takes && !s.takes(text)) return Refused(s, face, got);
      return OptionValue(std::string(text));
    case OptionType::kCounts: {
      std::vector<uint64_t> values;
      size_t start = 0;
      while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view item = text.substr(start, comma - start);
        // At most max_items numbers are read: a list longer than that is refused as it is.
        if (!IsDigits(item) || values.size() == s.max_items) return Refused(s, face, got);
        errno = 0;
        const unsigned long long v = std::strtoull(std::string(item).c_str(), nullptr, 10);
        if (errno == ERANGE) return Refused(s, face, got);
        values.push_back(static_cast<uint64_t>(v));
        start = comma + 1;
      }
      if (CheckOptionValue(s, values, face).ok()) return OptionValue{std::move(values)};
      return Refused(s, face, got);
    }
    case OptionType::kTexts:
      return OptionValue(std::vector<std::string>{std::string(text)});
  }
  return Status::Usage("unknown option type");
}

Status CheckOptionValue(const OptionSpec& s, const OptionValue& v, OptionFace face) {
  switch (s.type) {
    case OptionType::kSwitch:
    case OptionType::kOnOff:
      if (std::holds_alternative<bool>(v)) return Status::Ok();
      break;
    case OptionType::kCount:
    case OptionType::kByteSize:
      if (const uint64_t* u = std::get_if<uint64_t>(&v)) {
        if (static_cast<int64_t>(*u) >= 0 && static_cast<int64_t>(*u) < s.min_int) {
          return Refused(s, face, IntText(s, *u));
        }
        if (*u > s.max_int || *u % s.multiple != 0) return Refused(s, face, IntText(s, *u));
        return Status::Ok();
      }
      if (const int64_t* i = std::get_if<int64_t>(&v); i != nullptr && *i < 0) {
        return Refused(s, face, std::to_string(*i));
      }
      break;
    case OptionType::kInteger:
      if (const int64_t* i = std::get_if<int64_t>(&v)) {
        if (*i < s.min_int || (*i >= 0 && static_cast<uint64_t>(*i) > s.max_int)) {
          return Refused(s, face, std::to_string(*i));
        }
        return Status::Ok();
      }
      if (const uint64_t* u = std::get_if<uint64_t>(&v)) {
        if (*u > s.max_int || *u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return Refused(s, face, std::to_string(*u));
        }
        return Status::Ok();
      }
      break;
    case OptionType::kNumber:
      if (const double* d = std::get_if<double>(&v)) {
        const std::string why = FloatWhy(s, *d);
        if (!why.empty() || !InRealRange(s, Held(s, *d))) {
          return Refused(s, face, ShortestNumber(*d, s.single_precision) + why);
        }
        return Status::Ok();
      }
      break;
    case OptionType::kNumbers:
      if (const auto* list = std::get_if<std::vector<double>>(&v)) {
        for (double d : *list) {
          const std::string why = FloatWhy(s, d);
          if (!why.empty() || !InRealRange(s, Held(s, d)))
            return Refused(s, face, OptionValueText(s, v) + why);
        }
        return Status::Ok();
      }
      break;
    case OptionType::kWord:
      if (const std::string* w = std::get_if<std::string>(&v)) {
        for (const std::string& ok : s.words) {
          if (*w == ok) return Status::Ok();
        }
        for (const std::string& ok : s.word_aliases) {
          if (*w == ok) return Status::Ok();
        }
        // QuoteUserText's quotes are single; a word is named in double ones. (Built by appending:
        // "x" + std::string&& trips GCC 12's -Wrestrict at -O3, a false positive.)
        const std::string quoted = QuoteUserText(*w);
        std::string named(1, '"');
        named.append(quoted, 1, quoted.size() - 2).push_back('"');
        return Refused(s, face, named);
      }
      break;
    case OptionType::kText:
      if (const std::string* t = std::get_if<std::string>(&v)) {
        if (s.takes && !s.takes(*t)) return Refused(s, face, QuoteUserText(*t));
        return Status::Ok();
      }
      break;
    case OptionType::kCounts:
      if (const auto* list = std::get_if<std::vector<uint64_t>>(&v)) {
        bool ok = list->size() >= s.min_items && list->size() <= s.max_items;
        for (uint64_t u : *list) {
          ok = ok && u <= s.max_int && (s.min_int <= 0 || u >= static_cast<uint64_t>(s.min_int));
        }
        if (!ok) return Refused(s, face, OptionValueText(s, v));
        return Status::Ok();
      }
      break;
    case OptionType::kTexts:
      if (std::holds_alternative<std::vector<std::string>>(v)) return Status::Ok();
      break;
  }
  return Status::Usage(OptionName(s, face) + " must be " + OptionRuleText(s));
}

std::string OptionValueText(const OptionSpec& s, const OptionValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) {
    if (s.type == OptionType::kOnOff) return *b ? "on" : "off";
    return *b ? "true" : "false";
  }
  if (const uint64_t* u = std::get_if<uint64_t>(&v)) return IntText(s, *u);
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) return ShortestNumber(*d, s.single_precision);
  if (const std::string* t = std::get_if<std::string>(&v)) return *t;
  std::string out;
  if (const auto* counts = std::get_if<std::vector<uint64_t>>(&v)) {
    for (uint64_t u : *counts) {
      if (!out.empty()) out += ',';
      out += std::to_string(u);
    }
    return out;
  }
  if (const auto* texts = std::get_if<std::vector<std::string>>(&v)) {
    for (const std::string& t : *texts) {
      if (!out.empty()) out += ' ';
      out += t;
    }
    return out;
  }
  for (double d : std::get<std::vector<double>>(v)) {
    if (!out.empty()) out += ',';
    out += ShortestNumber(d, s.single_precision);
  }
  return out;
}

}  // namespace rf
