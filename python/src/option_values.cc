#include "python/src/option_values.h"

#include <pybind11/stl.h>

#include <type_traits>
#include <variant>

namespace py = pybind11;

namespace rf::python {
namespace {

// A Python bool, or NumPy's: numpy.bool_ (NumPy 1), whose type NumPy 2 names numpy.bool.
bool IsBool(py::handle v) {
  if (PyBool_Check(v.ptr())) return true;
  const py::handle type = py::type::handle_of(v);
  const std::string name = py::str(type.attr("__name__")).cast<std::string>();
  return (name == "bool_" || name == "bool") &&
         py::str(type.attr("__module__")).cast<std::string>() == "numpy";
}

[[noreturn]] void WrongType(const OptionSpec& s, py::handle v) {
  const bool flag = s.type == OptionType::kSwitch || s.type == OptionType::kOnOff;
  // Python's repr escapes what is not printable; a long one is cut.
  std::string shown = py::repr(v).cast<std::string>();
  if (shown.size() > 80) shown = shown.substr(0, 80) + "...";
  Throw(Status::Usage(OptionName(s, OptionFace::kPython) + " must be " +
                      (flag ? "True or False" : OptionRuleText(s)) + ", got " + shown));
}

// An integer, Python's or NumPy's (anything with __index__ but a bool), as a value of `s`.
OptionValue IntegerFromPython(const OptionSpec& s, py::handle v) {
  if (IsBool(v) || !PyIndex_Check(v.ptr())) WrongType(s, v);
  const py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow == 0) {
    return n < 0 ? OptionValue(static_cast<int64_t>(n)) : OptionValue(static_cast<uint64_t>(n));
  }
  const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
  if (overflow < 0 || PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    WrongType(s, v);
  }
  return static_cast<uint64_t>(u);
}

double NumberFromPython(const OptionSpec& s, py::handle v) {
  if (IsBool(v) || PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()) ||
      !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()) || py::hasattr(v, "__float__"))) {
    WrongType(s, v);
  }
  const double d = PyFloat_AsDouble(v.ptr());
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    WrongType(s, v);
  }
  return d;
}

}  // namespace

OptionValue FromPython(const OptionSpec& s, py::handle v) {
  switch (s.type) {
    case OptionType::kSwitch:
    case OptionType::kOnOff:
      if (!IsBool(v)) WrongType(s, v);
      return static_cast<bool>(PyObject_IsTrue(v.ptr()));
    case OptionType::kCount:
    case OptionType::kInteger:
      return IntegerFromPython(s, v);
    case OptionType::kNumber:
      return NumberFromPython(s, v);
    case OptionType::kNumbers: {
      if (PyUnicode_Check(v.ptr()) || !py::isinstance<py::iterable>(v)) WrongType(s, v);
      std::vector<double> out;
      for (py::handle item : py::reinterpret_borrow<py::iterable>(v)) {
        out.push_back(NumberFromPython(s, item));
      }
      return out;
    }
    case OptionType::kCounts: {
      std::vector<uint64_t> out;
      py::object list = py::reinterpret_borrow<py::object>(v);
      if (PyIndex_Check(v.ptr()) && !IsBool(v)) list = py::make_tuple(list);  // one int: a list
      if (PyUnicode_Check(v.ptr()) || !py::isinstance<py::iterable>(list)) WrongType(s, v);
      for (py::handle item : py::reinterpret_borrow<py::iterable>(list)) {
        const OptionValue n = IntegerFromPython(s, item);
        if (!std::holds_alternative<uint64_t>(n)) WrongType(s, v);
        out.push_back(std::get<uint64_t>(n));
      }
      return out;
    }
    case OptionType::kTexts: {
      std::vector<std::string> out;
      if (PyUnicode_Check(v.ptr()) || !py::isinstance<py::iterable>(v)) WrongType(s, v);
      for (py::handle item : py::reinterpret_borrow<py::iterable>(v)) {
        if (!PyUnicode_Check(item.ptr())) WrongType(s, v);
        out.push_back(item.cast<std::string>());
      }
      return out;
    }
    case OptionType::kByteSize:
      if (PyUnicode_Check(v.ptr())) {
        return Take(ParseOptionText(s, v.cast<std::string>(), OptionFace::kPython));
      }
      return IntegerFromPython(s, v);
    case OptionType::kWord:
      if (IsBool(v) && !s.true_word.empty()) {
        return PyObject_IsTrue(v.ptr()) ? s.true_word : s.false_word;
      }
      if (!PyUnicode_Check(v.ptr())) WrongType(s, v);
      return v.cast<std::string>();
    case OptionType::kText:
      if (!PyUnicode_Check(v.ptr())) WrongType(s, v);
      return v.cast<std::string>();
  }
  WrongType(s, v);
}

py::object ToPython(const OptionSpec& s, const OptionValue& v) {
  if (s.type == OptionType::kByteSize) return py::str(OptionValueText(s, v));
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return py::bool_(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return py::str(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>> ||
                             std::is_same_v<T, std::vector<uint64_t>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          return py::cast(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return py::float_(x);
        } else {
          return py::int_(x);
        }
      },
      v);
}

namespace {

const char* TypeName(OptionType t) {
  switch (t) {
    case OptionType::kSwitch:
    case OptionType::kOnOff:
      return "bool";
    case OptionType::kCount:
    case OptionType::kInteger:
      return "int";
    case OptionType::kNumber:
      return "float";
    case OptionType::kNumbers:
      return "Sequence[float]";
    case OptionType::kCounts:
      return "Sequence[int]";
    case OptionType::kTexts:
      return "Sequence[str]";
    case OptionType::kByteSize:
      return "Union[int, str]";
    case OptionType::kWord:
    case OptionType::kText:
      break;
  }
  return "str";
}

}  // namespace

py::list OptionList(const std::vector<OptionSpec>& specs) {
  py::list out;
  for (const OptionSpec& s : specs) {
    py::dict d;
    d["name"] = OptionName(s, OptionFace::kPython);
    d["type"] = TypeName(s.type);
    d["default"] = ToPython(s, s.default_value);
    d["rule"] = OptionRuleText(s);
    d["words"] = s.words;
    d["unset"] = s.unset;
    d["help"] = s.help;
    out.append(d);
  }
  return out;
}

}  // namespace rf::python
