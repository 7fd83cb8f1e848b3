#include "tests/testing/positional_data.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "io/dataset_writer.h"

namespace rf::testing {

void PositionalSample(uint64_t i, uint8_t* out, size_t bytes) {
  for (size_t k = 0; k < bytes; ++k) out[k] = static_cast<uint8_t>(i * 31 + k);
  std::memcpy(out, &i, std::min(bytes, sizeof i));
}

std::vector<uint8_t> PositionalSamples(uint64_t n, uint64_t sample_bytes) {
  std::vector<uint8_t> v(n * sample_bytes);
  for (uint64_t i = 0; i < n; ++i) PositionalSample(i, &v[i * sample_bytes], sample_bytes);
  return v;
}

std::vector<uint8_t> PositionalLabels(uint64_t n, uint32_t classes) {
  std::vector<uint8_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(PositionalLabel(i, classes));
  return v;
}

void PositionalObjectBytes(uint64_t offset, uint8_t* out, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    uint64_t i = offset + k;
    out[k] = static_cast<uint8_t>(((i / 8) * 0x9E3779B97F4A7C15ULL) >> (8 * (i % 8)));
  }
}

std::vector<uint8_t> PositionalObject(uint64_t offset, size_t n) {
  std::vector<uint8_t> v(n);
  PositionalObjectBytes(offset, v.data(), n);
  return v;
}

std::vector<float> PositionalFloats(uint64_t n, uint64_t elems) {
  std::vector<float> v(n * elems);
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t k = 0; k < elems; ++k) v[i * elems + k] = static_cast<float>(i * 1000 + k);
  }
  return v;
}

std::string WritePositionalDataset(const std::string& path, uint64_t n,
                                   const PositionalDatasetOptions& o,
                                   std::vector<std::string>* files) {
  DatasetSpec spec;
  spec.channels = o.channels;
  spec.height = o.height;
  spec.width = o.width;
  spec.num_classes = o.classes;
  spec.label_dtype = o.label_dtype;
  spec.class_names = o.class_names;
  WriterOptions wo;
  wo.shards = o.shards;
  wo.chunk_bytes = o.chunk_bytes;
  wo.codec = o.codec;
  wo.version = o.version;
  auto w = DatasetWriter::Create(path, spec, wo);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return path;
  constexpr uint64_t kGroup = 11;
  const size_t sample_bytes = size_t{o.channels} * o.height * o.width;
  const size_t label_bytes = DTypeSize(o.label_dtype);
  std::vector<uint8_t> samples(kGroup * sample_bytes), labels(kGroup * label_bytes);
  for (uint64_t i = 0; i < n;) {
    const uint64_t take = std::min(kGroup, n - i);
    for (uint64_t j = 0; j < take; ++j) {
      PositionalSample(o.first_sample + i + j, &samples[j * sample_bytes], sample_bytes);
      const int64_t label = PositionalLabel(o.first_sample + i + j, o.classes);
      if (o.label_dtype == DType::kUInt8) labels[j] = static_cast<uint8_t>(label);
      if (o.label_dtype == DType::kUInt16) {
        const auto v = static_cast<uint16_t>(label);
        std::memcpy(&labels[2 * j], &v, 2);
      }
      if (o.label_dtype == DType::kInt32) {
        const auto v = static_cast<int32_t>(label);
        std::memcpy(&labels[4 * j], &v, 4);
      }
    }
    const Status st = (*w)->Append(samples.data(), labels.data(), take);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return path;
    i += take;
  }
  const Status st = (*w)->Finish();
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (files != nullptr) *files = (*w)->paths();
  return path;
}

}  // namespace rf::testing
