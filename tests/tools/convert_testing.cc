#include "tests/tools/convert_testing.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "tools/convert/commands.h"

namespace rf::testing {

std::vector<uint8_t> IdxBytes(uint8_t type, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> BigEndianFloats(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(u >> (24 - 8 * b));
  }
  return out;
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr) << path;
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

std::vector<uint8_t> NpyBytes(const std::string& descr, const std::vector<uint64_t>& shape,
                              const void* data, size_t bytes) {
  // Written out the way numpy's format.py does it: the sorted-key dict, room for axis 0 to grow
  // to 21 digits, then spaces and '\n' so magic + length + header is a multiple of 64.
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  shape_text += shape.size() == 1 ? ",)" : ")";
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  dict += std::string(21 - std::to_string(shape[0]).size(), ' ');
  const size_t hlen = dict.size() + 1;
  const size_t pad = 64 - (10 + hlen) % 64;
  dict += std::string(pad, ' ') + "\n";
  const uint8_t prefix[10] = {0x93,
                              'N',
                              'U',
                              'M',
                              'P',
                              'Y',
                              1,
                              0,
                              static_cast<uint8_t>(dict.size() & 0xff),
                              static_cast<uint8_t>(dict.size() >> 8)};
  std::vector<uint8_t> out(sizeof prefix + dict.size() + bytes);
  std::memcpy(out.data(), prefix, sizeof prefix);
  std::memcpy(out.data() + sizeof prefix, dict.data(), dict.size());
  if (bytes > 0) std::memcpy(out.data() + sizeof prefix + dict.size(), data, bytes);
  return out;
}

Status Convert(const std::vector<std::string>& args, std::string* out) {
  std::ostringstream os;
  Status st;
  try {
    st = convert::RunCommand(args, os);
  } catch (const convert::UsageError& e) {
    st = Status::InvalidArgument(std::string("usage: ") + e.what());
  }
  if (out) *out = os.str();
  return st;
}

::testing::AssertionResult FailsWith(const Status& st, const std::string& fragment) {
  if (st.ok()) return ::testing::AssertionFailure() << "succeeded; expected '" << fragment << "'";
  if (st.ToString().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message '" << st.ToString() << "' lacks '" << fragment << "'";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rf::testing
