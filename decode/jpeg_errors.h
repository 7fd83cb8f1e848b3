// The error manager every libjpeg object of the project (the crop decoder, jpeg_image.h; the
// encoder, jpeg_encode.h; the re-encoder's whole-image decode, jpeg_reencode.h) is given, in place
// of jpeg_std_error's: errors longjmp back to the caller's setjmp with the message formatted,
// warnings are recorded (the first that matters), nothing is printed.
//
// Why not jpeg_std_error: its handlers (jerror.c) print to stderr, and Debian's libjpeg.a,
// compiled for executables, reaches stderr in a way a shared object (the Python extension, the
// wheel: RINGFEED_STATIC_DEPS) cannot link. Nothing here calls into jerror.c, so it is never
// linked; the message texts are built from the public jerror.h as jerror.c builds them.
//
// Use: a JpegErrors member beside the libjpeg object, Install() before jpeg_create_*, then in
// each function that calls libjpeg `if (setjmp(errors.jump) != 0) { ...; return failure; }` and
// read `message` (the error) or `warning` / `warning_code` (the first warning other than
// extraneous bytes before a marker, which leave the image whole). ResetWarning() before each
// image. Between the setjmp and a longjmp only libjpeg's C frames may run: no C++ object with a
// destructor may be created there that is not destroyed before a libjpeg call.
//
// Thread safety: one JpegErrors a libjpeg object, used by its thread; the message table is
// constant and shared. So is a JpegDecompressor: one thread at a time.
#pragma once

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE

// clang-format off
#include <jpeglib.h>
// clang-format on

namespace rf {

struct JpegErrors {
  // First: libjpeg's callbacks get &mgr and reach the rest through it.
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];  // the error's, set before the longjmp
  int warning_code;               // the first warning's msg_code that is not harmless; -1: none
  char warning[JMSG_LENGTH_MAX];

  // Sets mgr as jpeg_std_error would, with the handlers above, clears the messages and returns
  // &mgr (for cinfo.err). The object must not move while libjpeg holds the pointer.
  jpeg_error_mgr* Install();
  void ResetWarning() { warning_code = -1; }
  // The message code of the last error or warning libjpeg raised (JERR_..., JWRN_...).
  int last_code() const { return mgr.msg_code; }
};

// A libjpeg decompressor under its JpegErrors: the decoders' one (jpeg_image.h's crops,
// jpeg_reencode.h's whole images), each the owner of one, held by pointer (cinfo.err points into
// it, so it must not move). Create() runs jpeg_create_decompress under the error manager: false,
// errors.message set, where it fails. The destructor destroys what Create made.
struct JpegDecompressor {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  bool created = false;

  JpegDecompressor() = default;
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;
  ~JpegDecompressor();
  bool Create();
};

}  // namespace rf
