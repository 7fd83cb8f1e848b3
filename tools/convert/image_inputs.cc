#include "tools/convert/image_inputs.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "core/dtype.h"
#include "io/file.h"
#include "io/format.h"
#include "tools/convert/input_file.h"
#include "tools/convert/splitmix.h"
#include "tools/convert/tar_reader.h"

namespace rf::convert {
namespace {

namespace fs = std::filesystem;

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
  RF_ASSIGN_OR_RETURN(File f, OpenInputFile(path));
  RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  if (size > max) {
    *too_large =
        std::to_string(size) + " bytes, more than --max-record-size " + std::to_string(max);
    return Status::Ok();
  }
  out->resize(size);
  return f.ReadAt(out->data(), size, 0);
}

bool IsImageMember(const std::string& ext) {
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "webp";
}

// What --fields asks of each sample: the table, and for each stored field but the image the
// extension of its member (in table order). Usage for a list without one image extension.
struct WantedFields {
  std::vector<format::FieldSpec> table;
  std::vector<std::string> extras;
  bool label = true;  // a .cls is read
};
Result<WantedFields> FieldsOf(const std::vector<std::string>& exts) {
  WantedFields w;
  if (exts.empty()) return w;
  w.label = false;
  int images = 0;
  for (const std::string& e : exts) {
    format::FieldSpec f;
    f.name = e;
    if (IsImageMember(e)) {
      ++images;
      f.media_type = "image/jpeg";  // the codecs met are known at the end (SetMediaType)
    } else if (e == "cls") {
      f.kind = format::FieldKind::kLabel;
      w.label = true;
    } else {
      f.media_type = e == "txt" ? "text/plain" : e == "json" ? "application/json" : "";
      w.extras.push_back(e);
    }
    w.table.push_back(std::move(f));
  }
  if (images != 1)
    return Status::Usage("--fields " + format::FieldsText(w.table) +
                         ": name one image "
                         "(jpg, jpeg, png or webp), not " +
                         std::to_string(images));
  for (format::FieldSpec& f : w.table) {
    if (f.kind == format::FieldKind::kLabel) f.dtype = DType::kInt32;  // checked as any label
  }
  if (Status st = format::CheckFields(w.table, w.label, DType::kInt32); !st.ok())
    return Status::Usage("--fields: " + st.message());
  return w;
}

// "DIR/a/x.txt" for image "DIR/a/x.jpg" and extension "txt": an image's caption file.
std::string Beside(const std::string& image, const std::string& ext) {
  const size_t slash = image.rfind('/');
  const size_t dot = image.rfind('.');
  const std::string stem =
      dot != std::string::npos && (slash == std::string::npos || dot > slash + 1)
          ? image.substr(0, dot)
          : image;
  return stem + "." + ext;
}

class ImageFolderSource : public ImageSource {
 public:
  ImageFolderSource(std::string dir, std::vector<std::string> names,
                    std::vector<std::pair<std::string, uint32_t>> files, uint64_t bytes,
                    uint64_t passed, std::vector<std::string> links, uint64_t max_file,
                    WantedFields fields, bool keep_order)
      : dir_(std::move(dir)),
        names_(std::move(names)),
        files_(std::move(files)),
        bytes_(bytes),
        passed_(passed),
        links_(std::move(links)),
        max_file_(max_file),
        fields_(std::move(fields)),
        keep_order_(keep_order) {}

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
    // Samples of several fields: each named file beside the image (its caption, ...).
    item->extras.resize(fields_.extras.size());
    for (size_t k = 0; k < fields_.extras.size() && item->error.empty(); ++k) {
      const std::string beside = Beside(path, fields_.extras[k]);
      if (Status st = ReadWhole(beside, max_file_, &item->extras[k], &too_large); !st.ok()) {
        item->error = beside + " cannot be read: " + st.ToString();
      } else if (!too_large.empty()) {
        item->error = beside + ": " + too_large;
      }
    }
    return true;
  }
  // Without a label field (--fields naming no cls), a dataset without labels.
  uint32_t classes() const override {
    return fields_.label ? static_cast<uint32_t>(names_.size()) : 0;
  }
  std::vector<std::string> class_names() const override {
    return fields_.label ? names_ : std::vector<std::string>{};
  }
  std::vector<format::FieldSpec> fields() const override { return fields_.table; }
  std::string origin() const override {
    char seed[32];
    std::snprintf(seed, sizeof seed, "0x%016llx",
                  static_cast<unsigned long long>(kImageFolderOrderSeed));
    return keep_order_ ? "imagefolder;order=walk"
                       : std::string("imagefolder;order=shuffled;seed=") + seed;
  }
  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p;
    for (const auto& f : files_) {
      p.push_back(f.first);
      for (const std::string& e : fields_.extras) p.push_back(Beside(f.first, e));
    }
    return p;
  }
  uint64_t input_bytes() const override { return bytes_; }
  uint64_t passed_over() const override { return passed_; }
  std::vector<std::string> links_not_followed() const override { return links_; }

 private:
  std::string dir_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, uint32_t>> files_;
  uint64_t bytes_, passed_;
  std::vector<std::string> links_;
  uint64_t max_file_;
  WantedFields fields_;
  bool keep_order_;
  size_t next_ = 0;
};

