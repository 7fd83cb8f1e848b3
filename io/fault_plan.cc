#include "io/fault_plan.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string_view>

namespace rf {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// A whole decimal number, nothing after it.
std::optional<uint64_t> Number(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// A number that fits 32 bits and is at least 1.
std::optional<uint32_t> Count(std::string_view s) {
  const std::optional<uint64_t> v = Number(s);
  if (!v || *v == 0 || *v >= ReadFault::kAlways) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

// "200ms" or "2s".
std::optional<std::chrono::milliseconds> Duration(std::string_view s) {
  uint64_t scale = 0;
  if (s.ends_with("ms")) {
    scale = 1;
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    scale = 1000;
    s.remove_suffix(1);
  }
  const std::optional<uint64_t> v = Number(s);
  if (scale == 0 || !v || *v > 3600 * 1000 / scale) return std::nullopt;
  return std::chrono::milliseconds(*v * scale);
}

// Whether `s` is `key=VALUE`; sets *value.
bool Keyed(std::string_view s, std::string_view key, std::string_view* value) {
  if (s.size() <= key.size() || !s.starts_with(key) || s[key.size()] != '=') return false;
  *value = s.substr(key.size() + 1);
  return true;
}

Status Bad(std::string_view rule, const std::string& why) {
  return Status::Usage(std::string(kFaultsEnv) + ": rule \"" + std::string(rule) + "\": " + why);
}

// The fault a rule's kind names (before any '@').
Result<ReadFault> ParseKind(std::string_view rule, std::string_view kind) {
  ReadFault f;
  std::string_view v;
  if (kind == "eio" || kind == "eagain" || kind == "eintr") {
    f.kind = ReadFault::Kind::kError;
    f.err = kind == "eio" ? EIO : kind == "eagain" ? EAGAIN : EINTR;
  } else if (Keyed(kind, "short", &v)) {
    const std::optional<uint32_t> n = Count(v);
    if (!n) return Bad(rule, "short= takes a byte count of at least 1");
    f.kind = ReadFault::Kind::kShort;
    f.short_bytes = *n;
  } else if (Keyed(kind, "delay", &v)) {
    const auto d = Duration(v);
    if (!d) return Bad(rule, "delay= takes a duration such as 200ms or 2s (at most an hour)");
    f.kind = ReadFault::Kind::kDelay;
    f.delay = *d;
  } else {
    return Bad(rule, "unknown read fault \"" + std::string(kind) +
                         "\": expected eio, eagain, eintr, short=BYTES, delay=TIME or reorder");
  }
  return f;
}

// Applies one "key=value" condition to `f`.
Status ParseCondition(std::string_view rule, std::string_view cond, bool* counted, ReadFault* f) {
  std::string_view v;
  if (Keyed(cond, "chunk", &v)) {
    if (f->chunk) return Bad(rule, "chunk= given twice");
    f->chunk = Number(v);
    if (!f->chunk) return Bad(rule, "chunk= takes a chunk number");
  } else if (Keyed(cond, "attempt", &v) || Keyed(cond, "times", &v) || Keyed(cond, "after", &v)) {
    if (*counted) return Bad(rule, "give one of attempt=, times= and after=, once");
    *counted = true;
    const std::string_view key = cond.substr(0, cond.find('='));
    if (key == "times" && v == "always") {
      f->first = 1;
      f->last = ReadFault::kAlways;
      return Status::Ok();
    }
    const std::optional<uint32_t> n = Count(v);
    if (!n) {
      return Bad(rule, std::string(key) + "= takes a number of at least 1" +
                           (key == "times" ? " or always" : ""));
    }
    f->first = key == "times" ? 1 : key == "after" ? *n + 1 : *n;
    f->last = key == "after" ? ReadFault::kAlways : *n;
  } else {
    return Bad(rule, "unknown condition \"" + std::string(cond) +
                         "\": expected chunk=N, attempt=N, times=N|always or after=N");
  }
  return Status::Ok();
}

// "write:ERROR@path=TEXT" or "fsync:ERROR@path=TEXT".
Result<FileFault> ParseFileRule(std::string_view rule) {
  FileFault f;
  f.op = rule.starts_with("write:") ? FileFault::Op::kWrite : FileFault::Op::kFsync;
  const std::string_view body = rule.substr(6);
  const size_t at = body.find("@path=");
  if (at == std::string_view::npos || at + 6 == body.size()) {
    return Bad(rule, "expected " + std::string(rule.substr(0, 6)) + "ERROR@path=TEXT");
  }
  const std::string_view error = body.substr(0, at);
  f.err = error == "enospc" ? ENOSPC : error == "eio" ? EIO : error == "efbig" ? EFBIG : 0;
  if (f.err == 0) {
    return Bad(rule, "unknown error \"" + std::string(error) + "\": expected enospc, eio or efbig");
  }
  f.path_part = std::string(body.substr(at + 6));
  return f;
}

}  // namespace

int FaultPlan::FileError(FileFault::Op op, const std::string& path) const {
  for (const FileFault& f : files) {
    if (f.op == op && path.find(f.path_part) != std::string::npos) return f.err;
  }
  return 0;
}

const ReadFault* FaultPlan::Match(uint64_t chunk, uint32_t attempt) const {
  for (const ReadFault& f : reads) {
    if (f.Matches(chunk, attempt)) return &f;
  }
  return nullptr;
}

std::string FaultPlan::ToString() const {
  std::string out;
  for (const ReadFault& f : reads) {
    if (!out.empty()) out += ';';
    out += "read:";
    switch (f.kind) {
      case ReadFault::Kind::kError:
        out += f.err == EIO ? "eio" : f.err == EAGAIN ? "eagain" : "eintr";
        break;
      case ReadFault::Kind::kShort:
        out += "short=" + std::to_string(f.short_bytes);
        break;
      case ReadFault::Kind::kDelay:
        out += "delay=" + std::to_string(f.delay.count()) + "ms";
        break;
    }
    out += '@';
    if (f.chunk) out += "chunk=" + std::to_string(*f.chunk) + ",";
    if (f.last == ReadFault::kAlways) {
      out += f.first == 1 ? "times=always" : "after=" + std::to_string(f.first - 1);
    } else if (f.first == 1) {
      out += "times=" + std::to_string(f.last);
    } else {
      out += "attempt=" + std::to_string(f.first);
    }
  }
  if (reorder) out += out.empty() ? "read:reorder" : ";read:reorder";
  for (const FileFault& f : files) {
    if (!out.empty()) out += ';';
    out += f.op == FileFault::Op::kWrite ? "write:" : "fsync:";
    out += f.err == ENOSPC ? "enospc" : f.err == EIO ? "eio" : "efbig";
    out += "@path=" + f.path_part;
  }
  return out;
}

Result<FaultPlan> ParseFaultPlan(const std::string& spec) {
  FaultPlan plan;
  if (spec.empty()) return plan;
  for (std::string_view rule : Split(spec, ';')) {
    std::string_view body;
    if (rule.starts_with("write:") || rule.starts_with("fsync:")) {
      RF_ASSIGN_OR_RETURN(FileFault f, ParseFileRule(rule));
      plan.files.push_back(std::move(f));
      continue;
    }
    if (!rule.starts_with("read:") || (body = rule.substr(5)).empty()) {
      return Bad(rule,
                 "expected read:KIND[@CONDITIONS], write:ERROR@path=TEXT or fsync:ERROR@path=TEXT");
    }
    if (body == "reorder") {
      plan.reorder = true;
      continue;
    }
    const std::vector<std::string_view> parts = Split(body, '@');
    if (parts.size() > 2) return Bad(rule, "more than one '@'");
    if (parts[0] == "reorder") return Bad(rule, "reorder takes no conditions");
    RF_ASSIGN_OR_RETURN(ReadFault f, ParseKind(rule, parts[0]));
    if (parts.size() == 2) {
      bool counted = false;
      for (std::string_view cond : Split(parts[1], ',')) {
        RF_RETURN_IF_ERROR(ParseCondition(rule, cond, &counted, &f));
      }
    }
    plan.reads.push_back(f);
  }
  return plan;
}

namespace {

std::mutex test_spec_mu;
std::optional<std::string> test_spec;  // guarded by test_spec_mu

}  // namespace

void SetFaultSpecForTesting(std::optional<std::string> spec) {
  std::lock_guard<std::mutex> lock(test_spec_mu);
  test_spec = std::move(spec);
}

Result<std::optional<FaultPlan>> FaultPlanFromEnv() {
  std::string spec;
  {
    std::lock_guard<std::mutex> lock(test_spec_mu);
    if (test_spec) {
      spec = *test_spec;
    } else if (const char* env = std::getenv(kFaultsEnv)) {
      spec = env;
    }
  }
  if (spec.empty()) return std::optional<FaultPlan>{};
  RF_ASSIGN_OR_RETURN(FaultPlan plan, ParseFaultPlan(spec));
  return std::optional<FaultPlan>(std::move(plan));
}

}  // namespace rf
