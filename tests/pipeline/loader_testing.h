// Helpers of the host loader's tests (loader_test.cc, loader_augment_test.cc): the options of a
// small CPU loader, and opening one.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "pipeline/loader.h"

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

// The loader, or null with a test failure.
inline std::unique_ptr<Loader> OpenLoader(const LoaderOptions& o) {
  Result<std::unique_ptr<Loader>> l = Loader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : nullptr;
}

}  // namespace rf::testing
