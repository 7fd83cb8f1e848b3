// Python values as option values and back, by the option's declared type alone
// (options/option_spec.h): what every binding that takes an option table's keyword arguments
// converts through (loaders.cc's loaders, writer.cc's DatasetWriter), so no option is named in a
// binding. The value is then checked and set by the table, its refusals UsageError naming the
// keyword.
//
// Thread safety: call with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <set>
#include <string>
#include <vector>

#include "options/option_table.h"
#include "python/src/status_error.h"

namespace rf::python {

// `v` as a value of `s`'s type: a bool for a switch (numpy's too), an int (anything with
// __index__ but a bool) for a count, a float or int for a number, a str for words and text, an
// int or a size string ("4MiB") for a byte size, a sequence for a list (one int for kCounts).
// Another type is Usage: "NAME must be RULE, got REPR". The bounds are the table's to check.
OptionValue FromPython(const OptionSpec& s, pybind11::handle v);
// A value as Python holds it; a byte size as its text ("4MiB").
pybind11::object ToPython(const OptionSpec& s, const OptionValue& v);

// The options as Python sees them: name, type, default, rule, words, what None means and the
// help, in declaration order (loader.py and writer.py make their signature and help from them).
pybind11::list OptionList(const std::vector<OptionSpec>& specs);

// The keyword arguments `kwargs` that `users` take, set through `table` into `*c` (None: the
// default): an unknown name is Usage "unknown option 'NAME'", a value off its declaration Usage
// naming it. Returns the spec names given.
template <typename Config>
std::set<std::string> SetKeywords(const OptionTable<Config>& table, uint32_t users,
                                  const pybind11::dict& kwargs, Config* c) {
  std::set<std::string> given;
  for (const auto& [key, value] : kwargs) {
    const std::string name = pybind11::str(key).cast<std::string>();
    const typename OptionTable<Config>::Entry* e = table.Find(name, OptionFace::kPython);
    if (e == nullptr || (e->spec.users & users) == 0) {
      Throw(Status::Usage("unknown option " + QuoteUserText(name)));
    }
    if (value.is_none()) continue;
    Check(table.Set(c, *e, FromPython(e->spec, value), OptionFace::kPython));
    given.insert(e->spec.name);
  }
  return given;
}

// The options `users` take, as `c` holds them, by their Python names.
template <typename Config>
pybind11::dict OptionValues(const OptionTable<Config>& table, uint32_t users, const Config& c) {
  pybind11::dict out;
  for (const auto& e : table.entries()) {
    if ((e.spec.users & users) == 0) continue;
    out[pybind11::str(OptionName(e.spec, OptionFace::kPython))] = ToPython(e.spec, e.get(c));
  }
  return out;
}

}  // namespace rf::python
