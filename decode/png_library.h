// libpng, loaded at run time: every png_* entry point decode/png_image.cc calls, found with
// dlopen/dlsym in the system's libpng16.so.16 when the first PNG record is decoded (the pattern of
// io/remote/curl_library.h and cuda/nvjpeg_library.h).
//
// Why at run time and not linked: Debian's libpng16.a is compiled for executables: its error
// handlers reach glibc's stderr PC-relative, which the Python extension (a shared object) cannot
// link. Loading the system's own libpng16.so.16 keeps the extension and the wheel linkable, and
// only png.h is needed to build: the signatures below are the header's own (decltype of each
// declaration), so a mismatch is a compile error, and no png symbol is linked.
//
// Where it is looked for: $RINGFEED_LIBPNG (a path or a file name) if set, else libpng16.so.16
// through the dynamic loader's search. Debian's libpng16-16 provides it. Where it cannot be
// loaded, PngLibrary() says so, and each PNG record is a bad record naming why.
//
// Lifetime and threads: the library is opened once per process (the first PngLibrary() call,
// thread-safe) and never closed. The entry points are plain function pointers; libpng's calls on
// separate read structures are safe from separate threads.
#pragma once

#include <png.h>

#include <memory>
#include <string>

#include "core/status.h"

namespace rf {

struct PngApi {
  decltype(&::png_create_read_struct) create_read_struct;
  decltype(&::png_create_info_struct) create_info_struct;
  decltype(&::png_destroy_read_struct) destroy_read_struct;
  decltype(&::png_set_read_fn) set_read_fn;
  decltype(&::png_get_io_ptr) get_io_ptr;
  decltype(&::png_get_error_ptr) get_error_ptr;
  decltype(&::png_set_longjmp_fn) set_longjmp_fn;
  decltype(&::png_longjmp) longjmp;
  decltype(&::png_set_user_limits) set_user_limits;
  decltype(&::png_set_chunk_malloc_max) set_chunk_malloc_max;
  decltype(&::png_set_keep_unknown_chunks) set_keep_unknown_chunks;
  decltype(&::png_read_info) read_info;
  decltype(&::png_get_image_width) get_image_width;
  decltype(&::png_get_image_height) get_image_height;
  decltype(&::png_set_palette_to_rgb) set_palette_to_rgb;
  decltype(&::png_set_expand_gray_1_2_4_to_8) set_expand_gray_1_2_4_to_8;
  decltype(&::png_set_strip_16) set_strip_16;
  decltype(&::png_set_strip_alpha) set_strip_alpha;
  decltype(&::png_get_valid) get_valid;
  decltype(&::png_set_tRNS_to_alpha) set_tRNS_to_alpha;
  decltype(&::png_set_gray_to_rgb) set_gray_to_rgb;
  decltype(&::png_set_interlace_handling) set_interlace_handling;
  decltype(&::png_read_update_info) read_update_info;
  decltype(&::png_get_rowbytes) get_rowbytes;
  decltype(&::png_read_row) read_row;
  std::string path;  // what was opened
};

// The process's libpng (opened at the first call), or Unsupported naming what is missing: one
// result for the process, read by reference (cheap enough for libpng's callbacks to call).
const Result<const PngApi*>& PngLibrary();

}  // namespace rf
