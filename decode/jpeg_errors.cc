#include "decode/jpeg_errors.h"

#include <cstring>

// clang-format off
#include <jerror.h>
// clang-format on

namespace rf {
namespace {

// libjpeg's message texts, indexed by message code: the table jerror.c builds, built here from
// the public jerror.h the same way (JMESSAGE defined, the header included again).
// Two texts come from libjpeg's own jversion.h, which it does not install; no error uses them.
#ifndef JVERSION
#define JVERSION "libjpeg-turbo"
#endif
#ifndef JCOPYRIGHT_SHORT
#define JCOPYRIGHT_SHORT ""
#endif
#define JMESSAGE(code, string) string,
const char* const kJpegMessages[] = {
#include <jerror.h>
    nullptr};

// jpeg_error_mgr::format_message: the code's text with its parameters, as jerror.c's does (a
// text with "%s" takes the string parameter, else the eight integers).
void FormatJpegMessage(j_common_ptr c, char* buffer) {
  const jpeg_error_mgr* err = c->err;
  const int code = err->msg_code;
  const char* text =
      code > 0 && code <= err->last_jpeg_message ? err->jpeg_message_table[code] : nullptr;
  if (text == nullptr) {
    std::snprintf(buffer, JMSG_LENGTH_MAX, "Bogus message code %d", code);
    return;
  }
  if (std::strstr(text, "%s") != nullptr) {
    std::snprintf(buffer, JMSG_LENGTH_MAX, text, err->msg_parm.s);
    return;
  }
  const int* i = err->msg_parm.i;
  std::snprintf(buffer, JMSG_LENGTH_MAX, text, i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7]);
}

void NoJpegOutput(j_common_ptr) {}

void ResetJpegErrors(j_common_ptr c) {
  c->err->num_warnings = 0;
  c->err->msg_code = 0;
}

void OnJpegError(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  c->err->format_message(c, e->message);
  std::longjmp(e->jump, 1);
}

void OnJpegMessage(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  // Extraneous bytes before a marker are skipped and leave the image whole.
  if (c->err->msg_code == JWRN_EXTRANEOUS_DATA || e->warning_code >= 0) return;
  e->warning_code = c->err->msg_code;
  c->err->format_message(c, e->warning);
}

}  // namespace

jpeg_error_mgr* JpegErrors::Install() {
  std::memset(&mgr, 0, sizeof mgr);
  mgr.error_exit = OnJpegError;
  mgr.emit_message = OnJpegMessage;
  mgr.output_message = NoJpegOutput;
  mgr.format_message = FormatJpegMessage;
  mgr.reset_error_mgr = ResetJpegErrors;
  mgr.jpeg_message_table = kJpegMessages;
  mgr.last_jpeg_message = static_cast<int>(JMSG_LASTMSGCODE) - 1;
  message[0] = '\0';
  warning[0] = '\0';
  warning_code = -1;
  return &mgr;
}

JpegDecompressor::~JpegDecompressor() {
  if (created) jpeg_destroy_decompress(&cinfo);
}

bool JpegDecompressor::Create() {
  cinfo.err = errors.Install();
  if (setjmp(errors.jump) != 0) return false;
  jpeg_create_decompress(&cinfo);
  created = true;
  return true;
}

}  // namespace rf
