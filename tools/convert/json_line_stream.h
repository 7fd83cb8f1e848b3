// JsonLineStream: one JSON lines file read front to back through a 1 MiB buffer, each line handed
// to a parser (nlohmann-json's SAX parse) without ever being held whole: memory does not follow
// a line's length.
//
// What nlohmann-json itself holds while it parses is bounded too. It keeps every byte it has
// read since the last string or number began (the token its errors quote), and a string whole;
// so no such piece of a line (a string, a number, or the bytes between two of them: brackets,
// true/false/null) may pass max_piece bytes. A line is handed on one of two ways:
//   - whole (whole() true), as a range of the buffer: a line that fits in the buffer, is at most
//     max_piece bytes (so no piece of it can pass the bound) and holds no NUL byte. Almost every
//     line is one of these; the parser reads it as fast as from memory;
//   - streamed (begin()/end(): an input iterator that ends at the line's '\n'), any other line.
//     Each run of whitespace outside strings is handed on as one byte (whitespace there means
//     nothing, and a line of 300 MB of it is then no piece at all), and the line ends early, the
//     parser seeing the end of its input, at a NUL byte (stop() kNul: nlohmann-json takes NUL
//     for the end of its input, so "[1,2]\0[3,4]" was the document [1,2], the rest dropped
//     silently) or at a piece of more than max_piece bytes (stop() kTooLong).
// The caller reports a stop in place of the parser's error (its parse may even have succeeded).
//
// Positions: the parser counts the bytes it was handed; ByteOfPosition maps such a count back to
// the file's byte (for a streamed line, the collapsed runs put back, for the last few bytes
// handed on, which is where the parser's errors lie).
//
// Ownership: owns the file. Thread safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "core/status.h"
#include "io/file.h"

namespace rf::convert {

// Where a JSON string ends, fed its bytes one at a time after its opening quote: Step(c) is true
// for the closing quote (a '"' not escaped by a '\\').
struct JsonStringEnd {
  bool escape = false;
  bool Step(char c) {
    if (escape) {
      escape = false;
      return false;
    }
    escape = c == '\\';
    return c == '"';
  }
};

class JsonLineStream {
 public:
  JsonLineStream(File file, uint64_t max_piece);

  // Starts the next line: false at the end of the file.
  Result<bool> NextLine();
  // After a parse that took the whole line (stop() kNone): steps past its '\n', and returns an
  // I/O error met while the parser read.
  Status EndLine();

  // The line, where it is handed on whole: [whole_begin(), whole_end()), its '\n' not included.
  bool whole() const { return whole_; }
  const char* whole_begin() const { return buf_.data() + pos_; }
  const char* whole_end() const { return buf_.data() + whole_end_; }

  // The line streamed, begin() up to end(), once (where it is not whole).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;
    Iterator() = default;
    explicit Iterator(JsonLineStream* s) : s_(s) {}
    const char& operator*() const { return s_->buf_[s_->pos_]; }
    Iterator& operator++() {
      s_->Advance();
      return *this;
    }
    // Only an iterator against end() is meaningful: is the line over?
    bool operator==(const Iterator& o) const {
      return (s_ == nullptr || s_->AtLineEnd()) && (o.s_ == nullptr || o.s_->AtLineEnd());
    }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    JsonLineStream* s_ = nullptr;
  };
  Iterator begin() { return Iterator(this); }
  Iterator end() { return Iterator(); }

  enum class Stop { kNone, kNul, kTooLong, kIoError };
  Stop stop() const { return stop_; }
  uint64_t stop_byte() const { return stop_byte_; }  // where: the NUL, the byte past the bound
  // kTooLong: the piece was a string (else a number, or what lies between).
  bool stop_in_string() const { return stop_in_string_; }
  const Status& io_error() const { return io_error_; }

