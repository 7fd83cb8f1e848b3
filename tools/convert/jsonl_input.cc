// JSON lines (token_inputs.h): each line a list of ids, or an object with a "tokens" or
// "input_ids" list, parsed by nlohmann-json's SAX interface (no document tree is built) from a
// JsonLineStream (no line is held whole).
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "io/file.h"
#include "tools/convert/input_file.h"
#include "tools/convert/json_line_stream.h"
#include "tools/convert/token_inputs.h"

namespace rf::convert {
namespace {

// A piece of a line (a string, a number, or what lies between two: json_line_stream.h) may be as
// long as a record (--max-record-size) and as the ids read at a time (--memory-budget), whichever
// is smaller, and at least this, so keys and ordinary members always fit. nlohmann-json holds a
// piece up to about 8 times over while it reads it (two growing copies).
constexpr uint64_t kMinPieceBytes = 64 << 10;
// Deeper nesting (in members other than the ids) is refused: nlohmann-json keeps a bit a level.
constexpr int kMaxDepth = 512;

// Builds one line's ids from nlohmann's SAX events: a top-level list of integers, or the list of
// an object's "tokens" or "input_ids" member; anything else is an error kept for the caller.
class IdsHandler final : public nlohmann::json_sax<nlohmann::json> {
 public:
  // Appends to *ids after what it holds; a list of more than max_ids ids stops the parse. The
  // stream is the line's, for where an error lies.
  IdsHandler(std::vector<int64_t>* ids, uint64_t max_ids, const JsonLineStream* stream)
      : ids_(ids), base_(ids->size()), max_ids_(max_ids), stream_(stream) {}

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
    if (depth_ == kMaxDepth) return TooDeep();
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
      if (k == key_) return FailWhere("the key \"" + k + "\" appears twice", Where::kSecondKey);
      if (!key_.empty()) {
        return FailWhere("an object with both \"tokens\" and \"input_ids\"", Where::kSecondKey);
      }
      key_ = k;
      pending_ = true;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == kMaxDepth) return TooDeep();
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
    // "[json.exception.parse_error.101] parse error at line 1, column 4: syntax error ...", or
    // "[json.exception.out_of_range.406] number overflow parsing '...'": the reason alone; the
    // caller names line and column.
    std::string what = e.what();
    const size_t column = what.find("column ");
    const size_t colon = column == std::string::npos ? column : what.find(": ", column);
    if (colon != std::string::npos) {
      what = what.substr(colon + 2);
    } else if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what = what.substr(what.find("] ") + 2);
    }
    // The token nlohmann-json quotes ("last read: '...'", "parsing '...'") may be as long as a
    // piece (64 KiB or more): cut to its first kShown bytes, the rest of the reason kept.
    constexpr size_t kShown = 40;
    for (const std::string_view quote : {"; last read: '", "parsing '"}) {
      const size_t at = what.find(quote);
      if (at == std::string::npos) continue;
      const size_t from = at + quote.size();
      size_t to = what.rfind("'; expected ");
      if (to == std::string::npos || to < from) to = what.rfind('\'');
      if (to != std::string::npos && to > from + kShown)
        what = what.substr(0, from + kShown) + "..." + what.substr(to);
    }
    error_ = "malformed JSON: " + what;
    error_byte_ = stream_->ByteOfPosition(position);
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
  // Else the file's byte it is at, where one is known.
  std::optional<uint64_t> error_byte() const { return error_byte_; }
  // Else what a scan of the line finds it at (LineScan): the second of the object's "tokens" and
  // "input_ids" keys, or the bracket past kMaxDepth.
  enum class Where { kNone, kSecondKey, kTooDeep };
  Where error_where() const { return where_; }
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
  bool FailWhere(const std::string& what, Where where) {
    error_ = what;
    where_ = where;
    return false;
  }
  bool TooDeep() {
    return FailWhere("nested more than " + std::to_string(kMaxDepth) + " levels deep",
                     Where::kTooDeep);
  }

  std::vector<int64_t>* ids_;
  size_t base_;
  uint64_t max_ids_;
  const JsonLineStream* stream_;
  bool too_long_ = false;
  int depth_ = 0;
  int target_depth_ = 0;  // the list's depth inside it; 0 outside
  bool object_ = false, pending_ = false;
  std::string key_;
  std::string error_;
  std::optional<uint64_t> error_element_;
  std::optional<uint64_t> error_byte_;
  Where where_ = Where::kNone;
};

// Finds, in a line fed to it a byte at a time, where an error the parse met lies: the start of
// element j of the list of ids (in a line that parsed up to it), the second key "tokens" or
// "input_ids" of the top-level object, or the bracket nested deeper than kMaxDepth. A scan of
// JSON's tokens that follows strings, nesting and the list's key (`object`: the list is the
// member `key` of a top-level object).
class LineScan {
 public:
  enum class Target { kElement, kSecondKey, kTooDeep };
  LineScan(Target target, bool object, std::string key, uint64_t j)
      : target_(target),
        object_(object),
        key_(std::move(key)),
        j_(j),
        list_depth_(object ? 0 : 1) {}

