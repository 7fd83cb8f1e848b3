#include "decode/jpeg_encode.h"

#include <algorithm>
#include <csetjmp>
#include <new>

#include "decode/jpeg_errors.h"

// clang-format off
#include <jerror.h>
// clang-format on

namespace rf {
namespace {

// libjpeg's destination: the caller's vector, grown by doubling as libjpeg fills it (mgr first,
// so libjpeg's pointer is both).
struct VectorDestination {
  jpeg_destination_mgr mgr;
  std::vector<uint8_t>* out;

  // Grows *out to at least `size` bytes; an allocation that fails is libjpeg's out-of-memory
  // error (a longjmp to the caller's setjmp), never an exception through libjpeg's C frames.
  static void Grow(j_compress_ptr c, std::vector<uint8_t>* out, size_t size) {
    try {
      out->resize(size);
    } catch (const std::bad_alloc&) {
      ERREXIT1(c, JERR_OUT_OF_MEMORY, 0);
    }
  }
  static void Init(j_compress_ptr c) {
    auto* d = reinterpret_cast<VectorDestination*>(c->dest);
    Grow(c, d->out, std::max<size_t>(d->out->capacity(), size_t{64} << 10));
    d->mgr.next_output_byte = d->out->data();
    d->mgr.free_in_buffer = d->out->size();
  }
  // Called when the whole buffer is written.
  static boolean Empty(j_compress_ptr c) {
    auto* d = reinterpret_cast<VectorDestination*>(c->dest);
    const size_t used = d->out->size();
    Grow(c, d->out, used * 2);
    d->mgr.next_output_byte = d->out->data() + used;
    d->mgr.free_in_buffer = d->out->size() - used;
    return TRUE;
  }
  static void Term(j_compress_ptr c) {
    auto* d = reinterpret_cast<VectorDestination*>(c->dest);
    d->out->resize(d->out->size() - d->mgr.free_in_buffer);
  }
};

}  // namespace

struct JpegEncoder::Libjpeg {
  jpeg_compress_struct cinfo;
  JpegErrors errors;
  VectorDestination destination;
  bool created = false;

  // jpeg_create_compress under the error manager: false, errors.message set, where it fails.
  bool Create() {
    cinfo.err = errors.Install();
    if (setjmp(errors.jump) != 0) return false;
    jpeg_create_compress(&cinfo);
    created = true;
    destination.mgr.init_destination = VectorDestination::Init;
    destination.mgr.empty_output_buffer = VectorDestination::Empty;
    destination.mgr.term_destination = VectorDestination::Term;
    cinfo.dest = &destination.mgr;
    return true;
  }
};

JpegEncoder::JpegEncoder() = default;

JpegEncoder::~JpegEncoder() {
  if (jpeg_ && jpeg_->created) jpeg_destroy_compress(&jpeg_->cinfo);
}

Result<std::unique_ptr<JpegEncoder>> JpegEncoder::Create() {
  std::unique_ptr<JpegEncoder> e(new JpegEncoder());
  e->jpeg_.reset(new Libjpeg{});
  if (!e->jpeg_->Create()) {
    return Status::Unsupported(std::string("libjpeg-turbo: jpeg_create_compress: ") +
                               e->jpeg_->errors.message);
  }
  return e;
}

std::string JpegEncoder::Encode(const uint8_t* pixels, size_t pitch, uint32_t height,
                                uint32_t width, uint32_t channels, int quality,
                                std::vector<uint8_t>* out) {
  jpeg_compress_struct* c = &jpeg_->cinfo;
  JpegErrors& e = jpeg_->errors;
  e.ResetWarning();
  out->clear();
  jpeg_->destination.out = out;
  // Between setjmp and a longjmp only libjpeg's C frames (and VectorDestination's, which
  // destroy nothing) run.
  if (setjmp(e.jump) != 0) {
    jpeg_abort_compress(c);
    out->clear();
    return std::string("libjpeg-turbo: ") + e.message;
  }
  c->image_width = width;
  c->image_height = height;
  c->input_components = static_cast<int>(channels);
  c->in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(c);  // YCbCr 4:2:0 for RGB, one component for grey; JFIF
  jpeg_set_quality(c, quality, TRUE);
  c->optimize_coding = TRUE;
  c->dct_method = JDCT_ISLOW;
  jpeg_start_compress(c, TRUE);
  while (c->next_scanline < height) {
    JSAMPROW rows[8];
    const JDIMENSION at = c->next_scanline;
    const JDIMENSION count = std::min<JDIMENSION>(8, height - at);
    for (JDIMENSION i = 0; i < count; ++i) {
      rows[i] = const_cast<JSAMPROW>(pixels + size_t{at + i} * pitch);
    }
    jpeg_write_scanlines(c, rows, count);
  }
  jpeg_finish_compress(c);
  return "";
}

}  // namespace rf
