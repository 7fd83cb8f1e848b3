#include "pipeline/images/image_decoder.h"

namespace rf {

Result<std::unique_ptr<ImageDecoder>> MakeImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                       void* stream, uint32_t threads,
                                                       const ImageOptions& image, bool jpeg) {
  if (gpu < 0 || image.decoder == ImageDecoderChoice::kCpu || !jpeg) {
    if (gpu < 0 && image.decoder == ImageDecoderChoice::kNvjpeg) {
      return Status::Usage(
          "image_decoder nvjpeg decodes on a GPU: give device cuda, or image_decoder cpu or auto");
    }
    if (image.decoder == ImageDecoderChoice::kNvjpeg) {
      return Status::Usage(
          "image_decoder nvjpeg decodes JPEGs, and the dataset's records are PNG or WebP images "
          "(its media type): give image_decoder cpu or auto");
    }
    return MakeCpuImageDecoder(spec, threads);
  }
#if RINGFEED_HAVE_CUDA
  Result<std::unique_ptr<ImageDecoder>> nvjpeg =
      MakeNvjpegImageDecoder(spec, gpu, stream, threads, image.cpu_share);
  // auto: where nvJPEG is not there (not installed, or it will not start), the CPU threads.
  if (!nvjpeg.ok() && image.decoder == ImageDecoderChoice::kAuto &&
      nvjpeg.status().code() == Status::Code::kUnsupported) {
    return MakeCpuImageDecoder(spec, threads);
  }
  return nvjpeg;
#else
  (void)stream;
  return MakeCpuImageDecoder(spec, threads);
#endif
}

}  // namespace rf
