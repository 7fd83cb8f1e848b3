#include "core/augment_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rf {
namespace {

constexpr uint32_t kMaxCropPad = kMaxAugmentCropPad;
constexpr double kTwo32 = 4294967296.0;

Status Bad(std::string_view item, const std::string& why) {
  return Status::Usage("--augment: '" + std::string(item) + "': " + why +
                       " (expected a comma list of crop:P, flip, erase:P, e.g. crop:4,flip)");
}

// The whole of `text` as a decimal number (digits, '.', an exponent), or false: no sign, no
// spaces, no hex (strtod reads "0x4" as 4; "crop:0x4" and "crop:+4" are both refused).
bool ParseNumber(std::string_view text, double* out) {
  if (text.empty() || text.size() > 32 || text[0] == '+' || text[0] == '-' ||
      text.find_first_not_of("0123456789.eE+-") != std::string_view::npos) {
    return false;
  }
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(s.c_str(), &end);
  return errno == 0 && end == s.c_str() + s.size() && std::isfinite(*out);
}

}  // namespace

Result<AugmentParams> ParseAugmentSpec(std::string_view spec) {
  AugmentParams p;
  if (spec.empty() || spec == "none") return p;
  bool crop = false, flip = false, erase = false;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = spec.find(',', start);
    const std::string_view item = spec.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    start = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) return Bad(item, "an empty item");
    const size_t colon = item.find(':');
    const std::string_view name = item.substr(0, colon);
    const bool has_arg = colon != std::string_view::npos;
    const std::string_view arg = has_arg ? item.substr(colon + 1) : std::string_view();
    double v = 0;
    if (name == "flip") {
      if (has_arg) return Bad(item, "flip takes no argument");
      if (flip) return Bad(item, "flip given twice");
      flip = true;
      p.flip = 1;
    } else if (name == "crop") {
      if (crop) return Bad(item, "crop given twice");
      const bool digits = !arg.empty() && arg.find_first_not_of("0123456789") == arg.npos;
      if (!has_arg || !digits || !ParseNumber(arg, &v) || v < 1 || v > kMaxCropPad) {
        return Bad(item, "crop needs a padding in pixels, a whole number from 1 to " +
                             std::to_string(kMaxCropPad));
      }
      crop = true;
      p.crop_pad = static_cast<uint32_t>(v);
    } else if (name == "erase") {
      if (erase) return Bad(item, "erase given twice");
      if (!has_arg || !ParseNumber(arg, &v) || !(v > 0) || v > 1) {
        return Bad(item, "erase needs a probability in (0, 1]");
      }
      erase = true;
      // p * 2^32 rounded, at least 1 (a positive p erases sometimes).
      p.erase_threshold = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(v * kTwo32)));
    } else {
      return Bad(item, "unknown transform '" + std::string(name) + "'");
    }
  }
  return p;
}

std::string AugmentSpecText(const AugmentParams& p) {
  std::string text;
  const auto add = [&](const std::string& item) { text += (text.empty() ? "" : ",") + item; };
  if (p.crop_pad != 0) add("crop:" + std::to_string(p.crop_pad));
  if (p.flip != 0) add("flip");
  if (p.erase_threshold != 0) {
    char prob[32];
    std::snprintf(prob, sizeof prob, "%.9g", static_cast<double>(p.erase_threshold) / kTwo32);
    add(std::string("erase:") + prob);
  }
  return text.empty() ? "none" : text;
}

}  // namespace rf
