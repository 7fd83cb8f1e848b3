// ImageDecoder: where a batch of image records becomes a batch of model input (the
// decoded, cropped, resized, flipped, normalized images of decode/jpeg_image.h's spec). The
// loader's image stage (pipeline/images/image_stage.h) chooses one at Open and hands it batches as
// jobs; it knows nothing of how they are decoded:
//
//   CpuImageDecoder (cpu_image_decoder.cc)        libjpeg-turbo on worker threads, into host
//                                                 memory
//   NvjpegImageDecoder (nvjpeg_image_decoder.cc)  nvJPEG's batched decode (the hardware decoder
//                                                 where the GPU has one) and one crop kernel,
//                                                 into the GPU's memory, with the same crops
//                                                 (core/resized_crop.h) and the CPU decoder as
//                                                 its fallback for what nvJPEG refuses
//
// MakeImageDecoder (below) chooses the decoder once, at Open, as ImageOptions::decoder says, for
// the loader's device (its GPU and stream, or the host).
//
// A job goes in with Submit and comes out with Wait, in submission order; several jobs may be in
// flight, so the decode of the next batches runs while the consumer uses this one.
//
// Thread safety: Submit and Wait from one thread (the loader's); the decoder's own threads
// write the jobs' outputs and `bad` lists, which the caller reads once Wait has returned.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/jpeg_image.h"
#include "pipeline/images/image_options.h"

namespace rf {

// A record a decode refused: its slot in the batch and why (decode/jpeg_image.h's reason).
struct BadRecord {
  uint32_t slot = 0;
  std::string why;
};

// One batch to decode. The caller owns every array and keeps it, unchanged, from Submit until
// Wait returns for the job.
struct ImageJob {
  const uint8_t* bytes = nullptr;    // the n records back to back (host memory)
  const int64_t* offsets = nullptr;  // n + 1 byte offsets into bytes: record i is [o[i], o[i+1])
  uint32_t n = 0;
  // The crops' keys, with `epoch` (core/resized_crop.h): the batch's augmentation keys
  // (core/batch.h's sample_indices and epoch: one dataset's global sample indices and epoch; a
  // mixture's e_i T + first_i + j and epoch 0, pipeline/sources/mixed_source.h).
  const uint64_t* indices = nullptr;
  uint64_t epoch = 0;
  void* out = nullptr;  // n x the spec's OutputSampleBytes(), in the decoder's output memory
  // Written by the decoder: the records it refused, in slot order once Wait returns. Their
  // outputs are left as they are.
  std::vector<BadRecord> bad;

  // The decoder's bookkeeping (its lock guards them); done_ns: when its last record was done
  // (core/clock.h's SteadyNowNs), where the decoder keeps it (the CPU decoder), read once Wait
  // has returned.
  uint32_t next = 0, done = 0;
  uint64_t done_ns = 0;
};

class ImageDecoder {
 public:
  virtual ~ImageDecoder() = default;
  // Queues `job` (n >= 1) behind the ones queued before; returns at once.
  virtual Status Submit(ImageJob* job) = 0;
  // Waits until `job`, the oldest job submitted and not waited for, is decoded.
  virtual Status Wait(ImageJob* job) = 0;
  virtual const ImageDecodeSpec& spec() const = 0;
  // The memory a job's `out` is in: -1 host memory (the CPU decoder), else that GPU's. The
  // image stage hands a decoder the output buffer itself where it is in that memory, else a
  // host buffer it copies from.
  virtual int output_gpu() const = 0;
  virtual uint32_t threads() const = 0;
  // The decode threads' working seconds, summed, and the records they decoded (or refused),
  // since creation.
  virtual double busy_seconds() const = 0;
  virtual uint64_t records() const = 0;
  // A phrase for the loader's Describe(): "image decode on 15 CPU threads".
  virtual std::string Describe() const = 0;
};

// The CPU decoder: `threads` (>= 1) workers, each with its own JpegImageDecoder. Usage where
// the spec cannot be decoded (ImageDecodeSpec::Validate). Unlike the interface's rule, its
// Submit and Wait may be called from several threads, and a job waited for out of order (the
// nvJPEG decoder's drivers share one).
Result<std::unique_ptr<ImageDecoder>> MakeCpuImageDecoder(const ImageDecodeSpec& spec,
                                                          uint32_t threads);

// The GPU decoder (CUDA builds only): on GPU `gpu`, its jobs' outputs in that GPU's memory and
// ordered before the work queued on `consumer_stream` (a cudaStream_t) after each Wait; of
// `threads`, two drive nvJPEG (one where fewer than 4 are given) and the others are a CPU decoder
// that takes `cpu_share` of each batch (0 to 1; negative: as much as keeps the consumer from
// waiting, pipeline/images/cpu_share.h) and the records nvJPEG does not take. Unsupported where
// nvJPEG cannot be loaded (cuda/nvjpeg_library.h) or will not start on this GPU.
Result<std::unique_ptr<ImageDecoder>> MakeNvjpegImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                             void* consumer_stream,
                                                             uint32_t threads, double cpu_share);

// The decoder of image records for a loader's device (gpu -1: the host; `stream` its
// cudaStream_t), as image.decoder says: `threads` CPU threads where it decodes on the CPU (or
// shares the work with nvJPEG). On a GPU, nvJPEG into its memory ordered before the stream's
// later work (auto: where nvJPEG loads, else the CPU decoder, its batches in host memory for the
// image stage to copy over). `jpeg`: whether any record may be a JPEG (the datasets' media types:
// image/jpeg or image/*); where none can be, auto is the CPU decoder (nvJPEG would take no
// record, and its threads and start would be the CPU's loss) and nvjpeg is refused as an option
// that does nothing. Usage for nvjpeg on the host; Unsupported for nvjpeg where it does not load.
Result<std::unique_ptr<ImageDecoder>> MakeImageDecoder(const ImageDecodeSpec& spec, int gpu,
                                                       void* stream, uint32_t threads,
                                                       const ImageOptions& image, bool jpeg);

}  // namespace rf