  // The line's next byte, at 1-based column `column`: true once it is what is looked for.
  bool Feed(char c, uint64_t column) {
    if (in_string_) {
      if (string_.Step(c)) {
        in_string_ = false;
        after_string_ = true;
      } else if (last_.size() < kKept) {
        last_ += c;  // enough to tell the keys from another
      }
      return false;
    }
    if (after_string_) {  // a key is a string followed by ':'; a value equal to it is not one
      if (c == ' ' || c == '\t' || c == '\r') return false;
      after_string_ = false;
      const bool key = c == ':' && depth_ == 1;
      key_seen_ = key && object_ && last_ == key_;
      if (key && target_ == Target::kSecondKey && (last_ == "tokens" || last_ == "input_ids") &&
          ++keys_ == 2) {
        return Found(string_column_);
      }
    }
    if (in_run_) {  // a number or a literal: up to the next delimiter
      if (std::string_view(",]} \t\r").find(c) == std::string_view::npos) return false;
      in_run_ = false;
    }
    switch (c) {
      case ' ':
      case '\t':
      case '\r':
      case '\n':
      case ',':
      case ':':
        return false;
      case '"':
        in_string_ = true;
        string_ = {};
        last_.clear();
        string_column_ = column;
        return AtElement() && Found(column);
      case '[':
      case '{':
        if (AtElement()) return Found(column);
        if (++depth_ > kMaxDepth && target_ == Target::kTooDeep) return Found(column);
        if (c == '[' && object_ && key_seen_ && depth_ == 2) list_depth_ = 2;
        key_seen_ = false;
        return false;
      case ']':
      case '}':
        if (depth_ == list_depth_) list_depth_ = -1;  // past the list
        --depth_;
        return false;
      default:
        in_run_ = true;
        return list_depth_ > 0 && AtElement() && Found(column);
    }
  }
  uint64_t column() const { return found_; }

 private:
  static constexpr size_t kKept = 16;  // longer than "input_ids", and any key of the line's list
  bool AtElement() {
    return target_ == Target::kElement && list_depth_ != 0 && depth_ == list_depth_ &&
           element_++ == j_;
  }
  bool Found(uint64_t column) {
    found_ = column;
    return true;
  }

  Target target_;
  bool object_;
  std::string key_;
  uint64_t j_;
  int depth_ = 0, list_depth_;
  uint64_t element_ = 0, keys_ = 0, found_ = 0, string_column_ = 0;
  bool in_string_ = false, after_string_ = false;
  JsonStringEnd string_;
  bool key_seen_ = false, in_run_ = false;
  std::string last_;
};

// The 1-based column the scan finds in the line at byte `start` of f, read again in pieces up to
// its '\n' or `length` bytes; 1 where it is not found (or the read fails).
uint64_t ScanColumn(const File& f, uint64_t start, uint64_t length, LineScan scan) {
  constexpr size_t kPiece = 64 << 10;
  std::vector<char> buf(kPiece);
  for (uint64_t done = 0; done < length;) {
    Result<size_t> got =
        f.ReadSome(buf.data(), std::min<uint64_t>(buf.size(), length - done), start + done);
    if (!got.ok() || *got == 0) break;
    for (size_t i = 0; i < *got; ++i) {
      if (buf[i] == '\n') return 1;
      if (scan.Feed(buf[i], done + i + 1)) return scan.column();
    }
    done += *got;
  }
  return 1;
}

class JsonLinesSource final : public DocumentSource {
 public:
  JsonLinesSource(std::vector<std::string> paths, uint64_t bytes, uint64_t max_piece)
      : paths_(std::move(paths)), bytes_(bytes), max_piece_(max_piece) {}

