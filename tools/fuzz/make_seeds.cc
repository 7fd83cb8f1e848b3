// fuzz_seeds DIR: writes the seed corpus of every fuzz target under DIR/<target>/, from the same
// valid files the targets start from (written by the real DatasetWriter and EncodeCheckpoint, so
// the seeds follow the format as it is, not as a committed file once was).
//
//   header_raw, checkpoint_raw   whole valid headers and checkpoints (the raw targets' input)
//   dataset                      each valid dataset file in the target's raw mode, and a few
//                                edit programs (of fields, and of the codec frames)
//   codec                        frames of each codec (valid, bombs, of another size)
//   header, index, checkpoint    edit programs (the empty input is the valid file itself)
//   image                        JPEGs of the project's encoder, whole and cut short; PNGs
//                                (libpng: RGB, palette, grey, interlaced) and WebPs (libwebp:
//                                lossy, lossless), whole and cut short
//   tar                          WebDataset tars (long names, pax headers, a bad label, cut)
//   jsonl                        JSON lines of each kind taken and refused
//
// FuzzedDataProvider takes integers from the input's end and bytes from its front, so a seed is
// [bytes...][choices, last one first].
#include <png.h>
#include <webp/encode.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "decode/jpeg_encode.h"
#include "io/codec.h"
#include "io/format.h"
#include "tools/convert/tar_reader.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;
using namespace rf::fuzz;

