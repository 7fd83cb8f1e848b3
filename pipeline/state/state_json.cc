#include "pipeline/state/state_json.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace rf {
namespace {

// A str as Python's repr() quotes it: in single quotes unless it holds one and no double quote,
// with backslashes, the quote and control characters escaped.
std::string StrRepr(const std::string& s) {
  const bool double_quoted = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = double_quoted ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + quote;
}

// A float as Python's repr(): the shortest text that reads back (what nlohmann writes), with
// Python's words for the values JSON has none for.
std::string FloatRepr(double d) {
  if (d != d) return "nan";
  if (d == std::numeric_limits<double>::infinity()) return "inf";
  if (d == -std::numeric_limits<double>::infinity()) return "-inf";
  return StateJson(d).dump();
}

}  // namespace

Status StateDepthStatus(const StateJson& v) {
  std::vector<std::pair<const StateJson*, size_t>> todo = {{&v, 1}};
  while (!todo.empty()) {
    const auto [x, depth] = todo.back();
    todo.pop_back();
    if (!x->is_structured()) continue;
    if (depth > kMaxStateDepth) {
      return Status::Usage("load_state_dict: malformed state: values nested more than " +
                           std::to_string(kMaxStateDepth) + " deep");
    }
    for (const StateJson& y : *x) todo.emplace_back(&y, depth + 1);
  }
  return Status::Ok();
}

std::string StateRepr(const StateJson& v) {
  switch (v.type()) {
    case StateJson::value_t::null:
      return "None";
    case StateJson::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case StateJson::value_t::number_integer:
    case StateJson::value_t::number_unsigned:
      return v.dump();
    case StateJson::value_t::number_float:
      return FloatRepr(v.get<double>());
    case StateJson::value_t::string:
      return StrRepr(v.get_ref<const std::string&>());
    case StateJson::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + StateRepr(v[i]);
      return out + "]";
    }
    case StateJson::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        out += (first ? "" : ", ") + StrRepr(key) + ": " + StateRepr(value);
        first = false;
      }
      return out + "}";
    }
    default:
      break;
  }
  return v.dump();
}

const char* StateTypeName(const StateJson& v) {
  switch (v.type()) {
    case StateJson::value_t::null:
      return "NoneType";
    case StateJson::value_t::boolean:
      return "bool";
    case StateJson::value_t::number_integer:
    case StateJson::value_t::number_unsigned:
      return "int";
    case StateJson::value_t::number_float:
      return "float";
    case StateJson::value_t::string:
      return "str";
    case StateJson::value_t::array:
      return "list";
    case StateJson::value_t::object:
      return "dict";
    default:
      break;
  }
  return "object";
}

bool SameStateType(const StateJson& a, const StateJson& b) {
  return std::string(StateTypeName(a)) == StateTypeName(b);
}

Result<uint64_t> StateWholeNumber(const std::string& name, const StateJson& v, uint64_t min,
                                  uint64_t max) {
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (whole) {
    const uint64_t n = v.get<uint64_t>();
    if (n >= min && n <= max) return n;
  }
  return Status::Usage(name + " must be a whole number from " + std::to_string(min) + " to " +
                       std::to_string(max) + ", got " + StateRepr(v));
}

}  // namespace rf
