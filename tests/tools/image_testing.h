// The converter's image tests' helpers (tools_images_test): JPEGs of a gradient made with
// TurboJPEG in any of its pixel formats and flags (progressive, CMYK), a dataset's image
// records read back, tar members for WebDataset shards. Header-only.
#pragma once

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tools/convert/tar_reader.h"

namespace rf::testing {

// A smooth w x h image (a gradient that depends on `seed`) as a JPEG.
inline std::vector<uint8_t> Jpeg(int w, int h, int seed, int flags = 0, int pf = TJPF_RGB) {
  const int ps = tjPixelSize[pf];
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * ps);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < ps; ++c)
        px[(static_cast<size_t>(y) * w + x) * ps + c] =
            static_cast<uint8_t>((x * (c + 1) + y * (3 - c) + seed * 37) & 0xff);
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int sub = pf == TJPF_CMYK ? TJSAMP_444 : TJSAMP_420;
  EXPECT_EQ(tjCompress2(tj, px.data(), w, 0, h, pf, &out, &size, sub, 90, flags), 0)
      << tjGetErrorStr2(tj);
  std::vector<uint8_t> jpeg(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

struct Record {
  std::vector<uint8_t> bytes;
  int64_t label;
};

// Every record of the image dataset at `path`, which holds `media_type` records (or, for
// "fields", samples of several fields).
inline std::vector<Record> Records(const std::string& path,
                                   const std::string& media_type = "image/jpeg") {
  Result<Dataset> d = Dataset::Open(path);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (!d.ok()) return {};
  if (media_type == "fields") {  // samples of several fields: each record a whole sample
    EXPECT_EQ(d->header().record_kind, format::RecordKind::kFields);
  } else {
    EXPECT_EQ(d->header().record_kind, format::RecordKind::kBytes);
    EXPECT_EQ(d->header().media_type, media_type);
  }
  std::vector<Record> out;
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  for (size_t g = 0; g < d->chunk_count(); ++g) {
    EXPECT_TRUE(d->ReadChunk(g, buf.data()).ok());
    const auto* table = reinterpret_cast<const uint64_t*>(buf.data());
    const uint8_t* records = buf.data() + d->RecordsOffset(g);
    for (uint32_t i = 0; i < d->chunk(g).entry.sample_count; ++i)
      out.push_back({std::vector<uint8_t>(records + table[i], records + table[i + 1]),
                     d->Label(g, buf.data(), i)});
  }
  return out;
}

// A bad file for a test that plants it among good ones: its name, its bytes, and the phrase the
// conversion refuses it with.
struct BadImage {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string fragment;
};

// A ustar header block of a member `name` of `type` ('0' a file, 'L' a GNU long name, 'x' a pax
// extended header) declaring `size` bytes of data, appended to *tar (the converter's writer half).
inline void TarHeader(std::vector<uint8_t>* tar, const std::string& name, uint64_t size,
                      char type = '0') {
  convert::AppendTarHeader(tar, name, size, type);
}

// A ustar member `name` holding `d`, appended to *tar (padded to its 512-byte blocks).
inline void TarMember(std::vector<uint8_t>* tar, const std::string& name,
                      const std::vector<uint8_t>& d, char type = '0') {
  TarHeader(tar, name, d.size(), type);
  tar->insert(tar->end(), d.begin(), d.end());
  tar->resize((tar->size() + 511) / 512 * 512);
}

}  // namespace rf::testing
