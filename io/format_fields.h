// The fixed-offset, little-endian field access that the format's header and index code share
// (io/format_header.cc, io/format_index.cc), and their Corruption error. Not part of io/format.h's
// interface: only those files include it.
//
// Put and Get copy a field of type T at byte `off` of a buffer the caller has sized (the format's
// header is kHeaderBytes long, an index entry IndexEntryBytes(version)); they check nothing.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "core/status.h"

namespace rf::format {

template <typename T>
inline void Put(uint8_t* base, size_t off, T v) {
  std::memcpy(base + off, &v, sizeof v);  // the format is little-endian, as is every target
}
template <typename T>
inline T Get(const uint8_t* base, size_t off) {
  T v;
  std::memcpy(&v, base + off, sizeof v);
  return v;
}

// Corruption naming `path`; callers add the field's offset (and chunk).
inline Status Bad(const std::string& path, const std::string& what) {
  return Status::Corruption(path, what);
}

}  // namespace rf::format
