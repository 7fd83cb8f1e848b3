#include "cuda/nvjpeg_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/dl_symbol.h"

namespace rf::cuda::nvjpeg {
namespace {

constexpr const char* kSoname = "libnvjpeg.so.13";

// Where the library is looked for, in order (the header's list).
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* p = std::getenv("RINGFEED_NVJPEG"); p != nullptr && *p != '\0') {
    out.push_back(p);
    return out;
  }
  out.push_back(kSoname);
  std::vector<std::string> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  roots.push_back("/usr/local/cuda-13.0");
  for (const std::string& r : roots) {
    out.push_back(r + "/lib64/" + kSoname);
    out.push_back(r + "/targets/x86_64-linux/lib/" + kSoname);
  }
  return out;
}

Result<const Api*> Load() {
  static Api api;
  std::string tried;
  void* lib = nullptr;
  for (const std::string& c : Candidates()) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      api.path = c;
      break;
    }
    const char* why = dlerror();
    if (tried.empty()) tried = std::string(why != nullptr ? why : c.c_str());
  }
  if (lib == nullptr) {
    return Status::Unsupported(
        "nvJPEG is not installed where ringfeed looks (" + tried +
        "; set RINGFEED_NVJPEG to libnvjpeg.so.13's path, or decode on CPU threads)");
  }
  std::string missing;
  const bool all =
      BindSymbol(lib, "nvjpegCreateEx", &api.CreateEx, &missing) &&
      BindSymbol(lib, "nvjpegDestroy", &api.Destroy, &missing) &&
      BindSymbol(lib, "nvjpegJpegStateCreate", &api.JpegStateCreate, &missing) &&
      BindSymbol(lib, "nvjpegJpegStateDestroy", &api.JpegStateDestroy, &missing) &&
      BindSymbol(lib, "nvjpegJpegStreamCreate", &api.JpegStreamCreate, &missing) &&
      BindSymbol(lib, "nvjpegJpegStreamDestroy", &api.JpegStreamDestroy, &missing) &&
      BindSymbol(lib, "nvjpegJpegStreamParseHeader", &api.JpegStreamParseHeader, &missing) &&
      BindSymbol(lib, "nvjpegDecodeBatchedSupported", &api.DecodeBatchedSupported, &missing) &&
      BindSymbol(lib, "nvjpegDecodeBatchedInitialize", &api.DecodeBatchedInitialize, &missing) &&
      BindSymbol(lib, "nvjpegDecodeBatched", &api.DecodeBatched, &missing);
  if (!all) {
    dlclose(lib);
    return Status::Unsupported(api.path + " has no " + missing + ": not the nvJPEG of CUDA 13");
  }
  return &api;
}

}  // namespace

Result<const Api*> Library() {
  static std::once_flag once;
  static Result<const Api*> loaded = Status::Unsupported("nvJPEG: not loaded");
  std::call_once(once, [] { loaded = Load(); });
  return loaded;
}

std::string CodeName(Code c) {
  static const char* const kNames[] = {"NVJPEG_STATUS_SUCCESS",
                                       "NVJPEG_STATUS_NOT_INITIALIZED",
                                       "NVJPEG_STATUS_INVALID_PARAMETER",
                                       "NVJPEG_STATUS_BAD_JPEG",
                                       "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
                                       "NVJPEG_STATUS_ALLOCATOR_FAILURE",
                                       "NVJPEG_STATUS_EXECUTION_FAILED",
                                       "NVJPEG_STATUS_ARCH_MISMATCH",
                                       "NVJPEG_STATUS_INTERNAL_ERROR",
                                       "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
                                       "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"};
  if (c >= 0 && c < static_cast<Code>(sizeof kNames / sizeof kNames[0])) return kNames[c];
  return "nvJPEG status " + std::to_string(c);
}

}  // namespace rf::cuda::nvjpeg
