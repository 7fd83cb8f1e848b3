// Helpers of the host loader's tests (loader_test.cc, loader_augment_test.cc,
// loader_directory_test.cc, loader_images_test.cc, loader_image_mixture_test.cc): the options of a
// small CPU loader, opening one, draining an epoch of its positional samples
// (tests/testing/positional_data.h) decoded as floats, and the decode spec of decoded images.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pipeline/loader.h"
#include "tests/testing/positional_data.h"

namespace rf::testing {

// A CPU loader of `batch`-sample batches over `path`: small windows and ring, buffered reads
// (temporary directories may be on tmpfs, which refuses O_DIRECT), stored values as floats, three
// epochs planned.
inline LoaderOptions HostOptions(const std::string& path, uint32_t batch) {
  LoaderOptions o;
  o.pipeline.data = path;
  o.pipeline.device = DeviceKind::kCpu;
  o.pipeline.order.batch_size = batch;
  o.pipeline.order.shuffle_window = 3;
  o.pipeline.order.seed = 11;
  o.pipeline.streaming.ring_slots = 4;
  o.pipeline.streaming.io = IoMode::kBuffered;
  o.output.normalize = false;
  o.output_buffers = 2;
  o.epochs = 3;
  return o;
}

// The decoder spec a loader of `o` decodes image records with (its own statistics: none
// given), for a reference decode (JpegImageDecoder) in the tests.
inline ImageDecodeSpec ImageSpecOf(const LoaderOptions& o) {
  ImageDecodeSpec s;
  s.size = o.image.size;
  s.crop = o.image.crop;
  s.output = o.output.dtype;
  s.channels_last = o.output.layout == SampleLayout::kNHWC;
  s.normalize = o.output.normalize;
  s.max_side = o.image.max_side;
  s.seed = o.pipeline.order.seed;
  return s;
}

// The loader, or null with a test failure.
inline std::unique_ptr<Loader> OpenLoader(const LoaderOptions& o) {
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : nullptr;
}

// The sample index a float32 NCHW batch's sample j encodes (its first 8 values are its bytes).
inline uint64_t FloatSampleIndex(const LoadedBatch& b, uint32_t j, size_t sample_elems) {
  const float* s = static_cast<const float*>(b.samples()) + j * sample_elems;
  uint8_t bytes[8];
  for (int k = 0; k < 8; ++k) bytes[k] = static_cast<uint8_t>(s[k]);
  return SampleIndex(bytes);
}

// Every batch of the current epoch (samples of `sample_elems` uint8 values stored, decoded as
// floats, not normalized), checking each sample's content against the index the loader says it
// holds, and its label (PositionalLabel). The indices, in order.
inline std::vector<uint64_t> DrainDecodedEpoch(Loader& l, size_t sample_elems) {
  std::vector<uint64_t> seen;
  const uint64_t start = l.position();
  for (;;) {
    Result<std::shared_ptr<LoadedBatch>> b = l.Next();
    if (!b.ok()) {
      ADD_FAILURE() << b.status().ToString();
      break;
    }
    if (*b == nullptr) break;
    const LoadedBatch& batch = **b;
    EXPECT_FALSE(batch.on_gpu());
    EXPECT_EQ(batch.shape()[0], batch.size());
    EXPECT_EQ(batch.indices().size(), batch.size());
    EXPECT_EQ(batch.position(), start + seen.size());
    for (uint32_t j = 0; j < batch.size(); ++j) {
      const uint64_t i = batch.indices()[j];
      EXPECT_EQ(FloatSampleIndex(batch, j, sample_elems), i);
      EXPECT_EQ(batch.labels()[j], PositionalLabel(i));
      seen.push_back(i);
    }
  }
  return seen;
}

// Reads the epoch begun at `epoch` batch by batch to its end or its first error: that error, or
// OK where every batch came (a damaged chunk that was delivered).
inline Status FirstErrorOfEpoch(Loader& l, uint64_t epoch = 0) {
  Status error = l.StartEpoch(epoch, 0);
  while (error.ok()) {
    Result<std::shared_ptr<LoadedBatch>> b = l.Next();
    if (!b.ok())
      error = b.status();
    else if (*b == nullptr)
      break;
  }
  return error;
}

}  // namespace rf::testing