struct WdsSample {
  size_t tar = 0;
  std::string key;
  TarMember image;
  int64_t label = 0;
  std::vector<TarMember> extras;  // with fields: the other stored fields' members, in order
};

class WebDatasetSource : public ImageSource {
 public:
  WebDatasetSource(std::vector<std::string> tars, std::vector<WdsSample> samples, uint32_t classes,
                   uint64_t bytes, uint64_t passed, uint64_t max_file,
                   std::vector<format::FieldSpec> fields)
      : tars_(std::move(tars)),
        samples_(std::move(samples)),
        fields_(std::move(fields)),
        classes_(classes),
        bytes_(bytes),
        passed_(passed),
        max_file_(max_file) {}

  Result<bool> Next(ImageItem* item) override {
    if (next_ == samples_.size()) return false;
    const WdsSample& s = samples_[next_++];
    item->name = tars_[s.tar] + ":" + PrintableName(s.image.name);
    item->label = s.label;
    item->bytes.clear();
    item->error.clear();
    if (s.image.size > max_file_) {
      item->error = std::to_string(s.image.size) + " bytes, more than --max-record-size " +
                    std::to_string(max_file_);
      return true;
    }
    if (!open_ || open_tar_ != s.tar) {
      RF_ASSIGN_OR_RETURN(file_, OpenInputFile(tars_[s.tar]));
      open_ = true;
      open_tar_ = s.tar;
    }
    item->bytes.resize(s.image.size);
    RF_RETURN_IF_ERROR(file_.ReadAt(item->bytes.data(), s.image.size, s.image.offset));
    item->extras.resize(s.extras.size());
    for (size_t k = 0; k < s.extras.size(); ++k) {
      const TarMember& m = s.extras[k];
      if (m.size > max_file_) {  // bounded as an image is, and named so
        item->error = PrintableName(m.name) + ": " + std::to_string(m.size) +
                      " bytes, more than --max-record-size " + std::to_string(max_file_);
        return true;
      }
      item->extras[k].resize(m.size);
      RF_RETURN_IF_ERROR(file_.ReadAt(item->extras[k].data(), m.size, m.offset));
    }
    return true;
  }
  uint32_t classes() const override { return classes_; }
  std::vector<format::FieldSpec> fields() const override { return fields_; }
  std::string origin() const override { return "webdataset;order=shards"; }
  std::vector<std::string> input_paths() const override { return tars_; }
  uint64_t input_bytes() const override { return bytes_; }
  uint64_t passed_over() const override { return passed_; }

 private:
  std::vector<std::string> tars_;
  std::vector<WdsSample> samples_;
  std::vector<format::FieldSpec> fields_;
  uint32_t classes_;
  uint64_t bytes_, passed_, max_file_;
  size_t next_ = 0;
  File file_;
  bool open_ = false;
  size_t open_tar_ = 0;
};

}  // namespace

