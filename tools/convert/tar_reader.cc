#include "tools/convert/tar_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rf::convert {
namespace {

constexpr size_t kBlock = 512;
// The largest long-name header and pax extended header read: a path is at most PATH_MAX (4096)
// bytes, and a pax header holds a path and a few other records (times, owners), so a larger one
// is forged, or not what a sample's name needs. Checked before anything is sized from the header.
constexpr uint64_t kMaxLongName = 4096;
constexpr uint64_t kMaxPaxHeader = 64 << 10;

Result<uint64_t> TarNumber(const uint8_t* p, size_t n, const std::string& path, uint64_t at) {
  if (p[0] & 0x80) {  // GNU base-256
    uint64_t v = p[0] & 0x7f;
    for (size_t i = 1; i < n; ++i) {
      if (v >> 56) return std::move(Status::Corruption(path, "tar size too large").WithOffset(at));
      v = (v << 8) | p[i];
    }
    return v;
  }
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && p[i] == ' ') ++i;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60) return std::move(Status::Corruption(path, "tar size too large").WithOffset(at));
    v = v * 8 + (p[i] - '0');
  }
  for (; i < n; ++i) {
    if (p[i] != 0 && p[i] != ' ')
      return std::move(
          Status::Corruption(path, "not a tar file (a malformed header number)").WithOffset(at));
  }
  return v;
}

}  // namespace

void AppendTarHeader(std::vector<uint8_t>* tar, const std::string& name, uint64_t size, char type) {
  uint8_t h[kBlock] = {};
  std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(reinterpret_cast<char*>(h) + 100, 8, "%07o", 0644);  // mode, then uid and gid
  std::snprintf(reinterpret_cast<char*>(h) + 108, 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(h) + 116, 8, "%07o", 0);
  if (size < (uint64_t{1} << 33)) {
    std::snprintf(reinterpret_cast<char*>(h) + 124, 12, "%011llo",
                  static_cast<unsigned long long>(size));
  } else {
    h[124] = 0x80;
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<uint8_t>(size >> (8 * i));
  }
  std::snprintf(reinterpret_cast<char*>(h) + 136, 12, "%011o", 0);  // mtime
  h[156] = static_cast<uint8_t>(type);
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t b : h) sum += b;
  std::snprintf(reinterpret_cast<char*>(h) + 148, 8, "%06o", sum);
  tar->insert(tar->end(), h, h + kBlock);
}

std::string PrintableName(std::string_view name) {
  std::string out;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::vector<TarMember>> ListTar(const File& f) {
  const std::string& path = f.path();
  RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  std::vector<TarMember> members;
  std::string long_name;
  uint8_t h[kBlock];
  uint64_t at = 0;
  for (;;) {
    if (at + kBlock > size) {
      return std::move(
          Status::Corruption(path, "tar file ends without its end-of-archive blocks (truncated?)")
              .WithOffset(at));
    }
    RF_RETURN_IF_ERROR(f.ReadAt(h, kBlock, at));
    if (std::all_of(h, h + kBlock, [](uint8_t b) { return b == 0; })) break;
    uint64_t sum = 0;
    for (size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
    RF_ASSIGN_OR_RETURN(uint64_t want, TarNumber(h + 148, 8, path, at + 148));
    if (sum != want)
      return std::move(
          Status::Corruption(path, "not a tar file (a header checksum mismatch)").WithOffset(at));
    RF_ASSIGN_OR_RETURN(uint64_t msize, TarNumber(h + 124, 12, path, at + 124));
    const uint64_t data = at + kBlock;
    if (msize > size - data)
      return std::move(Status::Corruption(path, "tar member runs past the file's end (truncated?)")
                           .WithOffset(at));
    const char type = static_cast<char>(h[156]);
    auto field = [&](size_t off, size_t n) {
      const char* s = reinterpret_cast<const char*>(h + off);
      return std::string(s, strnlen(s, n));
    };
    if (type == 'L' || type == 'x') {
      const uint64_t bound = type == 'L' ? kMaxLongName : kMaxPaxHeader;
      if (msize > bound) {
        return std::move(
            Status::Corruption(
                path,
                std::string(type == 'L' ? "a GNU long name header" : "a pax extended header") +
                    " of " + std::to_string(msize) + " bytes, more than the " +
                    std::to_string(bound) + " this reads (a member's path is a few KiB at most)")
                .WithOffset(at));
      }
      std::string body(msize, '\0');
      RF_RETURN_IF_ERROR(f.ReadAt(body.data(), msize, data));
      if (type == 'L') {
        long_name = body.c_str();
      } else {  // pax records "LEN key=value\n": the path only
        size_t p = 0;
        while (p < body.size()) {
          const size_t sp = body.find(' ', p);
          if (sp == std::string::npos) break;
          const uint64_t len = std::strtoull(body.c_str() + p, nullptr, 10);
          // "LEN key=value\n", LEN counting itself: the record must hold its ' ' and '\n'.
          if (len == 0 || len > body.size() - p || sp + 2 > p + len) break;
          const std::string rec = body.substr(sp + 1, p + len - sp - 2);
          if (rec.rfind("path=", 0) == 0) long_name = rec.substr(5);
          p += len;
        }
      }
    } else if (type == '0' || type == '\0' || type == '7') {
      std::string name = long_name;
      if (name.empty()) {
        name = field(0, 100);
        const std::string prefix = field(345, 155);
        if (std::memcmp(h + 257, "ustar", 5) == 0 && !prefix.empty()) name = prefix + "/" + name;
      }
      members.push_back({name, at, data, msize});
      long_name.clear();
    } else {
      long_name.clear();  // directories, links, global pax headers: nothing to read
    }
    at = data + (msize + kBlock - 1) / kBlock * kBlock;
  }
  return members;
}

}  // namespace rf::convert
