#include "io/remote/aws_config_file.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rf {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const AwsSettings* AwsConfigFile::Find(std::string_view name) const {
  auto it = sections.find(name);
  return it == sections.end() ? nullptr : &it->second;
}

Result<AwsConfigFile> ParseAwsConfigFile(std::string_view text, const std::string& path) {
  AwsConfigFile file;
  file.path = path;
  AwsSettings* section = nullptr;
  std::string nested;  // the key whose empty value opened nested settings, or empty
  size_t line_no = 0;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view raw = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    auto bad = [&](const char* why) {  // never the line's text: it may hold a secret
      return Status::InvalidArgument(path + ":" + std::to_string(line_no) + ": " + why);
    };
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    bool indented = std::isspace(static_cast<unsigned char>(raw.front()));
    if (line.front() == '[') {
      if (line.back() != ']') return bad("a section header without its ']'");
      section = &file.sections[std::string(Trim(line.substr(1, line.size() - 2)))];
      nested.clear();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad("not a 'key = value' line");
    if (section == nullptr) return bad("a setting before any [section]");
    std::string key = Lower(Trim(line.substr(0, eq)));
    std::string_view value = Trim(line.substr(eq + 1));
    if (key.empty()) return bad("a setting without a key");
    if (indented && !nested.empty()) {
      (*section)[nested + "." + key] = std::string(value);
      continue;
    }
    nested = value.empty() ? key : std::string();
    (*section)[key] = std::string(value);
  }
  return file;
}

Result<AwsConfigFile> ReadAwsConfigFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT || errno == ENOTDIR) {
      AwsConfigFile none;
      none.path = path;
      return none;
    }
    int err = errno;
    return Status::IOError(path, std::string("cannot be read: ") + std::strerror(err), err);
  }
  std::stringstream s;
  s << f.rdbuf();
  if (f.bad()) return Status::IOError(path, "cannot be read");
  return ParseAwsConfigFile(s.str(), path);
}

std::string AwsProfileSection(std::string_view profile, bool config_file) {
  if (!config_file || profile == "default") return std::string(profile);
  return "profile " + std::string(profile);
}

}  // namespace rf