  uint64_t line_start() const { return line_start_; }    // the line's first byte
  uint64_t line_number() const { return line_number_; }  // from 1
  // The line's bytes, its '\n' not counted: known once the line was read to its end (EndLine).
  uint64_t line_length() const { return line_length_; }
  // Whether the line holds anything but whitespace (where it was streamed: before it stopped).
  bool saw_value() const;
  // The file's byte of the position-th byte handed to the parser (from 1; one past the last
  // handed: where the line ended or stopped). The line's start where it is not known.
  uint64_t ByteOfPosition(uint64_t position) const;
  uint64_t max_piece() const { return max_piece_; }
  const File& file() const { return file_; }

 private:
  static constexpr size_t kReadBytes = 1 << 20;
  static constexpr size_t kRecent = 8;  // collapses remembered: more than the parser looks back

  // Whether the parser has the whole streamed line: at its '\n', at the file's end, or stopped.
  // Steps over the bytes a whitespace run collapses to nothing, reading more as needed. Inline
  // for the common byte (in the buffer, not whitespace); the rest in SlowAtLineEnd.
  bool AtLineEnd() {
    if (stop_ == Stop::kNone && pos_ < end_) {
      const char c = buf_[pos_];
      if (c != '\n' && c != '\0' && (in_string_ || !IsSpace(c))) {
        if (!in_string_ && BeginsAPiece(c)) return false;
        if (piece_ < max_piece_) return false;
      }
    }
    return SlowAtLineEnd();
  }
  bool SlowAtLineEnd();
  // Hands the byte at pos_ on (after AtLineEnd said false).
  void Advance() {
    const char c = buf_[pos_++];
    ++handed_;
    if (in_string_) {
      ++piece_;
      if (string_.Step(c)) {
        in_string_ = false;
        prev_ = c;
      }
      return;
    }
    piece_ = BeginsAPiece(c) ? 1 : piece_ + 1;
    in_string_ = c == '"';
    space_run_ = IsSpace(c);
    saw_value_ = saw_value_ || !space_run_;
    prev_ = c;
  }
  static bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }
  // Outside a string: where nlohmann-json starts a token it keeps afresh (a string's quote, a
  // number's first byte: after whitespace, ',', ':', '[' or '{', not inside a run of digits, so
  // a number of a billion digits is one piece).
  bool BeginsAPiece(char c) const {
    if (c == '"') return true;
    if (c != '-' && (c < '0' || c > '9')) return false;
    return IsSpace(prev_) || prev_ == ',' || prev_ == ':' || prev_ == '[' || prev_ == '{';
  }
  bool Fill();  // the next bytes after the buffer's (pos_ == end_); false at the end or an error
  // Moves the unread bytes to the buffer's front and reads after them; false on an error.
  bool Compact();
  uint64_t offset() const { return read_ - (end_ - pos_); }
  void Halt(Stop why, uint64_t at) {
    stop_ = why;
    stop_byte_ = at;
  }

  File file_;
  uint64_t max_piece_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t read_ = 0;  // file bytes read into buf_ so far
  bool eof_ = false;   // read_ is the file's size
  Status io_error_;

  uint64_t line_start_ = 0, line_number_ = 0, line_length_ = 0;
  bool whole_ = false;
  size_t whole_end_ = 0;
  Stop stop_ = Stop::kNone;
  uint64_t stop_byte_ = 0;
  bool stop_in_string_ = false;
  bool saw_value_ = false;
  bool in_string_ = false, space_run_ = false;
  JsonStringEnd string_;  // inside a string
  char prev_ = ' ';       // the last byte handed on outside a string
  uint64_t piece_ = 0;    // bytes handed on since the last string or number began
  uint64_t handed_ = 0;   // bytes of this line handed to the parser
  // The last collapses: the count handed before each, and the bytes collapsed up to its end.
  struct Collapse {
    uint64_t handed = 0, skipped = 0;
  };
  Collapse collapses_[kRecent] = {};
  uint64_t collapse_count_ = 0, skipped_ = 0;
};

}  // namespace rf::convert
