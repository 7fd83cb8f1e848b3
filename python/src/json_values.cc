#include "python/src/json_values.h"

#include <cstdint>
#include <string>

#include "python/src/status_error.h"

namespace py = pybind11;

namespace rf::python {
namespace {

[[noreturn]] void Refuse(const std::string& name, py::handle v, const std::string& why) {
  Throw(Status::Usage("load_state_dict: malformed state: " + name + " is " +
                      py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>() + " " +
                      py::repr(v).cast<std::string>() + ", " + why));
}

StateJson IntFromPython(py::handle v, const std::string& name) {
  const py::int_ n = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  if (!n) throw py::error_already_set();
  int overflow = 0;
  const long long s = PyLong_AsLongLongAndOverflow(n.ptr(), &overflow);
  if (overflow == 0) return StateJson(static_cast<int64_t>(s));
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(n.ptr());
    if (!PyErr_Occurred()) return StateJson(static_cast<uint64_t>(u));
    PyErr_Clear();
  }
  Refuse(name, v, "outside the 64 bits a state's whole numbers hold");
}

}  // namespace

StateJson JsonFromPython(py::handle v, const std::string& name, size_t depth) {
  if (depth > kMaxStateDepth) {
    Throw(Status::Usage("load_state_dict: malformed state: values nested more than " +
                        std::to_string(kMaxStateDepth) + " deep"));
  }
  if (v.is_none()) return StateJson();
  if (PyBool_Check(v.ptr())) return StateJson(v.ptr() == Py_True);
  if (PyFloat_Check(v.ptr())) return StateJson(PyFloat_AsDouble(v.ptr()));
  if (PyUnicode_Check(v.ptr())) return StateJson(v.cast<std::string>());
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    StateJson out = StateJson::array();
    size_t i = 0;
    for (py::handle item : v) out.push_back(JsonFromPython(item, name + "[" + std::to_string(i++) + "]", depth + 1));
    return out;
  }
  if (PyDict_Check(v.ptr())) {
    StateJson out = StateJson::object();
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(v)) {
      if (!PyUnicode_Check(key.ptr())) Refuse(name + " key", key, "not str");
      const std::string k = key.cast<std::string>();
      out[k] = JsonFromPython(value, name == "the state" ? k : name + "['" + k + "']", depth + 1);
    }
    return out;
  }
  if (PyLong_Check(v.ptr()) || PyIndex_Check(v.ptr())) return IntFromPython(v, name);
  Refuse(name, v, "which a state does not hold");
}

py::object PythonFromJson(const StateJson& v) {
  switch (v.type()) {
    case StateJson::value_t::null:
      return py::none();
    case StateJson::value_t::boolean:
      return py::bool_(v.get<bool>());
    case StateJson::value_t::number_integer:
      return py::int_(v.get<int64_t>());
    case StateJson::value_t::number_unsigned:
      return py::int_(v.get<uint64_t>());
    case StateJson::value_t::number_float:
      return py::float_(v.get<double>());
    case StateJson::value_t::string:
      return py::str(v.get_ref<const std::string&>());
    case StateJson::value_t::array: {
      py::list out;
      for (const StateJson& x : v) out.append(PythonFromJson(x));
      return out;
    }
    case StateJson::value_t::object: {
      py::dict out;
      for (const auto& [key, value] : v.items()) out[py::str(key)] = PythonFromJson(value);
      return out;
    }
    default:
      break;
  }
  return py::none();
}

}  // namespace rf::python
