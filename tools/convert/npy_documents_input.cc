// .npy documents (token_inputs.h): a directory of 1-D arrays, or one array with its offsets.
#include <algorithm>
#include <filesystem>
#include <vector>

#include "io/file.h"
#include "tools/convert/byte_order.h"
#include "tools/convert/input_file.h"
#include "tools/convert/npy_header.h"
#include "tools/convert/token_inputs.h"

namespace rf::convert {
namespace {

Status NotIds(const std::string& path, const NpyHeader& h, const std::string& what) {
  return std::move(Status::Corruption(path, what).WithOffset(h.shape_offset));
}

// A 1-D integer array, or an error naming the file and its shape's byte.
Result<NpyHeader> ReadIdsHeader(const File& f, const std::string& role) {
  RF_ASSIGN_OR_RETURN(const uint64_t size, f.Size());
  RF_ASSIGN_OR_RETURN(NpyHeader h, ReadNpyHeader(f, size));
  if (h.shape.size() != 1)
    return NotIds(f.path(), h, role + " is a 1-D array; this one has shape " + h.ShapeText());
  if (!ElemIsInteger(h.elem))
    return NotIds(f.path(), h, role + " holds integers, not '" + h.descr + "'");
  return h;
}

class NpyDirectorySource final : public DocumentSource {
 public:
  struct Doc {
    std::string path;
    NpyHeader header;
  };
  NpyDirectorySource(std::vector<Doc> docs, uint64_t bytes)
      : docs_(std::move(docs)), bytes_(bytes) {}

  Elem elem() const override { return docs_.front().header.elem; }

  Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) override {
    DocumentBlock b;
    b.first = next_;
    const size_t item = ElemSize(elem());
    offsets_.assign(1, 0);
    ids_.clear();
    while (next_ < docs_.size() && (offsets_.size() == 1 || ids_.size() < block_bytes)) {
      const Doc& d = docs_[next_];
      const uint64_t n = d.header.shape[0];
      if (n > max_ids)
        return TooLongDocument({d.path, d.header.data_offset, ""}, next_, n, max_ids);
      RF_ASSIGN_OR_RETURN(File f, OpenInputFile(d.path));
      const size_t at = ids_.size();
      ids_.resize(at + n * item);
      RF_RETURN_IF_ERROR(f.ReadAt(ids_.data() + at, n * item, d.header.data_offset));
      if (d.header.big_endian) SwapBytes(ids_.data() + at, item, n);
      offsets_.push_back(offsets_.back() + n);
      done_ += d.header.data_offset + n * item;
      ++next_;
    }
    b.count = offsets_.size() - 1;
    b.ids = ids_.data();
    b.offsets = offsets_.data();
    b.input_bytes_done = done_;
    return b;
  }

  Status Rewind() override {
    next_ = 0;
    done_ = 0;
    return Status::Ok();
  }

  DocumentPosition IdAt(uint64_t doc, uint64_t j) const override {
    const Doc& d = docs_[doc];
    return {d.path, d.header.data_offset + j * ElemSize(elem()), ""};
  }

  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p;
    for (const Doc& d : docs_) p.push_back(d.path);
    return p;
  }
  uint64_t input_bytes() const override { return bytes_; }

 private:
  std::vector<Doc> docs_;
  uint64_t bytes_;
  uint64_t next_ = 0, done_ = 0;
  std::vector<uint8_t> ids_;
  std::vector<uint64_t> offsets_;
};

class NpyOffsetsSource final : public DocumentSource {
 public:
  NpyOffsetsSource(File ids, NpyHeader ih, File offsets, NpyHeader oh)
      : ids_file_(std::move(ids)), offsets_file_(std::move(offsets)), ih_(ih), oh_(oh) {}

