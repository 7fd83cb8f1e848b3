// The JSON values of a loader's state (pipeline/state/loader_state.h) as load_state_dict's
// messages name them: each value written as Python writes it (repr: 5, 1.0, True, 'window',
// [1, 2], {'a': 1}) with Python's type name (int, float, bool, str, list, dict, NoneType), since
// the state dict a Python caller hands over is this JSON, converted one value for one
// (python/src/json_values.h). And the range check every whole number of a state goes through.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace rf {

// A state's JSON: its objects keep their keys in the order written (state_dict()'s order).
using StateJson = nlohmann::ordered_json;

// The deepest a state's values nest: a state dict is 4 deep; more is refused (StateDepthStatus)
// before any recursive walk of it.
inline constexpr size_t kMaxStateDepth = 32;
// Usage where `v` nests deeper than kMaxStateDepth (measured without recursion).
Status StateDepthStatus(const StateJson& v);

// `v` as Python's repr() writes the value it stands for.
std::string StateRepr(const StateJson& v);
// Python's type name of the value `v` stands for.
const char* StateTypeName(const StateJson& v);
// Whether `a` and `b` are values of one Python type (any two integers are: int).
bool SameStateType(const StateJson& a, const StateJson& b);

// `v` as a whole number from `min` to `max` (no bool, no float): Usage "NAME must be a whole
// number from MIN to MAX, got REPR" otherwise.
Result<uint64_t> StateWholeNumber(const std::string& name, const StateJson& v, uint64_t min,
                                  uint64_t max);

}  // namespace rf
