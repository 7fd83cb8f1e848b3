#include "tools/convert/token_ids.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

namespace rf::convert {
namespace {

// A negative id, cast to uint64, lies above every max_id (at most INT64_MAX): one comparison
// catches both.
template <typename In>
inline bool Outside(In v, uint64_t max_id) {
  if constexpr (std::is_signed_v<In>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) > max_id;
  } else {
    return static_cast<uint64_t>(v) > max_id;
  }
}

// Blocks of ids checked with a flag the compiler can vectorize, then the block with the first bad
// id searched again one by one.
constexpr size_t kBlock = 2048;

template <typename In>
size_t FirstOutsideT(const In* src, size_t n, uint64_t max_id) {
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    uint32_t bad = 0;
    for (size_t i = b; i < e; ++i) bad |= Outside(src[i], max_id);
    if (bad != 0) {
      for (size_t i = b; i < e; ++i)
        if (Outside(src[i], max_id)) return i;
    }
  }
  return n;
}

template <typename In, typename Out>
size_t ConvertT(const In* src, Out* dst, size_t n, uint64_t max_id) {
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    uint32_t bad = 0;
    for (size_t i = b; i < e; ++i) {
      bad |= Outside(src[i], max_id);
      dst[i] = static_cast<Out>(src[i]);
    }
    if (bad != 0) {
      for (size_t i = b; i < e; ++i)
        if (Outside(src[i], max_id)) return i;
    }
  }
  return n;
}

// Calls f(typed pointer) for the integer element type `in`.
template <typename F>
size_t WithIds(Elem in, const void* src, F&& f) {
  switch (in) {
    case Elem::kU8:
      return f(static_cast<const uint8_t*>(src));
    case Elem::kI8:
      return f(static_cast<const int8_t*>(src));
    case Elem::kU16:
      return f(static_cast<const uint16_t*>(src));
    case Elem::kI16:
      return f(static_cast<const int16_t*>(src));
    case Elem::kU32:
      return f(static_cast<const uint32_t*>(src));
    case Elem::kI32:
      return f(static_cast<const int32_t*>(src));
    case Elem::kU64:
      return f(static_cast<const uint64_t*>(src));
    case Elem::kI64:
      return f(static_cast<const int64_t*>(src));
    default:
      return 0;  // float elements are refused before any id is read
  }
}

// Stored ids to an export's type, in range of Out.
template <typename In, typename Out>
size_t NarrowT(const In* src, Out* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const In v = src[i];
    if (!std::in_range<Out>(v)) return i;
    dst[i] = static_cast<Out>(v);
  }
  return n;
}

template <typename In>
size_t NarrowTo(const In* src, Elem out, void* dst, size_t n) {
  switch (out) {
    case Elem::kU8:
      return NarrowT(src, static_cast<uint8_t*>(dst), n);
    case Elem::kI8:
      return NarrowT(src, static_cast<int8_t*>(dst), n);
    case Elem::kU16:
      return NarrowT(src, static_cast<uint16_t*>(dst), n);
    case Elem::kI16:
      return NarrowT(src, static_cast<int16_t*>(dst), n);
    case Elem::kI32:
      return NarrowT(src, static_cast<int32_t*>(dst), n);
    case Elem::kI64:
      return NarrowT(src, static_cast<int64_t*>(dst), n);
    default:
      return 0;  // no export writes ids of another type
  }
}

}  // namespace

size_t IdsToElem(DType in, const void* src, Elem out, void* dst, size_t n) {
  switch (in) {
    case DType::kUInt16:
      return NarrowTo(static_cast<const uint16_t*>(src), out, dst, n);
    case DType::kInt32:
      return NarrowTo(static_cast<const int32_t*>(src), out, dst, n);
    default:
      return NarrowTo(static_cast<const int64_t*>(src), out, dst, n);
  }
}

uint64_t MaxIdOf(DType t) {
  switch (t) {
    case DType::kUInt16:
      return std::numeric_limits<uint16_t>::max();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

bool IdsAlwaysWithin(Elem in, uint64_t max_id) {
  switch (in) {
    case Elem::kU8:
      return max_id >= std::numeric_limits<uint8_t>::max();
    case Elem::kU16:
      return max_id >= std::numeric_limits<uint16_t>::max();
    case Elem::kU32:
      return max_id >= std::numeric_limits<uint32_t>::max();
    default:
      return false;
  }
}

size_t FirstIdOutside(Elem in, const void* src, size_t n, uint64_t max_id) {
  return WithIds(in, src, [&](const auto* p) { return FirstOutsideT(p, n, max_id); });
}

size_t ConvertIds(Elem in, const void* src, DType out, void* dst, size_t n, uint64_t max_id) {
  return WithIds(in, src, [&](const auto* p) -> size_t {
    switch (out) {
      case DType::kUInt16:
        return ConvertT(p, static_cast<uint16_t*>(dst), n, max_id);
      case DType::kInt32:
        return ConvertT(p, static_cast<int32_t*>(dst), n, max_id);
      default:
        return ConvertT(p, static_cast<int64_t*>(dst), n, max_id);
    }
  });
}

}  // namespace rf::convert
