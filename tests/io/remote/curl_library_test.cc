// CurlLibrary: libcurl.so.4 loaded at run time, and the one-line error where it is missing.
#include "io/remote/curl_library.h"

#include <gtest/gtest.h>

namespace rf {
namespace {

TEST(CurlLibrary, LoadsTheSystemsLibcurlOnce) {
  auto api = CurlLibrary();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(*api, &Curl());
  EXPECT_EQ((*api)->path, "libcurl.so.4");
  EXPECT_FALSE((*api)->version.empty());
  auto again = CurlLibrary();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);
}

TEST(CurlLibrary, AMissingLibraryIsOneLineNamingWhatToInstall) {
  auto api = OpenCurlLibrary("libcurl-not-installed.so.4");
  ASSERT_FALSE(api.ok());
  const Status& st = api.status();
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("libcurl-not-installed.so.4 not found ("), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("install libcurl4 (apt-get install libcurl4)"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(st.ToString().find('\n'), std::string::npos) << st.ToString();
}

TEST(CurlLibrary, ALibraryThatIsNotLibcurlNamesTheEntryPointItLacks) {
  auto api = OpenCurlLibrary("libz.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("libz.so.1 has no curl_global_init"), std::string::npos)
      << api.status().ToString();
}

}  // namespace
}  // namespace rf
