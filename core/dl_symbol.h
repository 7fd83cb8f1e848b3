// BindSymbol: one entry point of a library opened with dlopen, into a typed function pointer:
// how the libraries loaded at run time (nvJPEG, cuda/nvjpeg_library.cc; libcurl,
// io/remote/curl_library.cc) bind theirs, each slot typed by the library's own declaration.
//
// Thread safety: as dlsym's.
#pragma once

#include <dlfcn.h>

#include <string>

namespace rf {

// Sets *slot to `name` in `lib` and returns true; false with *missing = name where the library
// has no such symbol (*slot untouched).
template <typename F>
bool BindSymbol(void* lib, const char* name, F* slot, std::string* missing) {
  void* f = dlsym(lib, name);
  if (f == nullptr) {
    *missing = name;
    return false;
  }
  *slot = reinterpret_cast<F>(f);
  return true;
}

}  // namespace rf
