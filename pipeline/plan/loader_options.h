// The library loader's options (LoaderOptions, for pipeline/loader.h), declared once: the
// pipeline's that the loader takes (pipeline/sources/pipeline_config.h) and the output's (dtype,
// layout, normalization, augmentation, buffers). Python's ringfeed.Loader takes exactly these, as
// keyword arguments with '_' for '-' (python/src/loaders.cc sets them through this table; loader.py
// makes its signature and help from it).
//
// Thread safety: the table is built on first use (a function-local static) and only read after.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "options/option_table.h"
#include "pipeline/images/image_options.h"
#include "pipeline/output/batch_decode.h"
#include "pipeline/sequences/sequence_loader.h"
#include "pipeline/sources/pipeline_config.h"

namespace rf {

// How batches come out of Next(): the decode (pipeline/output/batch_decode.h) from the stored
// samples.
struct OutputOptions {
  DType dtype = DType::kFloat32;  // float32, bfloat16, float16, or the stored dtype itself
  SampleLayout layout = SampleLayout::kNCHW;
  bool normalize = true;  // (x - mean[c]) / std[c] with the dataset header's statistics
  // Statistics to normalize with instead of the header's (one per channel; both or neither): a
  // test split normalized as its training split was.
  std::vector<float> mean, stddev;
  // Image/jpeg records (ImageOptions::size not 0): the statistics normalize takes when mean and
  // std are not given are ImageNet's, in pixel units (decode/jpeg_image.h), and dtype may also be
  // uint8 (the pixels, without normalize).
  // Data augmentation, an --augment spec (core/augment_spec.h: "crop:4,flip,erase:0.5"; "" or
  // "none": off), fused into the decode; each sample's transform keyed by the pipeline's seed, the
  // epoch and the sample's global index, so the same on the host and the GPU, and on resume. Leave
  // it off for a test split.
  std::string augment;
  // Which of dtype and normalize the caller gave, where it says (`told`: the Python face, its
  // keywords left out or not). Then ResolveLoader takes what the data calls for in place of one
  // not given (float32 for images, decoded or stored as intensities; the stored dtype for ids and
  // records; normalize for a float output of samples that are no records) and refuses records
  // handed out given another dtype, or normalize. Otherwise (C++ callers) both are taken as they
  // are, and records, which come out as stored, ignore them. The loader's options() hold the
  // values taken.
  struct Given {
    bool told = false;
    bool dtype = false;
    bool normalize = false;
    bool operator==(const Given&) const = default;
  } given;
};

// What Python's ringfeed.Loader hands a batch's arrays out as (python/src/loaders.cc; the library
// hands out a LoadedBatch either way): ringfeed.Tensor objects, which any DLPack consumer takes, or
// torch tensors viewing the same memory, made in the binding (the batch's one stream wait, one
// import a tensor), so a PyTorch loop's thread spends less of its step on the hand-off.
enum class PythonTensors { kRingfeed, kTorch };

struct LoaderOptions {
  PipelineConfig pipeline;  // the dataset, mode, device, batch, order, rank, reader
  OutputOptions output;
  PythonTensors tensors = PythonTensors::kRingfeed;  // read by the Python face alone
  // image records: decoded to images of image.size (pipeline/images/image_stage.h), or (size
  // 0) handed out as stored; ignored for other datasets, but for options that would do nothing
  // there (a crop, threads, skipping, a side limit), which are refused.
  ImageOptions image;
  SequenceOptions sequence;
  // Decoded batches the loader keeps ready for the consumer (the buffers the pool starts with);
  // 0: the raw level only (source(); Next() refused), with no decoder and no pool.
  uint32_t output_buffers = 4;
  // Epochs the streaming read plan covers; 0: no fixed number (the plan goes on as epochs come).
  uint64_t epochs = 0;
  // CUDA: the GPU (-1: the opening thread's current device, as torch.cuda.set_device sets it).
  int gpu = -1;
  // CUDA: the stream batches are produced on (a cudaStream_t); null: the loader's own stream.
  // Must outlive the loader.
  void* stream = nullptr;
  // Called about every 100 ms while StartEpoch or Next waits for data (streaming mode); a status
  // other than OK ends the wait and is returned. The loader must then be restarted by StartEpoch.
  // Always on the thread that called StartEpoch or Next.
  std::function<Status()> poll;
  // Decoded batches (Next) made on a thread of the loader's own (pipeline/batch_worker.h), up to
  // output_buffers - 2 (at least 1) ahead of the consumer: the reads waited for, the gather and
  // decode (on the GPU: their kernel launches and events) leave the consumer's thread, and Next()
  // is a hand-off from a queue. The batches and their order are the same either way. Decoded
  // images: the image stage (pipeline/images/image_stage.h: the records' gather and copy, the
  // hand-off to its decode threads, the wait for them) runs on the worker, its own batches in
  // flight as without it, and one finished batch waits in the worker's queue (the pool holds one
  // buffer more). Not for a mixture of datasets (mixture_state()).
  bool worker = false;
};

// Decoded batches a loader keeps buffers for (each batch_size x a sample's output bytes).
inline constexpr uint32_t kMaxOutputBuffers = 64;
// The longest packed sequence (tokens a row: one more).
inline constexpr uint32_t kMaxSequenceLength = 1u << 22;
// Packed sequences' packing threads (SequenceOptions::pack_threads).
inline constexpr uint32_t kMaxPackThreads = 64;

const OptionTable<LoaderOptions>& LoaderOptionTable();

// What a SequenceLoader (pipeline/sequences/sequence_loader.h) takes of a loader's options.
SequenceSpec SequenceSpecFor(const LoaderOptions& options);

// The augmentation option (core/augment_spec.h's SPEC): declared here once, bound by the loader's
// table to its output and by `ringfeed train`'s to its config.
OptionSpec AugmentOptionSpec();

}  // namespace rf