  Elem elem() const override { return ih_.elem; }

  Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) override {
    DocumentBlock b;
    b.first = next_;
    const size_t item = ElemSize(elem());
    offsets_.assign(1, 0);
    const uint64_t docs = oh_.shape[0] - 1;
    RF_ASSIGN_OR_RETURN(const uint64_t start, Offset(next_));
    while (next_ < docs && (offsets_.size() == 1 || offsets_.back() * item < block_bytes)) {
      RF_ASSIGN_OR_RETURN(const uint64_t end, Offset(next_ + 1));  // checked at open
      const uint64_t begin = start + offsets_.back();
      if (end - begin > max_ids) {
        return TooLongDocument({ids_file_.path(), ih_.data_offset + begin * item, ""}, next_,
                               end - begin, max_ids);
      }
      offsets_.push_back(end - start);
      ++next_;
    }
    b.count = offsets_.size() - 1;
    ids_.resize(offsets_.back() * item);
    RF_RETURN_IF_ERROR(ids_file_.ReadAt(ids_.data(), ids_.size(), ih_.data_offset + start * item));
    if (ih_.big_endian) SwapBytes(ids_.data(), item, offsets_.back());
    block_start_ = start;
    b.ids = ids_.data();
    b.offsets = offsets_.data();
    b.input_bytes_done = ih_.data_offset + (start + offsets_.back()) * item;
    return b;
  }

  Status Rewind() override {
    next_ = 0;
    return Status::Ok();
  }

  DocumentPosition IdAt(uint64_t doc, uint64_t j) const override {
    const uint64_t first = next_ - (offsets_.size() - 1);
    return {ids_file_.path(),
            ih_.data_offset + (block_start_ + offsets_[doc - first] + j) * ElemSize(elem()), ""};
  }

  std::vector<std::string> input_paths() const override {
    return {ids_file_.path(), offsets_file_.path()};
  }
  uint64_t input_bytes() const override {
    return ih_.data_offset + ih_.Elems() * ElemSize(ih_.elem);
  }

  // Offset i, read through a window of the offsets file. A checked value (open) fits int64.
  Result<uint64_t> Offset(uint64_t i) {
    if (i < window_begin_ || i >= window_begin_ + window_.size() / ElemSize(oh_.elem)) {
      const size_t os = ElemSize(oh_.elem);
      window_begin_ = i;
      window_.resize(std::min<uint64_t>(1 << 16, oh_.shape[0] - i) * os);
      RF_RETURN_IF_ERROR(
          offsets_file_.ReadAt(window_.data(), window_.size(), oh_.data_offset + i * os));
      if (oh_.big_endian) SwapBytes(window_.data(), os, window_.size() / os);
    }
    return static_cast<uint64_t>(LoadInteger(oh_.elem, window_.data(), i - window_begin_));
  }

  // The offsets against the rules (token_inputs.h), before any document is handed out.
  Status CheckOffsets() {
    const uint64_t count = oh_.shape[0];
    const size_t os = ElemSize(oh_.elem);
    int64_t prev = 0;
    for (uint64_t i = 0; i < count; ++i) {
      // LoadInteger (Offset) holds a uint64 above 2^63 - 1 at 2^63 - 1: each message prints the
      // value as the file holds it (IntegerText), never that.
      RF_ASSIGN_OR_RETURN(const uint64_t raw, Offset(i));
      const int64_t v = static_cast<int64_t>(raw);
      const std::string value = IntegerText(oh_.elem, window_.data(), i - window_begin_);
      std::string what;
      if (i == 0 && v != 0) {
        what = "offset 0 is " + value + ", not 0 (the first document starts the ids)";
      } else if (v < prev) {
        what = "offset " + std::to_string(i) + " is " + value + ", below the one before it (" +
               std::to_string(prev) + ")";
      } else if (static_cast<uint64_t>(v) > ih_.shape[0] ||
                 (i + 1 == count && static_cast<uint64_t>(v) != ih_.shape[0])) {
        what = "offset " + std::to_string(i) + " is " + value + "; the last is " +
               ids_file_.path() + "'s length, " + std::to_string(ih_.shape[0]);
      }
      if (!what.empty()) {
        return std::move(
            Status::Corruption(offsets_file_.path(), what).WithOffset(oh_.data_offset + i * os));
      }
      prev = v;
    }
    return Status::Ok();
  }

 private:
  File ids_file_, offsets_file_;
  NpyHeader ih_, oh_;
  uint64_t next_ = 0;
  uint64_t block_start_ = 0;  // the last block's first id, in the ids array
  std::vector<uint8_t> ids_, window_;
  uint64_t window_begin_ = 0;
  std::vector<uint64_t> offsets_;
};

}  // namespace

