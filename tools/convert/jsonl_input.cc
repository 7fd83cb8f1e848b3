// JSON lines (token_inputs.h): each line a list of ids, or an object with a "tokens" or
// "input_ids" list, parsed by nlohmann-json's SAX interface (no document tree is built).
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "io/file.h"
#include "tools/convert/input_file.h"
#include "tools/convert/token_inputs.h"

namespace rf::convert {
namespace {

constexpr uint64_t kMaxLine = uint64_t{1} << 30;  // a longer line is refused, not buffered
constexpr size_t kReadBytes = 1 << 20;

// Reads one file's lines front to back; a line is handed out without its '\n'.
class LineReader {
 public:
  explicit LineReader(File file) : file_(std::move(file)) {}
  // The next line in *line (valid until the next call); false at the end of the file.
  Result<bool> Next(std::string_view* line) {
    line_.clear();
    start_ = offset_;
    for (;;) {
      if (pos_ == end_) {
        if (eof_) {
          if (line_.empty() && !partial_) return false;
          partial_ = false;
          *line = line_;
          ++number_;
          return true;
        }
        buf_.resize(kReadBytes);
        RF_ASSIGN_OR_RETURN(const size_t got, file_.ReadSome(buf_.data(), buf_.size(), read_));
        read_ += got;
        pos_ = 0;
        end_ = got;
        eof_ = got == 0;
        continue;
      }
      const char* b = buf_.data() + pos_;
      const char* nl = static_cast<const char*>(std::memchr(b, '\n', end_ - pos_));
      const size_t take = nl != nullptr ? static_cast<size_t>(nl - b) : end_ - pos_;
      if (line_.size() + take > kMaxLine) {
        return std::move(
            Status::InvalidArgument("line " + std::to_string(number_ + 1) + " is longer than 1 GiB")
                .WithPath(file_.path())
                .WithOffset(start_));
      }
      line_.append(b, take);
      pos_ += take;
      offset_ += take;
      partial_ = true;
      if (nl != nullptr) {
        ++pos_;
        ++offset_;
        partial_ = false;
        *line = line_;
        ++number_;
        return true;
      }
    }
  }
  uint64_t line_start() const { return start_; }    // the last line's first byte
  uint64_t line_number() const { return number_; }  // the last line's, from 1
  const File& file() const { return file_; }

 private:
  File file_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t read_ = 0, offset_ = 0, start_ = 0, number_ = 0;
  bool eof_ = false, partial_ = false;
  std::string line_;
};

// Builds one line's ids from nlohmann's SAX events: a top-level list of integers, or the list of
// an object's "tokens" or "input_ids" member; anything else is an error kept for the caller.
class IdsHandler final : public nlohmann::json_sax<nlohmann::json> {
 public:
  // Appends to *ids after what it holds; a list of more than max_ids ids stops the parse.
  IdsHandler(std::vector<int64_t>* ids, uint64_t max_ids)
      : ids_(ids), base_(ids->size()), max_ids_(max_ids) {}

  bool null() override { return Scalar("null"); }
  bool boolean(bool) override { return Scalar("true or false"); }
  bool number_integer(number_integer_t v) override { return Id(v); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Fail("id " + std::to_string(v) + " does not fit int64", true);
    }
    return Id(static_cast<int64_t>(v));
  }
  bool number_float(number_float_t, const string_t& text) override {
    return Scalar("the number " + text);
  }
  bool string(string_t&) override { return Scalar("a string"); }
  bool binary(binary_t&) override { return Scalar("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) object_ = true;
    if (!Nested("an object")) return false;
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1 && (k == "tokens" || k == "input_ids")) {
      if (!key_.empty()) return Fail("an object with both \"tokens\" and \"input_ids\"", false);
      key_ = k;
      pending_ = true;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0 || pending_) {
      target_depth_ = depth_ + 1;
      pending_ = false;
      ++depth_;
      return true;
    }
    if (!Nested("a list")) return false;
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (depth_ + 1 == target_depth_) target_depth_ = 0;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 4: syntax error ...":
    // the reason alone; the caller names line and column.
    std::string what = e.what();
    const size_t column = what.find("column ");
    const size_t colon = column == std::string::npos ? column : what.find(": ", column);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    error_ = "malformed JSON: " + what;
    error_column_ = position;
    return false;
  }

