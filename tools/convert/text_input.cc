// Text through the byte tokenizer (token_inputs.h): each byte its id, 256 ending each document.
#include <algorithm>
#include <cstring>
#include <vector>

#include "io/file.h"
#include "tools/convert/input_file.h"
#include "tools/convert/token_inputs.h"

namespace rf::convert {
namespace {

constexpr size_t kReadBytes = 1 << 20;

class ByteTextSource final : public DocumentSource {
 public:
  ByteTextSource(std::vector<std::string> paths, std::vector<uint64_t> sizes, bool lines)
      : paths_(std::move(paths)), sizes_(std::move(sizes)), lines_(lines) {}

  Elem elem() const override { return Elem::kU16; }

  Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) override {
    DocumentBlock b;
    b.first = next_doc_;
    ids_.clear();
    offsets_.assign(1, 0);
    starts_.clear();
    while (offsets_.size() == 1 || ids_.size() * 2 < block_bytes) {
      if (file_ == paths_.size()) break;
      if (!open_.is_open()) {
        RF_ASSIGN_OR_RETURN(open_, OpenInputFile(paths_[file_]));
        pos_ = 0;
        in_doc_ = false;
      }
      if (!lines_) {
        // The whole file is one document, its size known: read it at once.
        const uint64_t size = sizes_[file_];
        if (size + 1 > max_ids)
          return TooLongDocument({paths_[file_], 0, ""}, next_doc_, size + 1, max_ids);
        RF_RETURN_IF_ERROR(ReadFile(size));
        if (size != 0) ids_.push_back(kEndOfDocument);  // an empty file stays an empty document
        EndDocument(0);
        NextFile();
        continue;
      }
      // Lines: up to the next '\n' (or the file's end), in reads of kReadBytes.
      if (pos_ == sizes_[file_]) {
        if (in_doc_) EndDocument(doc_start_);  // a last line without its '\n'
        NextFile();
        continue;
      }
      buf_.resize(std::min<uint64_t>(kReadBytes, sizes_[file_] - pos_));
      RF_RETURN_IF_ERROR(open_.ReadAt(buf_.data(), buf_.size(), pos_));
      const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(buf_.data(), '\n', buf_.size()));
      const size_t take = nl != nullptr ? static_cast<size_t>(nl - buf_.data()) : buf_.size();
      if (!in_doc_) {
        in_doc_ = true;
        doc_start_ = pos_;
      }
      if (ids_.size() - offsets_.back() + take + 1 > max_ids) {
        return TooLongDocument({paths_[file_], doc_start_, ""}, next_doc_, std::nullopt, max_ids);
      }
      ids_.insert(ids_.end(), buf_.begin(), buf_.begin() + take);
      pos_ += take;
      if (nl != nullptr) {
        ++pos_;
        EndDocument(doc_start_);
      }
    }
    b.count = offsets_.size() - 1;
    b.ids = reinterpret_cast<const uint8_t*>(ids_.data());
    b.offsets = offsets_.data();
    b.input_bytes_done = done_ + pos_;
    return b;
  }

  Status Rewind() override {
    open_ = File();
    file_ = 0;
    next_doc_ = 0;
    done_ = 0;
    pos_ = 0;
    return Status::Ok();
  }

  DocumentPosition IdAt(uint64_t doc, uint64_t j) const override {
    const uint64_t first = next_doc_ - starts_.size();
    const auto& [file, start] = starts_[doc - first];
    return {paths_[file], start + j, ""};  // the end-of-document id: just past the text
  }

  std::vector<std::string> input_paths() const override { return paths_; }
  uint64_t input_bytes() const override {
    uint64_t n = 0;
    for (uint64_t s : sizes_) n += s;
    return n;
  }
  bool ids_fit_uint16() const override { return true; }

 private:
  Status ReadFile(uint64_t size) {
    const size_t at = ids_.size();
    ids_.resize(at + size);
    std::vector<uint8_t>& bytes = buf_;
    for (uint64_t done = 0; done < size;) {
      bytes.resize(std::min<uint64_t>(kReadBytes, size - done));
      RF_RETURN_IF_ERROR(open_.ReadAt(bytes.data(), bytes.size(), done));
      std::copy(bytes.begin(), bytes.end(), ids_.begin() + at + done);
      done += bytes.size();
    }
    pos_ = size;
    return Status::Ok();
  }
  // Ends the document being read (its text in ids_ since the last offset), which started at
  // byte `start` of the current file: a line gets its end-of-document id unless it is empty.
  void EndDocument(uint64_t start) {
    if (lines_ && ids_.size() != offsets_.back()) ids_.push_back(kEndOfDocument);
    offsets_.push_back(ids_.size());
    starts_.emplace_back(file_, start);
    ++next_doc_;
    in_doc_ = false;
  }
  void NextFile() {
    done_ += sizes_[file_];
    pos_ = 0;
    open_ = File();
    ++file_;
  }

  std::vector<std::string> paths_;
  std::vector<uint64_t> sizes_;
  bool lines_;
  File open_;
  size_t file_ = 0;
  uint64_t pos_ = 0, doc_start_ = 0, next_doc_ = 0, done_ = 0;
  bool in_doc_ = false;
  std::vector<uint8_t> buf_;
  std::vector<uint16_t> ids_;
  std::vector<uint64_t> offsets_;
  std::vector<std::pair<size_t, uint64_t>> starts_;  // the last block's documents: file, byte
};

}  // namespace

Result<std::unique_ptr<DocumentSource>> OpenByteTextSource(const std::vector<std::string>& paths,
                                                           bool split_lines) {
  std::vector<uint64_t> sizes;
  for (const std::string& p : paths) {
    RF_ASSIGN_OR_RETURN(File f, OpenInputFile(p));
    RF_ASSIGN_OR_RETURN(const uint64_t size, f.Size());
    sizes.push_back(size);
  }
  return std::unique_ptr<DocumentSource>(new ByteTextSource(paths, sizes, split_lines));
}

}  // namespace rf::convert