Result<std::unique_ptr<DocumentSource>> OpenNpyDirectorySource(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::InvalidArgument(
        dir +
        ": not a directory (npy-docs reads a directory of .npy files, or one .npy with "
        "--offsets)");
  }
  // Every name ending .npy is a document: one that is a link to nothing, or not a regular file
  // (a FIFO would block the read), is refused naming it, not passed over; other names are (a
  // link to nothing among them too: it ended the listing, "cannot list the directory").
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= 4 || !name.ends_with(".npy")) continue;
    const std::string path = it->path().string();
    std::error_code kind;
    const std::filesystem::file_status st = it->status(kind);  // through symbolic links
    if (st.type() == std::filesystem::file_type::not_found) {
      return Status::InvalidArgument(
                 "a symbolic link to nothing, where the directory's .npy files are its documents")
          .WithPath(path);
    }
    if (kind) return Status::IOError(path, "cannot look at the file", kind.value());
    RF_RETURN_IF_ERROR(CheckInputIsRegular(path));
    names.push_back(name);
  }
  if (ec) return Status::IOError(dir, "cannot list the directory", ec.value());
  if (names.empty()) return Status::InvalidArgument(dir + ": no .npy file in the directory");
  std::sort(names.begin(), names.end());
  std::vector<NpyDirectorySource::Doc> docs;
  uint64_t bytes = 0;
  for (const std::string& name : names) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    RF_ASSIGN_OR_RETURN(File f, OpenInputFile(path));
    RF_ASSIGN_OR_RETURN(NpyHeader h, ReadIdsHeader(f, "a document"));
    if (!docs.empty() && h.elem != docs.front().header.elem) {
      return NotIds(path, h,
                    "holds " + std::string(ElemName(h.elem)) + " ids, but " + docs.front().path +
                        " holds " + std::string(ElemName(docs.front().header.elem)) +
                        " (the documents share one dtype)");
    }
    bytes += h.data_offset + h.Elems() * ElemSize(h.elem);
    docs.push_back({path, std::move(h)});
  }
  return std::unique_ptr<DocumentSource>(new NpyDirectorySource(std::move(docs), bytes));
}

Result<std::unique_ptr<DocumentSource>> OpenNpyOffsetsSource(const std::string& ids_path,
                                                             const std::string& offsets_path) {
  RF_ASSIGN_OR_RETURN(File ids, OpenInputFile(ids_path));
  RF_ASSIGN_OR_RETURN(NpyHeader ih, ReadIdsHeader(ids, "the ids"));
  RF_ASSIGN_OR_RETURN(File offsets, OpenInputFile(offsets_path));
  RF_ASSIGN_OR_RETURN(NpyHeader oh, ReadIdsHeader(offsets, "the offsets"));
  if (oh.shape[0] < 2) {
    return NotIds(offsets_path, oh,
                  "the offsets hold N + 1 entries for N documents, one document at least");
  }
  auto source = std::make_unique<NpyOffsetsSource>(std::move(ids), ih, std::move(offsets), oh);
  RF_RETURN_IF_ERROR(source->CheckOffsets());
  return std::unique_ptr<DocumentSource>(std::move(source));
}

}  // namespace rf::convert
