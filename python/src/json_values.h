// Python values as a loader state's JSON (pipeline/state/state_json.h) and back, value for value:
// None, bool, int (anything with __index__ but a bool: NumPy's integers too), float, str, a list
// or tuple (a list), a dict of str keys (an object, its keys in order). So a state dict is
// checked by the library (pipeline/state/loader_state.h), whose messages name each value as
// Python writes it.
//
// Thread safety: call with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "pipeline/state/state_json.h"

namespace rf::python {

// `v` as JSON. Usage "load_state_dict: malformed state: NAME ..." for what JSON does not hold: a
// value of another type, a dict key that is no str, an int outside 64 bits, values nested deeper
// than kMaxStateDepth, which it never walks (`name`: where `v` is, "the state" at the top;
// `depth`: its depth there).
StateJson JsonFromPython(pybind11::handle v, const std::string& name, size_t depth = 1);
pybind11::object PythonFromJson(const StateJson& v);

}  // namespace rf::python
