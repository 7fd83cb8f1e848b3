#include "decode/png_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/dl_symbol.h"

namespace rf {
namespace {

constexpr const char* kSoname = "libpng16.so.16";

Result<const PngApi*> Load() {
  const char* env = std::getenv("RINGFEED_LIBPNG");
  const std::string name = env != nullptr && *env != '\0' ? env : kSoname;
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Unsupported(name + " not found (" + (why != nullptr ? why : "dlopen failed") +
                               "); install libpng16-16 (apt-get install libpng16-16), or set "
                               "RINGFEED_LIBPNG to libpng16.so.16's path");
  }
  auto api = std::make_unique<PngApi>();
  api->path = name;
  std::string missing;
  const bool all =
      BindSymbol(lib, "png_create_read_struct", &api->create_read_struct, &missing) &&
      BindSymbol(lib, "png_create_info_struct", &api->create_info_struct, &missing) &&
      BindSymbol(lib, "png_destroy_read_struct", &api->destroy_read_struct, &missing) &&
      BindSymbol(lib, "png_set_read_fn", &api->set_read_fn, &missing) &&
      BindSymbol(lib, "png_get_io_ptr", &api->get_io_ptr, &missing) &&
      BindSymbol(lib, "png_get_error_ptr", &api->get_error_ptr, &missing) &&
      BindSymbol(lib, "png_set_longjmp_fn", &api->set_longjmp_fn, &missing) &&
      BindSymbol(lib, "png_longjmp", &api->longjmp, &missing) &&
      BindSymbol(lib, "png_set_user_limits", &api->set_user_limits, &missing) &&
      BindSymbol(lib, "png_set_chunk_malloc_max", &api->set_chunk_malloc_max, &missing) &&
      BindSymbol(lib, "png_set_keep_unknown_chunks", &api->set_keep_unknown_chunks, &missing) &&
      BindSymbol(lib, "png_read_info", &api->read_info, &missing) &&
      BindSymbol(lib, "png_get_image_width", &api->get_image_width, &missing) &&
      BindSymbol(lib, "png_get_image_height", &api->get_image_height, &missing) &&
      BindSymbol(lib, "png_set_palette_to_rgb", &api->set_palette_to_rgb, &missing) &&
      BindSymbol(lib, "png_set_expand_gray_1_2_4_to_8", &api->set_expand_gray_1_2_4_to_8,
                 &missing) &&
      BindSymbol(lib, "png_set_strip_16", &api->set_strip_16, &missing) &&
      BindSymbol(lib, "png_set_strip_alpha", &api->set_strip_alpha, &missing) &&
      BindSymbol(lib, "png_get_valid", &api->get_valid, &missing) &&
      BindSymbol(lib, "png_set_tRNS_to_alpha", &api->set_tRNS_to_alpha, &missing) &&
      BindSymbol(lib, "png_set_gray_to_rgb", &api->set_gray_to_rgb, &missing) &&
      BindSymbol(lib, "png_set_interlace_handling", &api->set_interlace_handling, &missing) &&
      BindSymbol(lib, "png_read_update_info", &api->read_update_info, &missing) &&
      BindSymbol(lib, "png_get_rowbytes", &api->get_rowbytes, &missing) &&
      BindSymbol(lib, "png_read_row", &api->read_row, &missing);
  if (!all) {
    dlclose(lib);
    return Status::Unsupported(name + " has no " + missing + ": not a libpng 1.6");
  }
  return api.release();  // never unloaded
}

}  // namespace

const Result<const PngApi*>& PngLibrary() {
  static std::once_flag once;
  static Result<const PngApi*> result = Status::Unsupported("libpng: not loaded");
  std::call_once(once, [] { result = Load(); });
  return result;
}

}  // namespace rf
