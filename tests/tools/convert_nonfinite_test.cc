// Issue 15, defect 6: NaN or Inf in float input converted with exit 0 into a dataset no tool
// could open ("channel statistics are not finite"). The converter refuses it, naming the sample,
// the element and where the sample starts in the input, and writes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::TempDir;

constexpr uint64_t kN = 10, kElems = 2 * 3 * 4;

// Converts x.npy of positional `descr` samples, sample 7's element 5 replaced by `bad`.
template <typename T>
Status ConvertWith(const TempDir& t, const std::string& descr, T bad, uint64_t* data_offset,
                   const std::string& dtype = "") {
  std::vector<T> samples(kN * kElems);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<T>(i) / 100;
  samples[7 * kElems + 5] = bad;
  const auto x =
      testing::NpyBytes(descr, {kN, 2, 3, 4}, samples.data(), samples.size() * sizeof(T));
  *data_offset = x.size() - samples.size() * sizeof(T);
  testing::WriteAll(t.File("x.npy"), x);
  std::vector<std::string> args = {"npy", "--images",      t.File("x.npy"),
                                   "-o",  t.File("d.rfd"), "--quiet"};
  if (!dtype.empty()) args.insert(args.end(), {"--dtype", dtype});
  return testing::Convert(args);
}

// The refusal of sample 7's element 5, whose sample starts at byte `offset` of x.npy.
std::string Refusal(const TempDir& t, uint64_t offset, const std::string& what) {
  return t.File("x.npy") + ": at byte " + std::to_string(offset) +
         ": sample 7 (which starts here) holds " + what +
         " at element 5; a dataset needs finite samples for its channel statistics";
}

TEST(ConvertNonFinite, NanAndInfinityAreRefusedNamingSampleElementAndOffset) {
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(bad);
    for (const std::string dtype : {"", "uint8", "bfloat16"}) {
      SCOPED_TRACE(dtype);
      TempDir t;
      uint64_t at = 0;
      const Status st = ConvertWith<float>(t, "<f4", bad, &at, dtype);
      EXPECT_EQ(st.ToString(), Refusal(t, at + 7 * kElems * 4, "a NaN or infinite value"));
      EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"x.npy"});
    }
  }
}

TEST(ConvertNonFinite, AFiniteValueThatOverflowsTheStoredDTypeIsRefused) {
  TempDir t;
  uint64_t at = 0;
  const Status st = ConvertWith<double>(t, "<f8", 1e300, &at);  // float64 input stored as float32
  EXPECT_EQ(st.ToString(), Refusal(t, at + 7 * kElems * 8, "a value that overflows float32"));
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"x.npy"});
}

TEST(ConvertNonFinite, FiniteFloatInputStillConverts) {
  TempDir t;
  uint64_t at = 0;
  const Status st = ConvertWith<float>(t, "<f4", 1e30f, &at);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace rf
