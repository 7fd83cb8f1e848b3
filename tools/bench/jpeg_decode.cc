// ringfeed-bench-jpeg FOLDER [--count N] [--rounds R] [--size S]: the JPEG decode alone, one
// thread, the files held in memory, in interleaved rounds (tools/bench/jpeg_cpu_bench.py measures
// the whole loader; this isolates decode/jpeg_image.h from the pipeline around it):
//
//   turbojpeg     libjpeg-turbo's own full decode: tjDecompress2 of the whole image to RGB
//   train / eval  JpegImageDecoder::Decode: the crop's region decoded (libjpeg API, DCT scale),
//                 resized, flipped, written as float32 NCHW normalized, or uint8
//
// Each round runs every contestant over every file once; the median round is printed, each as
// images/s and as a share of turbojpeg's.
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "decode/jpeg_image.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rf;
  if (argc < 2) {
    std::fprintf(stderr, "usage: ringfeed-bench-jpeg FOLDER [--count N] [--rounds R] [--size S]\n");
    return 2;
  }
  size_t count = 0;
  int rounds = 5;
  uint32_t size = 224;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--count") count = static_cast<size_t>(v);
    if (flag == "--rounds") rounds = static_cast<int>(v);
    if (flag == "--size") size = static_cast<uint32_t>(v);
  }
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    const std::string ext = e.path().extension().string();
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".JPEG") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (count != 0 && paths.size() > count) paths.resize(count);
  std::vector<std::vector<uint8_t>> files;
  for (const std::string& p : paths) {
    std::ifstream f(p, std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  if (files.empty()) {
    std::fprintf(stderr, "ringfeed-bench-jpeg: no .jpg under %s\n", argv[1]);
    return 1;
  }

  tjhandle tj = tjInitDecompress();
  std::vector<uint8_t> rgb;
  struct Contestant {
    std::string name;
    std::function<void()> run;
    std::vector<double> rates;
  };
  std::vector<Contestant> all;
  all.push_back({"turbojpeg full decode",
                 [&] {
                   for (const auto& j : files) {
                     int w = 0, h = 0, sub = 0, cs = 0;
                     tjDecompressHeader3(tj, j.data(), j.size(), &w, &h, &sub, &cs);
                     rgb.resize(size_t(w) * h * 3);
                     tjDecompress2(tj, j.data(), j.size(), rgb.data(), w, 0, h, TJPF_RGB, 0);
                   }
                 },
                 {}});
  std::vector<std::unique_ptr<JpegImageDecoder>> decoders;
  std::vector<std::vector<uint8_t>> outs;
  for (ImageCrop crop : {ImageCrop::kRandomResized, ImageCrop::kCenter}) {
    for (DType dt : {DType::kFloat32, DType::kUInt8}) {
      ImageDecodeSpec spec;
      spec.size = size;
      spec.crop = crop;
      spec.output = dt;
      spec.normalize = dt == DType::kFloat32;
      auto d = JpegImageDecoder::Create(spec);
      if (!d.ok()) {
        std::fprintf(stderr, "ringfeed-bench-jpeg: %s\n", d.status().ToString().c_str());
        return 1;
      }
      decoders.push_back(std::move(d).value());
      outs.emplace_back(spec.OutputSampleBytes());
      JpegImageDecoder* dec = decoders.back().get();
      uint8_t* out = outs.back().data();
      const std::string name = std::string("ringfeed ") +
                               (crop == ImageCrop::kCenter ? "eval" : "train") + " " +
                               (dt == DType::kFloat32 ? "float32" : "uint8");
      all.push_back({name,
                     [&files, dec, out, round = uint64_t{0}]() mutable {
                       uint64_t i = 0;
                       for (const auto& j : files) {
                         const std::string why = dec->Decode(j.data(), j.size(), round, i++, out);
                         if (!why.empty())
                           std::fprintf(stderr, "record %llu: %s\n",
                                        static_cast<unsigned long long>(i - 1), why.c_str());
                       }
                       ++round;  // another epoch: other crops
                     },
                     {}});
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (Contestant& c : all) {
      const auto t0 = Clock::now();
      c.run();
      c.rates.push_back(files.size() / std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  tjDestroy(tj);
  const double base = Median(all[0].rates);
  std::printf("%zu JPEGs of %s, output %ux%u, one thread, median of %d rounds:\n", files.size(),
              argv[1], size, size, rounds);
  for (const Contestant& c : all) {
    std::printf("  %-26s %7.0f images/s  %.2f of turbojpeg's\n", c.name.c_str(), Median(c.rates),
                Median(c.rates) / base);
  }
  return 0;
}
