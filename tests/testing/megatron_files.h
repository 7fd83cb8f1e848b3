// Megatron-LM's indexed dataset (PREFIX.bin + PREFIX.idx) written for tests, following its
// published layout (tools/convert/megatron.h): what a Megatron preprocessing run would leave,
// so that the converter's input and its export can be compared byte for byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace rf::testing {

struct MegatronFiles {
  std::vector<uint8_t> bin, idx;
};

// The files for `sequences` of ids stored as `code` (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
// 8 uint16; each id cast to that type), and the document indices as given (Megatron's writer:
// 0 first, the sequence count last). Pointers are laid out back to back, as Megatron's writer does.
inline MegatronFiles MegatronBytes(uint8_t code, const std::vector<std::vector<int64_t>>& sequences,
                                   const std::vector<int64_t>& document_indices) {
  const size_t item = code == 1 || code == 2 ? 1 : code == 3 || code == 8 ? 2 : code == 4 ? 4 : 8;
  MegatronFiles f;
  const auto put = [](std::vector<uint8_t>& out, const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  std::vector<int32_t> sizes;
  std::vector<int64_t> pointers;
  for (const auto& s : sequences) {
    pointers.push_back(static_cast<int64_t>(f.bin.size()));
    sizes.push_back(static_cast<int32_t>(s.size()));
    for (int64_t v : s) put(f.bin, &v, item);  // little-endian: the low bytes first
  }
  const char magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
  const uint64_t version = 1, n = sequences.size(), docs = document_indices.size();
  put(f.idx, magic, 9);
  put(f.idx, &version, 8);
  put(f.idx, &code, 1);
  put(f.idx, &n, 8);
  put(f.idx, &docs, 8);
  put(f.idx, sizes.data(), sizes.size() * 4);
  put(f.idx, pointers.data(), pointers.size() * 8);
  put(f.idx, document_indices.data(), document_indices.size() * 8);
  return f;
}

// Every document one sequence: 0, 1, ..., n.
inline std::vector<int64_t> OneSequenceDocuments(size_t n) {
  std::vector<int64_t> d(n + 1);
  for (size_t i = 0; i <= n; ++i) d[i] = static_cast<int64_t>(i);
  return d;
}

inline void WriteMegatron(const std::string& prefix, const MegatronFiles& f) {
  WriteAll(prefix + ".bin", f.bin);
  WriteAll(prefix + ".idx", f.idx);
}

// Sequences whose ids encode their position: sequence i holds (i * 7 + j) % modulus + offset
// for j below its length 1 + (i * 13) % longest.
inline std::vector<std::vector<int64_t>> PositionalSequences(size_t count, size_t longest,
                                                             int64_t modulus, int64_t offset = 0) {
  std::vector<std::vector<int64_t>> s(count);
  for (size_t i = 0; i < count; ++i) {
    s[i].resize(1 + (i * 13) % longest);
    for (size_t j = 0; j < s[i].size(); ++j)
      s[i][j] = static_cast<int64_t>((i * 7 + j) % static_cast<size_t>(modulus)) + offset;
  }
  return s;
}

}  // namespace rf::testing
