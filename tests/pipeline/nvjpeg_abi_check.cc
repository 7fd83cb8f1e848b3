// cuda/nvjpeg_library.h's declarations of nvJPEG's C ABI against the real nvjpeg.h, at compile
// time: every enum value, the image descriptor's layout and every entry point's signature (with
// our types for nvJPEG's). Built where nvjpeg.h is installed (the GPU machines; CMake builds it
// where it finds the header, and tools/bench/run.py's images-tests part compiles it there), so a
// mismatch is a compile error, never a wrong call.
#include <nvjpeg.h>

#include <cstddef>
#include <type_traits>

#include "cuda/nvjpeg_library.h"

namespace nj = rf::cuda::nvjpeg;

static_assert(NVJPEG_STATUS_SUCCESS == nj::kSuccess);
static_assert(NVJPEG_BACKEND_DEFAULT == nj::kBackendDefault);
static_assert(NVJPEG_BACKEND_HYBRID == nj::kBackendHybrid);
static_assert(NVJPEG_BACKEND_GPU_HYBRID == nj::kBackendGpuHybrid);
static_assert(NVJPEG_BACKEND_HARDWARE == nj::kBackendHardware);
static_assert(NVJPEG_OUTPUT_RGBI == nj::kOutputRgbInterleaved);
static_assert(NVJPEG_MAX_COMPONENT == nj::kMaxComponents);
static_assert(sizeof(nvjpegImage_t) == sizeof(nj::Image));
static_assert(offsetof(nvjpegImage_t, channel) == offsetof(nj::Image, channel));
static_assert(offsetof(nvjpegImage_t, pitch) == offsetof(nj::Image, pitch));
static_assert(sizeof(nvjpegStatus_t) == sizeof(nj::Code));
static_assert(sizeof(nvjpegBackend_t) == sizeof(int));
static_assert(sizeof(nvjpegOutputFormat_t) == sizeof(int));
static_assert(NVJPEG_STATUS_INCOMPLETE_BITSTREAM == 10);  // nj::CodeName's last name

// nvJPEG's types mapped to ours.
template <typename T>
struct Ours {
  using type = T;
};
template <>
struct Ours<nvjpegStatus_t> {
  using type = nj::Code;
};
template <>
struct Ours<nvjpegBackend_t> {
  using type = int;
};
template <>
struct Ours<nvjpegOutputFormat_t> {
  using type = int;
};
template <>
struct Ours<nvjpegHandle_t> {
  using type = nj::Handle;
};
template <>
struct Ours<nvjpegHandle_t*> {
  using type = nj::Handle*;
};
template <>
struct Ours<nvjpegJpegState_t> {
  using type = nj::State;
};
template <>
struct Ours<nvjpegJpegState_t*> {
  using type = nj::State*;
};
template <>
struct Ours<nvjpegJpegStream_t> {
  using type = nj::Stream;
};
template <>
struct Ours<nvjpegJpegStream_t*> {
  using type = nj::Stream*;
};
template <>
struct Ours<nvjpegImage_t*> {
  using type = nj::Image*;
};
template <>
struct Ours<nvjpegDevAllocator_t*> {
  using type = void*;
};
template <>
struct Ours<nvjpegPinnedAllocator_t*> {
  using type = void*;
};
template <typename R, typename... A>
struct Ours<R (*)(A...)> {
  using type = typename Ours<R>::type (*)(typename Ours<A>::type...);
};

#define RF_SAME_ENTRY(ours, theirs)                                                     \
  static_assert(std::is_same_v<decltype(nj::Api::ours), Ours<decltype(&theirs)>::type>, \
                #theirs "'s signature differs from nvjpeg_library.h's")

RF_SAME_ENTRY(CreateEx, nvjpegCreateEx);
RF_SAME_ENTRY(Destroy, nvjpegDestroy);
RF_SAME_ENTRY(JpegStateCreate, nvjpegJpegStateCreate);
RF_SAME_ENTRY(JpegStateDestroy, nvjpegJpegStateDestroy);
RF_SAME_ENTRY(JpegStreamCreate, nvjpegJpegStreamCreate);
RF_SAME_ENTRY(JpegStreamDestroy, nvjpegJpegStreamDestroy);
RF_SAME_ENTRY(JpegStreamParseHeader, nvjpegJpegStreamParseHeader);
RF_SAME_ENTRY(DecodeBatchedSupported, nvjpegDecodeBatchedSupported);
RF_SAME_ENTRY(DecodeBatchedInitialize, nvjpegDecodeBatchedInitialize);
RF_SAME_ENTRY(DecodeBatched, nvjpegDecodeBatched);

int main() { return 0; }
