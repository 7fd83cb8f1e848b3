// nvJPEG, loaded at run time: the few entry points the GPU image decoder (pipeline/
// nvjpeg_image_decoder.cc) calls, found with dlopen/dlsym in libnvjpeg.so.13 when a GPU loader
// first asks for them.
//
// Why at run time and not linked: the machines that build ringfeed (and CI's) have a CUDA
// without nvJPEG (no nvjpeg.h, no libnvjpeg), while the GPU machines that run it have one. A
// build that declared these calls itself and linked nothing compiles everywhere, and a binary
// or wheel built without nvJPEG still uses it where it is installed (DALI loads its CUDA
// libraries the same way). The declarations below are nvJPEG's C ABI as CUDA 13's nvjpeg.h
// gives it (the types, the enum values, the signatures); tests/cuda/nvjpeg_abi_check.cc
// checks them against the real header where one is installed (on the GPU machine).
//
// Where it is looked for: $RINGFEED_NVJPEG (a path to the library) if set, else
// libnvjpeg.so.13 through the dynamic loader's search (LD_LIBRARY_PATH, the ld cache), else
// under $CUDA_HOME, /usr/local/cuda and /usr/local/cuda-13.0 (lib64 and
// targets/x86_64-linux/lib).
//
// Lifetime and threads: the library is opened once per process (the first Nvjpeg() call,
// thread-safe) and never closed; the entry points are plain function pointers, as thread-safe
// as nvJPEG makes each call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "core/status.h"

namespace rf::cuda::nvjpeg {

// nvjpeg.h's types, under our own names (nvjpegStatus_t, nvjpegBackend_t, ...).
using Code = int;  // nvjpegStatus_t: 0 success
inline constexpr Code kSuccess = 0;
enum Backend : int {  // nvjpegBackend_t
  kBackendDefault = 0,
  kBackendHybrid = 1,
  kBackendGpuHybrid = 2,
  kBackendHardware = 3,
};
enum OutputFormat : int {     // nvjpegOutputFormat_t
  kOutputRgbInterleaved = 5,  // NVJPEG_OUTPUT_RGBI: channel[0], pitch[0] >= 3 x width
};
using ChromaSubsampling = int;  // nvjpegChromaSubsampling_t
inline constexpr int kMaxComponents = 4;
struct Image {  // nvjpegImage_t
  unsigned char* channel[kMaxComponents];
  size_t pitch[kMaxComponents];
};
struct HandleOpaque;
using Handle = HandleOpaque*;  // nvjpegHandle_t
struct StateOpaque;
using State = StateOpaque*;  // nvjpegJpegState_t
struct StreamOpaque;
using Stream = StreamOpaque*;  // nvjpegJpegStream_t

struct Api {
  Code (*CreateEx)(int backend, void* dev_allocator, void* pinned_allocator, unsigned flags,
                   Handle* handle);
  Code (*Destroy)(Handle);
  Code (*JpegStateCreate)(Handle, State*);
  Code (*JpegStateDestroy)(State);
  Code (*JpegStreamCreate)(Handle, Stream*);
  Code (*JpegStreamDestroy)(Stream);
  Code (*JpegStreamParseHeader)(Handle, const unsigned char* data, size_t length, Stream);
  Code (*DecodeBatchedSupported)(Handle, Stream, int* is_supported);
  Code (*DecodeBatchedInitialize)(Handle, State, int batch_size, int max_cpu_threads,
                                  int output_format);
  Code (*DecodeBatched)(Handle, State, const unsigned char* const* data, const size_t* lengths,
                        Image* destinations, cudaStream_t stream);
  std::string path;  // the library that was loaded
};

// The entry points, or Unsupported naming where the library was looked for and why it did not
// load (or which entry point it lacks). Loaded on the first call; later calls answer the same.
Result<const Api*> Library();

// nvJPEG's name for a status code ("NVJPEG_STATUS_BAD_JPEG", ...), or its number.
std::string CodeName(Code c);

}  // namespace rf::cuda::nvjpeg
