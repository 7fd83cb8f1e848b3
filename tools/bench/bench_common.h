// What the benchmark programs share: the GPU check they start with, and their --json output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "io/file.h"

namespace rf {

// True where a CUDA device can be used; otherwise prints "TOOL: no CUDA device (why)".
inline bool HaveCudaDevice(const char* tool) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0) return true;
  std::fprintf(stderr, "%s: no CUDA device (%s)\n", tool,
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
  return false;
}

// Writes `doc` to `path`, indented, atomically (io/file.h); false (after printing "TOOL: <the
// error, naming PATH>") on failure.
inline bool WriteBenchJson(const std::string& path, const nlohmann::json& doc, const char* tool) {
  const Status st = WriteFileAtomically(path, doc.dump(2) + "\n");
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", tool, st.ToString().c_str());
    return false;
  }
  return true;
}

}  // namespace rf