namespace {

void Seed(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/" + name, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  const std::string root = argv[1];
  const std::vector<DatasetFiles>& sets = ValidDatasets();
  int n = 0;
  for (size_t s = 0; s < sets.size(); ++s) {
    for (size_t f = 0; f < sets[s].bytes.size(); ++f) {
      const std::vector<uint8_t>& file = sets[s].bytes[f];
      const std::string tag = std::to_string(s) + "-" + std::to_string(f);
      Seed(root + "/header_raw", "valid-" + tag,
           std::vector<uint8_t>(file.begin(), file.begin() + format::kHeaderBytes));
      // Raw mode (mode 0x80) of dataset set s, opened by the file's own name (bool false).
      std::vector<uint8_t> raw = file;
      raw.push_back(0);
      raw.push_back(static_cast<uint8_t>(s));
      raw.push_back(0x80);
      Seed(root + "/dataset", "raw-" + tag, raw);
      ++n;
    }
    // Edit programs: the set, opened by its base name, one field edit of each kind.
    for (uint8_t kind = 0; kind < 3; ++kind) {
      Seed(root + "/dataset", "edit-" + std::to_string(s) + "-" + std::to_string(kind),
           {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 5, kind, 0, 0, 1,
            static_cast<uint8_t>(s), 0});
    }
    // Frame edits (mode 0x01), one seed ending in each edit kind (the bytes before it choose
    // the chunk, the place and what is written), for the fuzzer to grow from.
    for (uint8_t kind = 0; kind < 3; ++kind) {
      Seed(root + "/dataset", "frame-" + std::to_string(s) + "-" + std::to_string(kind),
           {0xde, 0xad, 0xbe, 0xef, 0x00, 0xff, 0x7f, 0x80, 40, 3, 9, kind, 0, 0, 0, 1,
            static_cast<uint8_t>(s), 0x01});
    }
    Seed(root + "/header", "set-" + std::to_string(s), {1, 0, static_cast<uint8_t>(s)});
    Seed(root + "/index", "set-" + std::to_string(s), {1, 0, static_cast<uint8_t>(s)});
  }
  // codec: [frame][declared size, little-endian u32][0: that size][codec]; or [frame][3: the
  // size the zstd frame declares][codec]. Valid frames of both codecs, decompression bombs, a
  // zstd frame without a declared size, and raw bytes.
  {
    std::vector<uint8_t> data(48 << 10);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + i / 700);
    const std::vector<uint8_t> zeros(1 << 20, 0);
    auto frame = [](CodecSpec spec, const std::vector<uint8_t>& bytes) {
      Compressor c(spec);
      std::vector<uint8_t> out(CompressBound(spec.codec, bytes.size()));
      auto got = c.Compress(bytes.data(), bytes.size(), out.data(), out.size());
      RF_FUZZ_CHECK(got.ok());
      out.resize(*got);
      return out;
    };
    auto codec_seed = [&](const std::string& name, Codec c, std::vector<uint8_t> f, uint32_t want) {
      for (int b = 0; b < 4; ++b) f.push_back(static_cast<uint8_t>(want >> (8 * b)));
      f.push_back(0);
      f.push_back(static_cast<uint8_t>(c));
      Seed(root + "/codec", name, f);
    };
    const uint32_t size = static_cast<uint32_t>(data.size());
    codec_seed("lz4", Codec::kLz4, frame({Codec::kLz4, 0}, data), size);
    codec_seed("zstd-1", Codec::kZstd, frame({Codec::kZstd, 1}, data), size);
    codec_seed("zstd-19", Codec::kZstd, frame({Codec::kZstd, 19}, data), size);
    codec_seed("none", Codec::kNone, std::vector<uint8_t>(data.begin(), data.begin() + 4096), 4096);
    codec_seed("lz4-bomb", Codec::kLz4, frame({Codec::kLz4, 0}, zeros), 4096);
    codec_seed("zstd-bomb", Codec::kZstd, frame({Codec::kZstd, 3}, zeros), 4096);
    codec_seed("zstd-short", Codec::kZstd, frame({Codec::kZstd, 3}, data), size - 1);
    std::vector<uint8_t> declared = frame({Codec::kZstd, 3}, data);
    declared.push_back(3);
    declared.push_back(static_cast<uint8_t>(Codec::kZstd));
    Seed(root + "/codec", "zstd-declared", declared);
  }
  Seed(root + "/checkpoint_raw", "valid", ValidCheckpoint());
  Seed(root + "/checkpoint_raw", "mixture", ValidMixtureCheckpoint());
  Seed(root + "/checkpoint", "valid", {0});
  Seed(root + "/checkpoint", "edit", {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 3, 0, 0});
  // options: command lines (words joined by NUL, as the target splits them) and --config texts
  // of the loader's options.
  const auto words = [](std::initializer_list<std::string> w) {
    std::string out;
    for (const std::string& x : w) out += (out.empty() ? "" : std::string(1, '\0')) + x;
    return out;
  };
  const std::vector<std::string> options = {
      words({"--queue-depth", "8", "--read-size=64KiB", "--no-verify", "--shuffle", "none"}),
      words({"--batch-size", "32", "--mean", "0.5,1e-3", "--std", "2", "--augment", "crop:2,flip"}),
      "batch-size = 64\nshuffle = none\n# a comment\nprefetch = 4\nread-size = 4MiB\n",
      "managed-prefetch = 2\nmode = managed\nno-normalize = true\nworld-size = 3\nrank = 2\n",
      // Once a crash: 2^64, which a float holds exactly, did not read back at double precision.
      words({"--weights", "0000000000018446744073709551615,0.01"})};
  for (size_t i = 0; i < options.size(); ++i) {
    Seed(root + "/options", "valid-" + std::to_string(i),
         std::vector<uint8_t>(options[i].begin(), options[i].end()));
  }
  // jpeg: JPEGs the project's encoder writes (4:2:0 colour, grey), one cut short, each followed by
  // the target's choices (sample index, crop, output size; read from the end).
  Result<std::unique_ptr<JpegEncoder>> encoder = JpegEncoder::Create();
  if (!encoder.ok()) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", encoder.status().ToString().c_str());
    return 1;
  }
  const auto jpeg_seed = [&](const std::string& name, uint32_t h, uint32_t w, uint32_t channels,
                             size_t keep, uint8_t crop) {
    std::vector<uint8_t> pixels(size_t{h} * w * channels);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + i / 97);
    std::vector<uint8_t> bytes;
    if (!(*encoder)
             ->Encode(pixels.data(), size_t{w} * channels, h, w, channels, 85, &bytes)
             .empty())
      return false;
    if (keep < bytes.size()) bytes.resize(keep);
    for (uint8_t b : {uint8_t{7}, uint8_t{0}, crop, uint8_t{24}}) bytes.push_back(b);
    Seed(root + "/image", name, bytes);
    return true;
  };
  if (!jpeg_seed("rgb", 40, 48, 3, SIZE_MAX, 0) || !jpeg_seed("grey", 17, 33, 1, SIZE_MAX, 1) ||
      !jpeg_seed("cut", 64, 64, 3, 300, 0)) {
    std::fprintf(stderr, "fuzz_seeds: the JPEG encoder failed\n");
    return 1;
  }
  // PNGs (libpng's simplified writer) and WebPs (libwebp), each whole and cut short, with the
  // target's choices after them.
  const auto image_seed = [&](const std::string& name, std::vector<uint8_t> bytes, size_t keep) {
    if (keep < bytes.size()) bytes.resize(keep);
    for (uint8_t b : {uint8_t{5}, uint8_t{1}, uint8_t{0}, uint8_t{20}}) bytes.push_back(b);
    Seed(root + "/image", name, bytes);
  };
  std::vector<uint8_t> rgb(36 * 28 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 5 + i / 31);
  struct PngSeed {
    const char* name;
    png_uint_32 format;
  };
  const PngSeed png_seeds[] = {{"png-rgb", PNG_FORMAT_RGB},
                               {"png-grey", PNG_FORMAT_GRAY},
                               {"png-rgba", PNG_FORMAT_RGBA},
                               {"png-palette", PNG_FORMAT_RGB | PNG_FORMAT_FLAG_COLORMAP}};
  for (const PngSeed& p : png_seeds) {
    const char* name = p.name;
    const png_uint_32 format = p.format;
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = 36;
    image.height = 28;
    image.format = format;
    std::vector<uint8_t> colormap(256 * 3);
    for (size_t i = 0; i < colormap.size(); ++i) colormap[i] = static_cast<uint8_t>(i * 3);
    if (format & PNG_FORMAT_FLAG_COLORMAP) image.colormap_entries = 256;
    std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = rgb[i % rgb.size()];
    png_alloc_size_t bytes = 0;
    const void* map = (format & PNG_FORMAT_FLAG_COLORMAP) ? colormap.data() : nullptr;
    if (!png_image_write_get_memory_size(image, bytes, 0, pixels.data(), 0, map)) {
      std::fprintf(stderr, "fuzz_seeds: libpng failed: %s\n", image.message);
      return 1;
    }
    std::vector<uint8_t> png(bytes);
    if (!png_image_write_to_memory(&image, png.data(), &bytes, 0, pixels.data(), 0, map)) {
      std::fprintf(stderr, "fuzz_seeds: libpng failed: %s\n", image.message);
      return 1;
    }
    png.resize(bytes);
    image_seed(name, png, SIZE_MAX);
    if (std::string(name) == "png-rgb") image_seed("png-cut", png, png.size() * 2 / 3);
  }
  for (const bool lossless : {false, true}) {
    uint8_t* out = nullptr;
    const size_t n = lossless ? WebPEncodeLosslessRGB(rgb.data(), 36, 28, 36 * 3, &out)
                              : WebPEncodeRGB(rgb.data(), 36, 28, 36 * 3, 75, &out);
    if (n == 0) {
      std::fprintf(stderr, "fuzz_seeds: libwebp failed\n");
      return 1;
    }
    const std::vector<uint8_t> webp(out, out + n);
    WebPFree(out);
    image_seed(lossless ? "webp-lossless" : "webp-lossy", webp, SIZE_MAX);
    image_seed(lossless ? "webp-lossless-cut" : "webp-lossy-cut", webp, n / 2);
  }
  // tar: WebDataset shards as `images` reads them: samples of a JPEG and a label, a GNU long
  // name, a pax path record, a member the sample passes over, a bad label, a cut tar.
  const auto tar_member = [](std::vector<uint8_t>* tar, const std::string& name, char type,
                             const std::string& body) {
    convert::AppendTarHeader(tar, name, body.size(), type);
    tar->insert(tar->end(), body.begin(), body.end());
    tar->resize((tar->size() + 511) / 512 * 512);
  };
  {
    const std::string jpeg = "\xff\xd8\xff\xe0 not really a JPEG \xff\xd9";
    std::vector<uint8_t> tar;
    tar_member(&tar, "s/a.jpg", '0', jpeg);
    tar_member(&tar, "s/a.cls", '0', "3\n");
    tar_member(&tar, "s/a.json", '0', "{}");
    tar_member(&tar, "././@LongLink", 'L', std::string(120, 'd') + "/b.jpg");
    tar_member(&tar, "b.jpg", '0', jpeg);
    const std::string record = " path=" + std::string(120, 'd') + "/b.cls\n";
    tar_member(&tar, "pax", 'x', std::to_string(record.size() + 3) + record);
    tar_member(&tar, "b.cls", '0', "0");
    std::vector<uint8_t> whole = tar;
    whole.resize(whole.size() + 1024);
    Seed(root + "/tar", "samples", whole);
    Seed(root + "/tar", "cut", std::vector<uint8_t>(tar.begin(), tar.end() - 300));
    std::vector<uint8_t> bad;
    tar_member(&bad, "c.jpg", '0', jpeg);
    tar_member(&bad, "c.cls", '0', "-1");
    bad.resize(bad.size() + 1024);
    Seed(root + "/tar", "bad-label", bad);
    std::vector<uint8_t> odd;  // a name holding a newline (once two lines of message)
    tar_member(&odd, "a\nb.jpg", '0', jpeg);
    odd.resize(odd.size() + 1024);
    Seed(root + "/tar", "newline-name", odd);
  }
  // jsonl: lines of each kind the reader takes or refuses, each followed by the target's
  // choices (read from the end: the record size, then the budget).
  const std::vector<std::string> jsonl = {
      "[1,2,3]\n{\"tokens\": [4, 5]}\n{\"text\": \"a \\\"b\\\" \\u00e9\", \"input_ids\": "
      "[6]}\n[]\n",
      "{\"tokens\":[1],\"tokens\":[2]}\n[1, 2.5]\n",
      std::string("[1,2]\0[3,4]\n", 12),
      "   [7]   \n\n[8] x\n{\"meta\": {\"a\": [[1], {\"b\": null}]}, \"input_ids\": [9]}",
  };
  for (size_t i = 0; i < jsonl.size(); ++i) {
    std::vector<uint8_t> bytes(jsonl[i].begin(), jsonl[i].end());
    bytes.push_back(static_cast<uint8_t>(i * 5));  // the budget: 2^(i*5) bytes
    bytes.push_back(static_cast<uint8_t>(i * 4));  // the record size: 8 << (i*4) bytes
    Seed(root + "/jsonl", "lines-" + std::to_string(i), bytes);
  }
  std::printf(
      "fuzz_seeds: %d dataset files, 2 checkpoints, 3 JPEGs, 4 tars, %zu jsonl files, "
      "under %s\n",
      n, jsonl.size(), root.c_str());
  return 0;
}