  // After a successful parse: what the line lacked, if anything.
  void Finish() {
    if (error_.empty() && object_ && key_.empty())
      error_ = "an object without a \"tokens\" or \"input_ids\" list";
  }
  const std::string& error() const { return error_; }
  // The element the error is at (in the ids' list), where it is one.
  std::optional<uint64_t> error_element() const { return error_element_; }
  uint64_t error_column() const { return error_column_; }  // 0: none known
  const std::string& key() const { return key_; }
  bool object() const { return object_; }
  bool too_long() const { return too_long_; }

 private:
  bool in_list() const { return target_depth_ != 0 && depth_ == target_depth_; }
  bool Id(int64_t v) {
    if (pending_ || depth_ == 0) return Scalar("a number");
    if (!in_list()) return true;
    if (ids_->size() - base_ == max_ids_) {
      too_long_ = true;
      return false;
    }
    ids_->push_back(v);
    return true;
  }
  // A value that is not an id: an error in the list, or where the list should be.
  bool Scalar(const std::string& what) {
    if (depth_ == 0) return Fail(what + " where a list of ids or an object should be", false);
    if (pending_) return Fail("the \"" + key_ + "\" member is " + what + ", not a list", false);
    if (in_list()) return Fail(what + " in the list of ids (ids are integers)", true);
    return true;
  }
  bool Nested(const std::string& what) {
    if (pending_) return Fail("the \"" + key_ + "\" member is " + what + ", not a list", false);
    if (in_list()) return Fail(what + " in the list of ids (ids are integers)", true);
    return true;
  }
  bool Fail(const std::string& what, bool at_element) {
    error_ = what;
    if (at_element) error_element_ = ids_->size() - base_;
    return false;
  }

  std::vector<int64_t>* ids_;
  size_t base_;
  uint64_t max_ids_;
  bool too_long_ = false;
  int depth_ = 0;
  int target_depth_ = 0;  // the list's depth inside it; 0 outside
  bool object_ = false, pending_ = false;
  std::string key_;
  std::string error_;
  std::optional<uint64_t> error_element_;
  uint64_t error_column_ = 0;
};

// The 1-based column where element j of a line's list of ids starts, in a line that parsed (or
// parsed up to that element): a scan of JSON's tokens that follows strings, nesting and the
// list's key. 0 where it is not found.
uint64_t ElementColumn(std::string_view line, bool object, const std::string& key, uint64_t j) {
  int depth = 0, list_depth = object ? 0 : 1;
  bool key_seen = false;
  std::string last_string;
  uint64_t element = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ':') continue;
    if (c == '"') {
      const size_t start = ++i;
      while (i < line.size() && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
      last_string.assign(line.substr(start, std::min(i, line.size()) - start));
      // A key is a string followed by ':'; a value string equal to the key is not one.
      const size_t next = line.find_first_not_of(" \t\r", i + 1);
      key_seen = object && depth == 1 && last_string == key && next != std::string_view::npos &&
                 line[next] == ':';
      if (list_depth != 0 && depth == list_depth && element++ == j) return start;  // its quote
      continue;
    }
    if (c == '[' || c == '{') {
      if (list_depth != 0 && depth == list_depth && element++ == j) return i + 1;
      ++depth;
      if (c == '[' && object && key_seen && depth == 2) list_depth = 2;
      key_seen = false;
      continue;
    }
    if (c == ']' || c == '}') {
      if (depth == list_depth) list_depth = -1;  // past the list
      --depth;
      continue;
    }
    // A number or a literal: up to the next delimiter.
    const size_t start = i;
    while (i + 1 < line.size() &&
           std::string_view(",]} \t\r").find(line[i + 1]) == std::string_view::npos) {
      ++i;
    }
    if (list_depth > 0 && depth == list_depth && element++ == j) return start + 1;
  }
  return 0;
}

class JsonLinesSource final : public DocumentSource {
 public:
  JsonLinesSource(std::vector<std::string> paths, uint64_t bytes)
      : paths_(std::move(paths)), bytes_(bytes) {}

