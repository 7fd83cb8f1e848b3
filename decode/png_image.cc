#include "decode/png_image.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "decode/png_library.h"

namespace rf {
namespace {

uint32_t Be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

std::string Side(uint32_t h, uint32_t w) { return std::to_string(w) + "x" + std::to_string(h); }

// Whether the standard pairs bit depth d with colour type t (PNG 1.2, table 11.1).
bool DepthFits(uint8_t t, uint8_t d) {
  switch (t) {
    case 0:
      return d == 1 || d == 2 || d == 4 || d == 8 || d == 16;
    case 3:
      return d == 1 || d == 2 || d == 4 || d == 8;
    case 2:
    case 4:
    case 6:
      return d == 8 || d == 16;
    default:
      return false;
  }
}

// The loaded library, for the callbacks and the destructor below: they run only once a read
// structure exists, so only after ReadPngRows found the library loaded.
const PngApi& Png() { return *PngLibrary().value(); }

// One decode's state, reached from libpng's callbacks through png_get_io_ptr and
// png_get_error_ptr: the bytes, how far they are read, and the error's message.
struct PngInput {
  const uint8_t* data = nullptr;
  size_t n = 0, at = 0;
  char message[160] = {0};
};

[[noreturn]] void OnError(png_structp png, png_const_charp what) {
  auto* in = static_cast<PngInput*>(Png().get_error_ptr(png));
  std::snprintf(in->message, sizeof in->message, "%s", what);
  Png().longjmp(png, 1);
  std::abort();  // png_longjmp does not return
}

void OnWarning(png_structp, png_const_charp) {}  // ancillary trouble: the pixels are whole

void OnRead(png_structp png, png_bytep to, size_t bytes) {
  auto* in = static_cast<PngInput*>(Png().get_io_ptr(png));
  if (in->n - in->at < bytes) {
    std::snprintf(in->message, sizeof in->message, "the data ends at byte %zu, inside a chunk",
                  in->n);
    Png().longjmp(png, 1);
  }
  std::memcpy(to, in->data + in->at, bytes);
  in->at += bytes;
}

// The chunks a decode does not read: libpng discards them as unknown, unparsed (their text,
// profiles and palettes' histograms are nothing the pixels need; a zTXt's or iCCP's inflation is
// work and memory for nothing).
const png_byte kSkipped[] =
    "bKGD\0cHRM\0eXIf\0gAMA\0hIST\0iCCP\0iTXt\0oFFs\0pCAL\0pHYs\0sBIT\0"
    "sCAL\0sPLT\0sRGB\0sTER\0tEXt\0tIME\0zTXt\0tRNS";
constexpr int kSkippedCount = 19;  // the last, tRNS, read where the alpha is kept

// libpng's read and info structures, destroyed with this.
struct PngRead {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngRead() {
    if (png != nullptr) Png().destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

}  // namespace

const char* PngColorTypeName(uint8_t t) {
  switch (t) {
    case 0:
      return "grey";
    case 2:
      return "RGB";
    case 3:
      return "palette";
    case 4:
      return "grey + alpha";
    case 6:
      return "RGBA";
    default:
      return "unknown";
  }
}

std::string ReadPngHeader(const uint8_t* data, size_t n, uint32_t max_side, PngHeader* h) {
  if (n < 8 || std::memcmp(data, kPngSignature, 8) != 0) return "no PNG signature";
  // The IHDR chunk: length 13, type, 13 bytes, CRC.
  if (n < 8 + 8 + 13) return "truncated: the data ends inside the IHDR chunk";
  if (std::memcmp(data + 12, "IHDR", 4) != 0) return "no IHDR chunk first";
  if (Be32(data + 8) != 13)
    return "an IHDR chunk of " + std::to_string(Be32(data + 8)) + " bytes, not 13";
  const uint8_t* p = data + 16;
  h->width = Be32(p);
  h->height = Be32(p + 4);
  h->bit_depth = p[8];
  h->color_type = p[9];
  if (h->width == 0 || h->height == 0 || h->width > 0x7fffffffu || h->height > 0x7fffffffu)
    return "an IHDR of " + Side(h->height, h->width) + " pixels";
  if (h->width > max_side || h->height > max_side) {
    return "an IHDR of " + Side(h->height, h->width) + " pixels, more than max_image_side " +
           std::to_string(max_side) + " a side";
  }
  if (!DepthFits(h->color_type, h->bit_depth)) {
    return "bit depth " + std::to_string(h->bit_depth) + " with colour type " +
           std::to_string(h->color_type) + " (" + PngColorTypeName(h->color_type) +
           "): no such PNG";
  }
  if (p[10] != 0) return "compression method " + std::to_string(p[10]) + ": no such PNG";
  if (p[11] != 0) return "filter method " + std::to_string(p[11]) + ": no such PNG";
  if (p[12] > 1) return "interlace method " + std::to_string(p[12]) + ": no such PNG";
  h->interlaced = p[12] == 1;
  return "";
}

std::string ReadPngRows(const uint8_t* data, size_t n, const PngHeader& h, uint32_t row_lo,
                        uint32_t row_hi, std::vector<uint8_t>* rows, bool keep_alpha,
                        uint32_t* channels) {
  const Result<const PngApi*>& loaded = PngLibrary();
  if (!loaded.ok()) return loaded.status().message();
  const PngApi& api = *loaded.value();
  PngInput in;
  in.data = data;
  in.n = n;
  PngRead r;
  r.png = api.create_read_struct(PNG_LIBPNG_VER_STRING, &in, OnError, OnWarning);
  if (r.png == nullptr) return "libpng: png_create_read_struct failed";
  r.info = api.create_info_struct(r.png);
  if (r.info == nullptr) return "libpng: png_create_info_struct failed";
  // Only libpng's C frames run between the setjmp and a longjmp; `r` and `rows` are the
  // caller's and this frame's, made before it, and destroyed normally after. (png_jmpbuf is
  // png.h's macro over png_set_longjmp_fn, here through the loaded library.)
  if (setjmp(*api.set_longjmp_fn(r.png, std::longjmp, sizeof(std::jmp_buf))) != 0)
    return std::string("libpng: ") + in.message;
  api.set_read_fn(r.png, &in, OnRead);
  api.set_user_limits(r.png, h.width, h.height);  // what ReadPngHeader read, and no more
  api.set_chunk_malloc_max(r.png, 8u << 20);
  api.set_keep_unknown_chunks(r.png, PNG_HANDLE_CHUNK_NEVER, kSkipped,
                              keep_alpha ? kSkippedCount - 1 : kSkippedCount);
  api.read_info(r.png, r.info);
  if (api.get_image_width(r.png, r.info) != h.width ||
      api.get_image_height(r.png, r.info) != h.height) {
    return "libpng read another header";
  }
  // The alpha kept: the colour type's, or a tRNS chunk's (read by png_read_info) made a channel.
  const bool alpha = keep_alpha && ((h.color_type & PNG_COLOR_MASK_ALPHA) != 0 ||
                                    api.get_valid(r.png, r.info, PNG_INFO_tRNS) != 0);
  if (h.color_type == PNG_COLOR_TYPE_PALETTE) api.set_palette_to_rgb(r.png);
  if (h.color_type == PNG_COLOR_TYPE_GRAY && h.bit_depth < 8) api.set_expand_gray_1_2_4_to_8(r.png);
  if (alpha && (h.color_type & PNG_COLOR_MASK_ALPHA) == 0) api.set_tRNS_to_alpha(r.png);
  if (alpha && (h.color_type & PNG_COLOR_MASK_COLOR) == 0) api.set_gray_to_rgb(r.png);
  if (h.bit_depth == 16) api.set_strip_16(r.png);
  if (!alpha && (h.color_type & PNG_COLOR_MASK_ALPHA) != 0) api.set_strip_alpha(r.png);
  const uint32_t c = alpha ? 4 : h.channels();
  if (channels != nullptr) *channels = c;
  const size_t pitch = size_t{h.width} * c;
  const int passes = api.set_interlace_handling(r.png);
  api.read_update_info(r.png, r.info);
  if (api.get_rowbytes(r.png, r.info) != pitch) return "libpng's rows are not the header's";
  if (passes > 1) {
    // Every pass spans the image: all of it is decoded, then the rows kept moved first.
    if (rows->size() < size_t{h.height} * pitch) rows->resize(size_t{h.height} * pitch);
    for (int pass = 0; pass < passes; ++pass) {
      for (uint32_t y = 0; y < h.height; ++y)
        api.read_row(r.png, rows->data() + y * pitch, nullptr);
    }
    std::memmove(rows->data(), rows->data() + size_t{row_lo} * pitch,
                 size_t{row_hi - row_lo} * pitch);
    return "";
  }
  if (rows->size() < size_t{row_hi - row_lo} * pitch) rows->resize(size_t{row_hi - row_lo} * pitch);
  // The rows above the crop go through its first row's place, which the crop's row then takes.
  for (uint32_t y = 0; y < row_hi; ++y) {
    api.read_row(r.png, rows->data() + size_t{y < row_lo ? 0 : y - row_lo} * pitch, nullptr);
  }
  return "";
}

Result<std::unique_ptr<PngImageDecoder>> PngImageDecoder::Create(const ImageDecodeSpec& spec) {
  RF_RETURN_IF_ERROR(spec.Validate());
  return std::unique_ptr<PngImageDecoder>(new PngImageDecoder(spec));
}

std::string PngImageDecoder::Decode(const uint8_t* data, size_t n, uint64_t epoch, uint64_t index,
                                    void* out) {
  PngHeader h;
  if (std::string why = ReadPngHeader(data, n, spec_.max_side, &h); !why.empty()) return why;
  writer_.Plan(epoch, index, h.height, h.width, 1);
  const decode::ResampleAxis& rows = writer_.rows();
  const uint32_t lo = static_cast<uint32_t>(rows.lo);
  const uint32_t hi = std::min(static_cast<uint32_t>(rows.hi), h.height);
  uint32_t channels = 0;
  if (std::string why = ReadPngRows(data, n, h, lo, hi, &rows_, spec_.channels == 4, &channels);
      !why.empty()) {
    return why;
  }
  writer_.Write(rows_.data(), size_t{h.width} * channels, 0, channels, out);
  return "";
}

}  // namespace rf
