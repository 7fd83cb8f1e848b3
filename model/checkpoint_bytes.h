// The byte level of the checkpoint file (model/checkpoint.h's layout): Encoder appends fields to
// a buffer it owns, Decoder reads them in order from bytes it borrows, bounds-checking each read
// first, plus the few helpers the encoding (model/checkpoint.cc) and the decoding
// (model/checkpoint_decode.cc) share. Internal to model/: not part of checkpoint.h's interface.
//
// Ownership and lifetime: a Decoder keeps pointers to the bytes and the path it was made with;
// both must outlive it (DecodeCheckpoint's arguments do). Threads: each object is used by one
// thread at a time; the helpers are pure.
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/status.h"

namespace rf::checkpoint {

// The format is little-endian; ringfeed builds only for little-endian hosts, so values are copied
// as they lie in memory.
static_assert(std::endian::native == std::endian::little);

// More blocks than any 2x2-pooled input could take (each halves the size; 2^16 > any dimension).
inline constexpr uint32_t kMaxBlocks = 16;

// Appends fields in order, each as it lies in memory; bytes() is the file so far.
class Encoder {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof v);
    std::memcpy(out_.data() + at, &v, sizeof v);
  }
  void PutFloats(const std::vector<float>& v) {
    Put<uint64_t>(v.size());
    const size_t at = out_.size();
    out_.resize(at + v.size() * sizeof(float));
    std::memcpy(out_.data() + at, v.data(), v.size() * sizeof(float));
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Reads fields in order; every read is bounds-checked first, so a truncated or damaged file fails
// before anything is allocated from a size it claims.
class Decoder {
 public:
  Decoder(const uint8_t* data, size_t n, const std::string& path)
      : data_(data), n_(n), path_(path) {}

  template <typename T>
  Status Get(T* v, const char* what) {
    RF_RETURN_IF_ERROR(Need(sizeof *v, what));
    std::memcpy(v, data_ + at_, sizeof *v);
    at_ += sizeof *v;
    return Status::Ok();
  }
  // A tensor of exactly `expected` floats.
  Status GetFloats(std::vector<float>* v, size_t expected, const std::string& what) {
    const uint64_t field = at_;
    uint64_t count = 0;
    RF_RETURN_IF_ERROR(Get(&count, what.c_str()));
    if (count != expected) {
      return Error(field, what + " has " + std::to_string(count) + " values; the model needs " +
                              std::to_string(expected));
    }
    RF_RETURN_IF_ERROR(Need(count * sizeof(float), what.c_str()));
    v->resize(count);
    std::memcpy(v->data(), data_ + at_, count * sizeof(float));
    at_ += count * sizeof(float);
    return Status::Ok();
  }
  Status Error(uint64_t offset, const std::string& msg) const {
    Status st = Status::Corruption(path_, "checkpoint: " + msg);
    st.WithOffset(offset);
    return st;
  }
  uint64_t at() const { return at_; }
  uint64_t size() const { return n_; }

 private:
  Status Need(uint64_t bytes, const char* what) const {
    if (bytes > n_ - at_) {
      return Error(n_, std::string("file is truncated (") + what + " needs bytes up to " +
                           std::to_string(at_ + bytes) + ")");
    }
    return Status::Ok();
  }

  const uint8_t* data_;
  uint64_t n_;
  uint64_t at_ = 0;
  const std::string& path_;
};

// A float for messages, NaN and infinities included ("nan", "inf", "-0.5").
inline std::string FloatText(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

}  // namespace rf::checkpoint
