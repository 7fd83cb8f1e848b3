// The words of a dtype option (OptionTable::Word over a DType field, or a std::optional<DType>
// one that is unset by default): each dtype it takes by its name, listed in the rule, and the
// other spellings ParseDType takes for it (core/dtype.h: "bf16", "u8"), taken as aliases. So
// every face of a dtype option reads it as ParseDType does.
//
// Thread safety: a function of its arguments.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace rf {

template <typename T = DType>
std::vector<std::pair<std::string, T>> DTypeWords(std::initializer_list<DType> dtypes) {
  std::vector<std::pair<std::string, T>> out;
  for (DType d : dtypes) out.emplace_back(std::string(DTypeName(d)), T(d));
  for (const DTypeSpelling& s : DTypeSpellings()) {
    if (s.name == DTypeName(s.dtype)) continue;
    for (DType d : dtypes) {
      if (d == s.dtype) out.emplace_back(std::string(s.name), T(d));
    }
  }
  return out;
}

}  // namespace rf
