// How a binding gives up: a failed Status thrown as StatusError, which the translator the module
// registers turns into the Python exception (module.cc's RaiseStatus, the one place).
#pragma once

#include <utility>

#include "core/status.h"

namespace rf::python {

// `buffer`: raise BufferError (the array API's error for an export that cannot be made) instead
// of the code's own exception.
struct StatusError {
  Status status;
  bool buffer = false;
};

[[noreturn]] inline void Throw(Status s, bool buffer = false) {
  throw StatusError{std::move(s), buffer};
}
inline void Check(const Status& s) {
  if (!s.ok()) Throw(s);
}
template <typename T>
T Take(Result<T> r) {
  if (!r.ok()) Throw(r.status());
  return std::move(r).value();
}

}  // namespace rf::python
