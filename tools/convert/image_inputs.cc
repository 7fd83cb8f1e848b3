#include "tools/convert/image_inputs.h"

#include <fcntl.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "io/file.h"
#include "tools/convert/elem_type.h"
#include "tools/convert/progress.h"

namespace rf::convert {
namespace {

namespace fs = std::filesystem;

uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }

const char* SofName(uint8_t m) {
  switch (m) {
    case 0xc1:
      return "an extended sequential JPEG (SOF1)";
    case 0xc2:
      return "a progressive JPEG (SOF2)";
    case 0xc3:
      return "a lossless JPEG (SOF3)";
    case 0xc5:
    case 0xc6:
    case 0xc7:
      return "a hierarchical JPEG";
    default:
      return "an arithmetic-coded JPEG";
  }
}

bool IsSof(uint8_t m) { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc; }

// libjpeg-turbo's own reading of the header: what it would decode, without decoding.
std::string TurboHeader(const uint8_t* data, size_t n) {
  tjhandle tj = tjInitDecompress();
  if (tj == nullptr) return "libjpeg-turbo could not start";
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  std::string why;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(n), &w, &h, &subsamp, &colorspace) !=
      0) {
    why = std::string("libjpeg-turbo cannot read its header: ") + tjGetErrorStr2(tj);
  } else if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    why = "a CMYK JPEG: only grey and YCbCr JPEGs are stored";
  }
  tjDestroy(tj);
  return why;
}

// The lower-case extension of a file name, with its dot ("" for none).
std::string Extension(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return "";
  std::string e = name.substr(dot);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

bool IsImageExtension(const std::string& ext) {
  static const char* kImage[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                 ".pgm", ".tif",  ".tiff", ".webp"};
  return std::any_of(std::begin(kImage), std::end(kImage), [&](const char* e) { return ext == e; });
}

// Reads a whole file into *out; an error names it. `max` bounds what is read.
Status ReadWhole(const std::string& path, uint64_t max, std::vector<uint8_t>* out,
                 std::string* too_large) {
  RF_ASSIGN_OR_RETURN(File f, File::Open(path, O_RDONLY));
  RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  if (size > max) {
    *too_large =
        std::to_string(size) + " bytes, more than --max-record-size " + std::to_string(max);
    return Status::Ok();
  }
  out->resize(size);
  return f.ReadAt(out->data(), size, 0);
}

class ImageFolderSource : public ImageSource {
 public:
  ImageFolderSource(std::string dir, std::vector<std::string> names,
                    std::vector<std::pair<std::string, uint32_t>> files, uint64_t bytes,
                    uint64_t passed, uint64_t max_file)
      : dir_(std::move(dir)),
        names_(std::move(names)),
        files_(std::move(files)),
        bytes_(bytes),
        passed_(passed),
        max_file_(max_file) {}

  Result<bool> Next(ImageItem* item) override {
    if (next_ == files_.size()) return false;
    const auto& [path, label] = files_[next_++];
    item->name = path;
    item->label = label;
    item->bytes.clear();
    std::string too_large;
    item->error.clear();
    if (Status st = ReadWhole(path, max_file_, &item->bytes, &too_large); !st.ok()) {
      item->error = "cannot be read: " + st.ToString();  // named; the others still checked
    } else if (!too_large.empty()) {
      item->error = too_large;
    }
    return true;
  }
  uint32_t classes() const override { return static_cast<uint32_t>(names_.size()); }
  std::vector<std::string> class_names() const override { return names_; }
  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p;
    for (const auto& f : files_) p.push_back(f.first);
    return p;
  }
  uint64_t input_bytes() const override { return bytes_; }
  uint64_t passed_over() const override { return passed_; }

 private:
  std::string dir_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, uint32_t>> files_;
  uint64_t bytes_, passed_, max_file_;
  size_t next_ = 0;
};

// ---- tar (POSIX ustar, GNU long names, pax path records)

constexpr size_t kBlock = 512;

struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of its data in the file
  uint64_t size = 0;
};

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

// Every regular member of a tar file, in order, with where its data lies.
Result<std::vector<TarMember>> ListTar(const std::string& path) {
  RF_ASSIGN_OR_RETURN(File f, File::Open(path, O_RDONLY));
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
          if (len == 0 || p + len > body.size()) break;
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
      members.push_back({name, data, msize});
      long_name.clear();
    } else {
      long_name.clear();  // directories, links, global pax headers: nothing to read
    }
    at = data + (msize + kBlock - 1) / kBlock * kBlock;
  }
  return members;
}

struct WdsSample {
  size_t tar = 0;
  std::string key;
  TarMember image;
  int64_t label = 0;
};

class WebDatasetSource : public ImageSource {
 public:
  WebDatasetSource(std::vector<std::string> tars, std::vector<WdsSample> samples, uint32_t classes,
                   uint64_t bytes, uint64_t passed, uint64_t max_file)
      : tars_(std::move(tars)),
        samples_(std::move(samples)),
        classes_(classes),
        bytes_(bytes),
        passed_(passed),
        max_file_(max_file) {}

  Result<bool> Next(ImageItem* item) override {
    if (next_ == samples_.size()) return false;
    const WdsSample& s = samples_[next_++];
    item->name = tars_[s.tar] + ":" + s.image.name;
    item->label = s.label;
    item->bytes.clear();
    item->error.clear();
    if (s.image.size > max_file_) {
      item->error = std::to_string(s.image.size) + " bytes, more than --max-record-size " +
                    std::to_string(max_file_);
      return true;
    }
    if (!open_ || open_tar_ != s.tar) {
      RF_ASSIGN_OR_RETURN(file_, File::Open(tars_[s.tar], O_RDONLY));
      open_ = true;
      open_tar_ = s.tar;
    }
    item->bytes.resize(s.image.size);
    RF_RETURN_IF_ERROR(file_.ReadAt(item->bytes.data(), s.image.size, s.image.offset));
    return true;
  }
  uint32_t classes() const override { return classes_; }
  std::vector<std::string> input_paths() const override { return tars_; }
  uint64_t input_bytes() const override { return bytes_; }
  uint64_t passed_over() const override { return passed_; }

 private:
  std::vector<std::string> tars_;
  std::vector<WdsSample> samples_;
  uint32_t classes_;
  uint64_t bytes_, passed_, max_file_;
  size_t next_ = 0;
  File file_;
  bool open_ = false;
  size_t open_tar_ = 0;
};

}  // namespace