  Elem elem() const override { return Elem::kI64; }
  bool ids_fit_uint16() const override { return false; }

  Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) override {
    DocumentBlock b;
    b.first = next_doc_;
    ids_.clear();
    offsets_.assign(1, 0);
    lines_.clear();
    while (offsets_.size() == 1 || ids_.size() * 8 < block_bytes) {
      if (!reader_) {
        if (next_file_ == paths_.size()) break;
        RF_ASSIGN_OR_RETURN(File f, OpenInputFile(paths_[next_file_]));
        reader_ = std::make_unique<LineReader>(std::move(f));
        ++next_file_;
      }
      std::string_view line;
      RF_ASSIGN_OR_RETURN(const bool more, reader_->Next(&line));
      if (!more) {
        done_ += reader_->line_start();
        reader_.reset();
        continue;
      }
      const Line at{next_file_ - 1, reader_->line_number(), reader_->line_start(), line.size()};
      IdsHandler handler(&ids_, max_ids);
      std::string_view text = line;
      if (text.find_first_not_of(" \t\r") == std::string_view::npos) {
        return LineError(at, 1, "a blank line (each line is one JSON value)");
      }
      const bool ok = nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &handler);
      if (ok) handler.Finish();
      if (handler.too_long())
        return TooLongDocument(Where(at, 1), next_doc_, std::nullopt, max_ids);
      if (!handler.error().empty()) {
        uint64_t column = handler.error_column();
        if (handler.error_element()) {
          column = ElementColumn(line, handler.object(), handler.key(), *handler.error_element());
        }
        return LineError(at, std::max<uint64_t>(column, 1), handler.error());
      }
      offsets_.push_back(ids_.size());
      lines_.push_back(at);
      keys_.resize(lines_.size());
      keys_.back() = {handler.object(), handler.key()};
      ++next_doc_;
    }
    b.count = offsets_.size() - 1;
    b.ids = reinterpret_cast<const uint8_t*>(ids_.data());
    b.offsets = offsets_.data();
    b.input_bytes_done = done_ + (reader_ ? reader_->line_start() : 0);
    return b;
  }

  Status Rewind() override {
    reader_.reset();
    next_file_ = 0;
    next_doc_ = 0;
    done_ = 0;
    return Status::Ok();
  }

  // Reads the document's line again and finds the id's column (an error's path only).
  DocumentPosition IdAt(uint64_t doc, uint64_t j) const override {
    const uint64_t first = next_doc_ - lines_.size();
    const Line& at = lines_[doc - first];
    std::string text(at.length, '\0');
    uint64_t column = 1;
    Result<File> f = OpenInputFile(paths_[at.file]);
    if (f.ok() && f->ReadAt(text.data(), text.size(), at.start).ok()) {
      const auto& [object, key] = keys_[doc - first];
      column = std::max<uint64_t>(ElementColumn(text, object, key, j), 1);
    }
    return Where(at, column);
  }

  std::vector<std::string> input_paths() const override { return paths_; }
  uint64_t input_bytes() const override { return bytes_; }

 private:
  struct Line {
    size_t file;
    uint64_t number, start, length;
  };
  DocumentPosition Where(const Line& at, uint64_t column) const {
    return {paths_[at.file], at.start + column - 1,
            "line " + std::to_string(at.number) + ", column " + std::to_string(column)};
  }
  Status LineError(const Line& at, uint64_t column, const std::string& what) const {
    const DocumentPosition p = Where(at, column);
    return std::move(Status::Corruption(p.path, p.detail + ": " + what).WithOffset(p.offset));
  }

  std::vector<std::string> paths_;
  uint64_t bytes_;
  std::unique_ptr<LineReader> reader_;
  size_t next_file_ = 0;
  uint64_t next_doc_ = 0, done_ = 0;
  std::vector<int64_t> ids_;
  std::vector<uint64_t> offsets_;
  std::vector<Line> lines_;                         // the last block's documents' lines
  std::vector<std::pair<bool, std::string>> keys_;  // and where their lists were
};

}  // namespace

Result<std::unique_ptr<DocumentSource>> OpenJsonLinesSource(const std::vector<std::string>& paths) {
  uint64_t bytes = 0;
  for (const std::string& p : paths) {
    RF_ASSIGN_OR_RETURN(File f, OpenInputFile(p));  // each exists and can be read
    RF_ASSIGN_OR_RETURN(const uint64_t size, f.Size());
    bytes += size;
  }
  return std::unique_ptr<DocumentSource>(new JsonLinesSource(paths, bytes));
}

}  // namespace rf::convert