Result<std::unique_ptr<ImageSource>> OpenImageFolderSource(const std::string& dir,
                                                           uint64_t max_file_bytes, bool keep_order,
                                                           const std::vector<std::string>& fields) {
  RF_ASSIGN_OR_RETURN(WantedFields wanted, FieldsOf(fields));
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
  std::vector<std::string> links;
  uint64_t bytes = 0, passed = 0;
  for (uint32_t c = 0; c < names.size(); ++c) {
    const fs::path folder = fs::path(dir) / names[c];
    std::vector<std::string> in;
    // Links to directories are not followed (the iterator's default): a link to the tree or a
    // parent would make a loop, and a link elsewhere images of another class. Each entry's own
    // error (a link to nothing) is the entry's, not the listing's.
    for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code entry;
      const std::string path = it->path().string();
      if (it->is_directory(entry)) {
        if (it->is_symlink(entry)) links.push_back(path);
        continue;
      }
      if (IsImageExtension(Extension(it->path().filename().string()))) {
        RF_RETURN_IF_ERROR(CheckInputIsRegular(path));  // a FIFO named .jpg would block the read
        in.push_back(path);
        bytes += it->is_regular_file(entry) ? it->file_size(entry) : 0;
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
    for (std::string& f : in) {
      // Samples of several fields: each named file beside the image, checked before anything
      // is written (the walk counted it as passed over: it is not).
      for (const std::string& e : wanted.extras) {
        const std::string beside = Beside(f, e);
        std::error_code entry;
        if (!fs::is_regular_file(beside, entry))
          return Status::InvalidArgument("image " + f + " has no " + beside +
                                         " beside it, a field --fields names")
              .WithPath(folder.string());
        if (passed > 0) --passed;
      }
      files.emplace_back(std::move(f), c);
    }
  }
  if (!keep_order) {
    // Fisher-Yates from the walk's order (a function of the tree's names alone).
    Xoshiro256 rng(kImageFolderOrderSeed, 0);
    for (size_t i = files.size(); i > 1; --i) std::swap(files[i - 1], files[rng.Next() % i]);
  }
  return std::unique_ptr<ImageSource>(
      new ImageFolderSource(dir, std::move(names), std::move(files), bytes, passed,
                            std::move(links), max_file_bytes, std::move(wanted), keep_order));
}

Result<std::unique_ptr<ImageSource>> OpenWebDatasetSource(const std::vector<std::string>& tars,
                                                          uint64_t max_file_bytes,
                                                          const std::vector<std::string>& fields) {
  RF_ASSIGN_OR_RETURN(const WantedFields wanted, FieldsOf(fields));
  std::vector<WdsSample> samples;
  uint64_t bytes = 0, passed = 0;
  int64_t largest = -1;
  for (size_t t = 0; t < tars.size(); ++t) {
    const std::string& path = tars[t];
    RF_ASSIGN_OR_RETURN(File f, OpenInputFile(path));
    RF_ASSIGN_OR_RETURN(std::vector<TarMember> members, ListTar(f));
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
        return Status::InvalidArgument("sample '" + PrintableName(key) +
                                       "' appears twice, not in consecutive members")
            .WithPath(path);
      seen[key] = true;
      WdsSample s;
      s.tar = t;
      s.key = key;
      bool image = false, label = false;
      s.extras.assign(wanted.extras.size(), TarMember{});
      std::vector<bool> found(wanted.extras.size(), false);
      for (; i < members.size(); ++i) {
        const TarMember& m = members[i];
        if (m.name.size() < key.size() + 1 || m.name.compare(0, key.size(), key) != 0 ||
            m.name[key.size()] != '.')
          break;
        const std::string ext = m.name.substr(key.size() + 1);
        const auto extra = std::find(wanted.extras.begin(), wanted.extras.end(), ext);
        if (extra != wanted.extras.end()) {
          const size_t k = static_cast<size_t>(extra - wanted.extras.begin());
          found[k] = true;
          s.extras[k] = m;
        } else if (IsImageMember(ext)) {
          if (image) {
            return std::move(Status::InvalidArgument(
                                 "sample '" + PrintableName(key) + "' holds two images (" +
                                 PrintableName(s.image.name) + ", " + PrintableName(m.name) + ")")
                                 .WithPath(path)
                                 .WithOffset(m.header));
          }
          image = true;
          s.image = m;
        } else if (ext == "cls" && wanted.label) {
          if (label) {
            return std::move(Status::InvalidArgument("sample '" + PrintableName(key) +
                                                     "' holds two labels (" + PrintableName(key) +
                                                     ".cls twice)")
                                 .WithPath(path)
                                 .WithOffset(m.header));
          }
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
            return std::move(Status::InvalidArgument(PrintableName(m.name) + ": the label '" +
                                                     PrintableName(text) +
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
        return Status::InvalidArgument("sample '" + PrintableName(key) + "' has no image (" +
                                       PrintableName(key) + ".jpg, .png or .webp)")
            .WithPath(path);
      if (!label && wanted.label)
        return Status::InvalidArgument("sample '" + PrintableName(key) + "' has no label (" +
                                       PrintableName(key) + ".cls)")
            .WithPath(path);
      for (size_t k = 0; k < found.size(); ++k) {
        if (!found[k])
          return Status::InvalidArgument("sample '" + PrintableName(key) + "' has no " +
                                         PrintableName(key) + "." + wanted.extras[k] +
                                         ", a field --fields names")
              .WithPath(path);
      }
      largest = std::max(largest, s.label);
      samples.push_back(std::move(s));
    }
  }
  if (samples.empty())
    return Status::InvalidArgument(
               "no sample in the tar files (KEY.jpg, .png or .webp with KEY.cls)")
        .WithPath(tars.empty() ? "" : tars.front());
  return std::unique_ptr<ImageSource>(new WebDatasetSource(
      tars, std::move(samples), wanted.label ? static_cast<uint32_t>(largest + 1) : 0, bytes,
      passed, max_file_bytes, wanted.table));
}

}  // namespace rf::convert