std::string CheckJpeg(const uint8_t* d, size_t n, uint32_t max_side, JpegInfo* info) {
  static const uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n >= sizeof kPng && std::memcmp(d, kPng, sizeof kPng) == 0) return "PNG data, not a JPEG";
  if (n == 0) return "an empty file, not a JPEG";
  if (n < 4 || d[0] != 0xff || d[1] != 0xd8) {
    char b[96];
    std::snprintf(b, sizeof b, "not a JPEG (it starts with bytes %02x %02x, not ff d8)", d[0],
                  n > 1 ? d[1] : 0);
    return b;
  }
  size_t p = 2;
  bool have_sof = false;
  size_t sos = 0;
  while (sos == 0) {
    while (p < n && d[p] == 0xff && p + 1 < n && d[p + 1] == 0xff) ++p;  // fill bytes
    if (p + 2 > n) return "truncated: its header ends before the first scan";
    if (d[p] != 0xff) return "not a JPEG: a byte between markers at " + std::to_string(p);
    const uint8_t m = d[p + 1];
    p += 2;
    if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) continue;  // no length
    if (m == 0xd9) return "no image: an end-of-image marker before any scan";
    if (p + 2 > n) return "truncated: its header ends before the first scan";
    const uint32_t len = Be16(d + p);
    if (len < 2 || p + len > n) return "truncated: its header ends before the first scan";
    if (IsSof(m)) {
      if (have_sof) return "two frame headers";
      have_sof = true;
      if (len < 8) return "a frame header too short";
      const uint32_t precision = d[p + 2];
      info->height = Be16(d + p + 3);
      info->width = Be16(d + p + 5);
      info->components = d[p + 7];
      if (m != 0xc0) return std::string(SofName(m)) + ": only baseline JPEGs (SOF0) are stored";
      if (precision != 8)
        return std::to_string(precision) + "-bit samples: only 8-bit JPEGs are stored";
      if (info->width == 0 || info->height == 0)
        return "a frame header of " + std::to_string(info->width) + "x" +
               std::to_string(info->height) + " pixels";
      if (info->width > max_side || info->height > max_side)
        return std::to_string(info->width) + "x" + std::to_string(info->height) +
               " pixels, more than --max-image-side " + std::to_string(max_side) + " a side";
      if (info->components == 4) return "a CMYK JPEG: only grey and YCbCr JPEGs are stored";
      if (info->components != 1 && info->components != 3)
        return std::to_string(info->components) +
               " components: only grey (1) and YCbCr (3) JPEGs are stored";
    }
    if (m == 0xda) {
      if (!have_sof) return "a scan before the frame header";
      sos = p + len;
    }
    p += len;
  }
  // The entropy-coded data stuffs every 0xff as ff 00 (or is an ff d0-d7 restart marker), so
  // ff d9 after the first scan's header is the end-of-image marker (trailing bytes allowed).
  bool eoi = false;
  for (size_t i = n - 1; i > sos && !eoi; --i) eoi = d[i] == 0xd9 && d[i - 1] == 0xff;
  if (!eoi) return "truncated: no end-of-image marker after the scan";
  return TurboHeader(d, n);
}

Result<std::unique_ptr<ImageSource>> OpenImageFolderSource(const std::string& dir,
                                                           uint64_t max_file_bytes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::InvalidArgument("not a directory (an ImageFolder is one subfolder a class)")
        .WithPath(dir);
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) names.push_back(it->path().filename().string());
  }
  if (ec) return Status::IOError(dir, "cannot list the directory: " + ec.message());
  if (names.empty())
    return Status::InvalidArgument("no class folder (an ImageFolder is one subfolder a class)")
        .WithPath(dir);
  std::sort(names.begin(), names.end());
  if (names.size() > format::MaxClassesFor(DType::kInt32))
    return Status::InvalidArgument("too many class folders").WithPath(dir);
  std::vector<std::pair<std::string, uint32_t>> files;
  uint64_t bytes = 0, passed = 0;
  for (uint32_t c = 0; c < names.size(); ++c) {
    const fs::path folder = fs::path(dir) / names[c];
    std::vector<std::string> in;
    for (fs::recursive_directory_iterator
             it(folder, fs::directory_options::follow_directory_symlink, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec)) continue;
      const std::string path = it->path().string();
      if (IsImageExtension(Extension(it->path().filename().string()))) {
        in.push_back(path);
        bytes += it->is_regular_file(ec) ? it->file_size(ec) : 0;
        ec.clear();
      } else {
        ++passed;
      }
    }
    if (ec) return Status::IOError(folder.string(), "cannot list the folder: " + ec.message());
    if (in.empty())
      return Status::InvalidArgument("class folder " + std::to_string(c) +
                                     " holds no image (.jpg, .jpeg, ...): an empty class")
          .WithPath(folder.string());
    std::sort(in.begin(), in.end());
    for (std::string& f : in) files.emplace_back(std::move(f), c);
  }
  return std::unique_ptr<ImageSource>(new ImageFolderSource(dir, std::move(names), std::move(files),
                                                            bytes, passed, max_file_bytes));
}

