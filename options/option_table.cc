#include "options/option_table.h"

namespace rf {

std::string OptionSettingText(const OptionSpec& s, const OptionValue& v, OptionFace face) {
  const std::string text = OptionValueText(s, v);
  if (face == OptionFace::kCommandLine) return OptionName(s, face) + " " + text;
  if (const bool* b = std::get_if<bool>(&v)) return OptionName(s, face) + (*b ? "=True" : "=False");
  if (std::holds_alternative<std::string>(v)) return OptionName(s, face) + "='" + text + "'";
  return OptionName(s, face) + "=" + text;
}

Status IdleOptionStatus(const OptionSpec& idle, const OptionSpec& other, const OptionValue& value,
                        const OptionCondition& cond, OptionFace face) {
  return Status::Usage(OptionName(idle, face) + " does nothing with " +
                       OptionSettingText(other, value, face) + " (" + cond.why + "); leave it out");
}

}  // namespace rf