  Elem elem() const override { return Elem::kI64; }
  bool ids_fit_uint16() const override { return false; }

  Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) override {
    DocumentBlock b;
    b.first = next_doc_;
    ids_.clear();
    offsets_.assign(1, 0);
    lines_.clear();
    keys_.clear();
    while (offsets_.size() == 1 || ids_.size() * 8 < block_bytes) {
      if (!stream_) {
        if (next_file_ == paths_.size()) break;
        RF_ASSIGN_OR_RETURN(File f, OpenInputFile(paths_[next_file_]));
        stream_ = std::make_unique<JsonLineStream>(std::move(f), max_piece_);
        ++next_file_;
      }
      RF_ASSIGN_OR_RETURN(const bool more, stream_->NextLine());
      if (!more) {
        done_ += stream_->line_start();
        stream_.reset();
        continue;
      }
      RF_RETURN_IF_ERROR(ParseLine(max_ids));
    }
    b.count = offsets_.size() - 1;
    b.ids = reinterpret_cast<const uint8_t*>(ids_.data());
    b.offsets = offsets_.data();
    b.input_bytes_done = done_ + (stream_ ? stream_->line_start() : 0);
    return b;
  }

  Status Rewind() override {
    stream_.reset();
    next_file_ = 0;
    next_doc_ = 0;
    done_ = 0;
    return Status::Ok();
  }

  // Reads the document's line again and finds the id's column (an error's path only).
  DocumentPosition IdAt(uint64_t doc, uint64_t j) const override {
    const uint64_t first = next_doc_ - lines_.size();
    const Line& at = lines_[doc - first];
    uint64_t column = 1;
    if (Result<File> f = OpenInputFile(paths_[at.file]); f.ok()) {
      const auto& [object, key] = keys_[doc - first];
      column =
          ScanColumn(*f, at.start, at.length, LineScan(LineScan::Target::kElement, object, key, j));
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

  // The stream's current line as the next document, or the error that refuses it. What stopped
  // the stream (a NUL byte, a piece past the bound, a failed read) is reported over the parser's
  // error, which only follows from it.
  Status ParseLine(uint64_t max_ids) {
    JsonLineStream& in = *stream_;
    Line at{next_file_ - 1, in.line_number(), in.line_start(), 0};
    IdsHandler handler(&ids_, max_ids, &in);
    const bool ok = in.whole()
                        ? nlohmann::json::sax_parse(in.whole_begin(), in.whole_end(), &handler)
                        : nlohmann::json::sax_parse(in.begin(), in.end(), &handler);
    const uint64_t start = in.line_start();
    auto column_of = [start](uint64_t byte) { return byte - start + 1; };
    switch (in.stop()) {
      case JsonLineStream::Stop::kIoError:
        return in.io_error();
      case JsonLineStream::Stop::kNul:
        return LineError(at, column_of(in.stop_byte()),
                         "a NUL byte (JSON lines are text; NUL is no part of a JSON value)");
      case JsonLineStream::Stop::kTooLong:
        return LineError(
            at, column_of(in.stop_byte()),
            std::string(in.stop_in_string() ? "a string" : "a number or a run between strings") +
                " longer than " + std::to_string(in.max_piece()) +
                " bytes (a line's strings are held whole while it is parsed: at most "
                "--max-record-size or --memory-budget, whichever is smaller, and 64 KiB)");
      case JsonLineStream::Stop::kNone:
        break;
    }
    if (!ok && !in.saw_value())
      return LineError(at, 1, "a blank line (each line is one JSON value)");
    if (ok) handler.Finish();
    if (handler.too_long()) return TooLongDocument(Where(at, 1), next_doc_, std::nullopt, max_ids);
    if (!handler.error().empty()) {
      uint64_t column = 1;
      if (handler.error_byte()) {
        column = column_of(*handler.error_byte());
      } else if (handler.error_element() || handler.error_where() != IdsHandler::Where::kNone) {
        const LineScan::Target target = handler.error_element() ? LineScan::Target::kElement
                                        : handler.error_where() == IdsHandler::Where::kSecondKey
                                            ? LineScan::Target::kSecondKey
                                            : LineScan::Target::kTooDeep;
        column = ScanColumn(
            in.file(), start, UINT64_MAX,
            LineScan(target, handler.object(), handler.key(), handler.error_element().value_or(0)));
      }
      return LineError(at, column, handler.error());
    }
    RF_RETURN_IF_ERROR(in.EndLine());
    at.length = in.line_length();
    offsets_.push_back(ids_.size());
    lines_.push_back(at);
    keys_.emplace_back(handler.object(), handler.key());
    ++next_doc_;
    return Status::Ok();
  }

  std::vector<std::string> paths_;
  uint64_t bytes_;
  uint64_t max_piece_;
  std::unique_ptr<JsonLineStream> stream_;
  size_t next_file_ = 0;
  uint64_t next_doc_ = 0, done_ = 0;
  std::vector<int64_t> ids_;
  std::vector<uint64_t> offsets_;
  std::vector<Line> lines_;                         // the last block's documents' lines
  std::vector<std::pair<bool, std::string>> keys_;  // and where their lists were
};

}  // namespace

Result<std::unique_ptr<DocumentSource>> OpenJsonLinesSource(const std::vector<std::string>& paths,
                                                            uint64_t max_record_bytes,
                                                            uint64_t memory_budget) {
  const uint64_t max_piece = std::max(std::min(max_record_bytes, memory_budget), kMinPieceBytes);
  uint64_t bytes = 0;
  for (const std::string& p : paths) {
    RF_ASSIGN_OR_RETURN(File f, OpenInputFile(p));  // each exists and can be read
    RF_ASSIGN_OR_RETURN(const uint64_t size, f.Size());
    bytes += size;
  }
  return std::unique_ptr<DocumentSource>(new JsonLinesSource(paths, bytes, max_piece));
}

}  // namespace rf::convert
