#include "tools/convert/sample_source.h"

namespace rf::convert {

const uint8_t* SampleSource::Decode(const SampleBlock& block, uint64_t begin, uint64_t /*end*/,
                                    uint8_t* /*scratch*/) const {
  return block.samples + begin * shape().SampleBytes();
}

Result<SampleBlock> SampleSource::Next(uint64_t max_samples) {
  RF_ASSIGN_OR_RETURN(SampleBlock b, Read(max_samples, own_));
  if (b.count == 0 || !decodes()) return b;
  decoded_.resize(b.count * shape().SampleBytes());
  b.samples = Decode(b, 0, b.count, decoded_.data());
  return b;
}

}  // namespace rf::convert
