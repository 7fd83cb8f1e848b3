#include "tests/kernels/fashion_mnist.h"

#include "tools/convert/idx_input.h"

namespace rf::testing {

// Read through ringfeed-convert's own IDX input, so the tests use the product's parser.
Result<FashionMnist> LoadFashionMnist(const std::string& dir, const std::string& prefix,
                                      uint32_t limit) {
  RF_ASSIGN_OR_RETURN(std::unique_ptr<convert::SampleSource> src,
                      convert::OpenIdxSource(dir + "/" + prefix + "-images-idx3-ubyte.gz",
                                             dir + "/" + prefix + "-labels-idx1-ubyte.gz"));
  const convert::SourceShape& s = src->shape();
  if (s.elem != convert::Elem::kU8 || s.dims.size() != 3 || s.dims[0] != 1) {
    return Status::Corruption(dir, "Fashion-MNIST images are not 1-channel uint8");
  }
  FashionMnist d;
  d.count = static_cast<uint32_t>(limit != 0 && limit < s.samples ? limit : s.samples);
  d.rows = static_cast<uint32_t>(s.dims[1]);
  d.cols = static_cast<uint32_t>(s.dims[2]);
  d.pixels.reserve(size_t{d.count} * d.rows * d.cols);
  d.labels.reserve(d.count);
  while (d.labels.size() < d.count) {
    RF_ASSIGN_OR_RETURN(convert::SampleBlock b, src->Next(d.count - d.labels.size()));
    if (b.count == 0) return Status::Corruption(dir, "Fashion-MNIST ends early");
    d.pixels.insert(d.pixels.end(), b.samples, b.samples + b.count * s.SampleBytes());
    for (uint64_t i = 0; i < b.count; ++i) d.labels.push_back(static_cast<uint8_t>(b.labels[i]));
  }
  return d;
}

}  // namespace rf::testing