Result<std::unique_ptr<ImageSource>> OpenWebDatasetSource(const std::vector<std::string>& tars,
                                                          uint64_t max_file_bytes) {
  std::vector<WdsSample> samples;
  uint64_t bytes = 0, passed = 0;
  int64_t largest = -1;
  for (size_t t = 0; t < tars.size(); ++t) {
    const std::string& path = tars[t];
    RF_ASSIGN_OR_RETURN(std::vector<TarMember> members, ListTar(path));
    RF_ASSIGN_OR_RETURN(File f, File::Open(path, O_RDONLY));
    RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    bytes += size;
    // Members of one key are consecutive (WebDataset's rule); a key seen again later is refused.
    std::map<std::string, bool> seen;
    size_t i = 0;
    while (i < members.size()) {
      const std::string& first = members[i].name;
      const size_t slash = first.rfind('/');
      const size_t dot = first.find('.', slash == std::string::npos ? 0 : slash + 1);
      const std::string key = first.substr(0, dot);
      if (seen.count(key) != 0)
        return Status::InvalidArgument("sample '" + key +
                                       "' appears twice, not in consecutive members")
            .WithPath(path);
      seen[key] = true;
      WdsSample s;
      s.tar = t;
      s.key = key;
      bool image = false, label = false;
      for (; i < members.size(); ++i) {
        const TarMember& m = members[i];
        if (m.name.size() < key.size() + 1 || m.name.compare(0, key.size(), key) != 0 ||
            m.name[key.size()] != '.')
          break;
        const std::string ext = m.name.substr(key.size() + 1);
        if (ext == "jpg" || ext == "jpeg") {
          if (image)
            return Status::InvalidArgument("sample '" + key + "' holds two images").WithPath(path);
          image = true;
          s.image = m;
        } else if (ext == "cls") {
          std::string text(std::min<uint64_t>(m.size, 32), '\0');
          RF_RETURN_IF_ERROR(f.ReadAt(text.data(), text.size(), m.offset));
          while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
            text.pop_back();
          size_t b = 0;
          while (b < text.size() && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
          text = text.substr(b);
          const bool digits =
              m.size <= 32 && !text.empty() && text.size() <= 10 &&
              std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
          const int64_t v = digits ? std::stoll(text) : -1;
          if (!digits || v > int64_t{INT32_MAX})
            return std::move(Status::InvalidArgument(m.name + ": the label '" + text +
                                                     "' is not an integer from 0 to 2^31 - 1")
                                 .WithPath(path)
                                 .WithOffset(m.offset));
          label = true;
          s.label = v;
        } else {
          ++passed;
        }
      }
      if (!image)
        return Status::InvalidArgument("sample '" + key + "' has no image (" + key + ".jpg)")
            .WithPath(path);
      if (!label)
        return Status::InvalidArgument("sample '" + key + "' has no label (" + key + ".cls)")
            .WithPath(path);
      largest = std::max(largest, s.label);
      samples.push_back(std::move(s));
    }
  }
  if (samples.empty())
    return Status::InvalidArgument("no sample in the tar files (KEY.jpg with KEY.cls)")
        .WithPath(tars.empty() ? "" : tars.front());
  return std::unique_ptr<ImageSource>(new WebDatasetSource(
      tars, std::move(samples), static_cast<uint32_t>(largest + 1), bytes, passed, max_file_bytes));
}

Result<ImageConvertSummary> ConvertImages(ImageSource& src, const std::string& out_path,
                                          const ImageConvertOptions& o) {
  const std::vector<std::string> inputs = src.input_paths();
  std::vector<NamedPath> outputs, input_files;
  for (uint32_t i = 0; i < o.shards; ++i)
    outputs.push_back({"", format::ShardPath(out_path, i, o.shards)});
  for (const std::string& in : inputs) input_files.push_back({"", in});
  RF_RETURN_IF_ERROR(CheckOutputPaths(outputs, input_files));

  const auto start = std::chrono::steady_clock::now();
  ImageConvertSummary s;
  s.classes = src.classes();
  s.label_dtype = s.classes <= 256     ? DType::kUInt8
                  : s.classes <= 65536 ? DType::kUInt16
                                       : DType::kInt32;
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kBytes;
  spec.sample_dtype = DType::kUInt8;
  spec.media_type = "image/jpeg";
  spec.has_labels = true;
  spec.label_dtype = s.label_dtype;
  spec.num_classes = s.classes;
  spec.class_names = src.class_names();
  WriterOptions w;
  w.shards = o.shards;
  w.chunk_bytes = o.chunk_bytes;
  w.codec = o.codec;
  w.threads = o.compress_threads;
  w.version = o.format_version;
  w.dataset_id = o.dataset_id;
  w.keep = inputs;
  w.max_record_bytes = o.max_record_bytes;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                      DatasetWriter::Create(out_path, spec, w));

  constexpr size_t kNamed = 10;
  std::vector<std::string> bad;
  uint64_t bad_count = 0, read_bytes = 0;
  ImageItem item;
  std::vector<uint8_t> label(8);
  Progress progress("converting", src.input_bytes(), o.progress);
  for (;;) {
    RF_ASSIGN_OR_RETURN(bool more, src.Next(&item));
    if (!more) break;
    read_bytes += item.bytes.size();
    JpegInfo info;
    std::string why;
    if (!item.error.empty()) {
      why = item.error;
    } else {
      why = CheckJpeg(item.bytes.data(), item.bytes.size(), o.max_image_side, &info);
    }
    if (!why.empty()) {
      if (bad.size() < kNamed) bad.push_back(item.name + ": " + why);
      ++bad_count;
      continue;
    }
    if (bad_count != 0) continue;  // nothing more is written; every bad image is still named
    StoreInteger(ElemOf(s.label_dtype), item.label, label.data(), 0);
    const uint64_t offsets[2] = {0, item.bytes.size()};
    RF_RETURN_IF_ERROR(writer->AppendRecords(item.bytes.data(), offsets, label.data(), 1));
    ++s.images;
    progress.Update(read_bytes);
  }
  progress.Finish();
  if (bad_count != 0) {
    std::string what = std::to_string(bad_count) + " image" + (bad_count == 1 ? "" : "s") +
                       " refused, nothing written: ";
    for (size_t i = 0; i < bad.size(); ++i) what += (i ? "; " : "") + bad[i];
    if (bad_count > bad.size()) what += "; and " + std::to_string(bad_count - bad.size()) + " more";
    return Status::InvalidArgument(what);
  }
  RF_RETURN_IF_ERROR(writer->Finish());
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  s.bytes = writer->bytes_written();
  s.paths = writer->paths();
  s.removed = writer->removed();
  s.input_bytes = read_bytes;
  s.passed_over = src.passed_over();
  RF_ASSIGN_OR_RETURN(Dataset written, Dataset::Open(out_path));
  s.chunks = written.chunk_count();
  return s;
}

std::string ImageConvertReport(const ImageConvertSummary& s) {
  char line[512];
  const double mb = static_cast<double>(s.input_bytes) / 1e6;
  std::snprintf(line, sizeof line,
                "wrote %s: %llu JPEG images of %u classes (%s labels), %llu chunks, %.1f MB "
                "stored; %.1f MB of images in %.2f s (%.1f MB/s)\n",
                s.paths.front().c_str(), static_cast<unsigned long long>(s.images), s.classes,
                std::string(DTypeName(s.label_dtype)).c_str(),
                static_cast<unsigned long long>(s.chunks), static_cast<double>(s.bytes) / 1e6, mb,
                s.seconds, s.seconds > 0 ? mb / s.seconds : 0.0);
  std::string out = line;
  if (s.passed_over != 0)
    out += "passed over " + std::to_string(s.passed_over) + " file" +
           (s.passed_over == 1 ? "" : "s") + " that are not images (by extension)\n";
  for (const std::string& f : s.removed)
    out += "removed " + f + " (an older dataset of the same name)\n";
  return out;
}

}  // namespace rf::convert
