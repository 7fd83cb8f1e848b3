#include "tools/convert/json_line_stream.h"

#include <algorithm>
#include <cstring>

namespace rf::convert {

JsonLineStream::JsonLineStream(File file, uint64_t max_piece)
    : file_(std::move(file)), max_piece_(max_piece), buf_(kReadBytes) {}

bool JsonLineStream::Fill() {
  pos_ = end_ = 0;
  return Compact() && end_ != 0;
}

bool JsonLineStream::Compact() {
  if (!io_error_.ok()) return false;
  if (pos_ != 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  if (eof_ || end_ == buf_.size()) return true;
  const size_t want = buf_.size() - end_;
  Result<size_t> got = file_.ReadSome(buf_.data() + end_, want, read_);
  if (!got.ok()) {
    io_error_ = got.status();
    Halt(Stop::kIoError, read_);
    return false;
  }
  end_ += *got;
  read_ += *got;
  eof_ = *got < want;  // ReadSome reads fewer only at the file's end
  return true;
}

Result<bool> JsonLineStream::NextLine() {
  if (pos_ == end_ && !Fill()) {
    if (!io_error_.ok()) return io_error_;
    return false;
  }
  line_start_ = offset();
  ++line_number_;
  line_length_ = 0;
  stop_ = Stop::kNone;
  stop_in_string_ = saw_value_ = in_string_ = space_run_ = false;
  string_ = {};
  prev_ = ' ';
  piece_ = handed_ = collapse_count_ = skipped_ = 0;
  // Whole where the line lies in the buffer (after moving it to the front, if it runs past the
  // buffer's end), is at most max_piece bytes and holds no NUL.
  const void* nl = std::memchr(buf_.data() + pos_, '\n', end_ - pos_);
  whole_ = false;
  if (nl == nullptr && !eof_ && pos_ != 0) {
    if (!Compact()) return io_error_;
    nl = std::memchr(buf_.data(), '\n', end_);
  }
  const size_t length =
      nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - (buf_.data() + pos_))
                    : end_ - pos_;
  whole_ = (nl != nullptr || eof_) && length <= max_piece_ &&
           std::memchr(buf_.data() + pos_, '\0', length) == nullptr;
  whole_end_ = pos_ + length;
  return true;
}

Status JsonLineStream::EndLine() {
  if (!io_error_.ok()) return io_error_;
  if (whole_) pos_ = whole_end_;  // the parser read a copy of the range
  line_length_ = offset() - line_start_;
  if (pos_ < end_ && buf_[pos_] == '\n') ++pos_;
  return Status::Ok();
}

bool JsonLineStream::SlowAtLineEnd() {
  for (;;) {
    if (stop_ != Stop::kNone) return true;
    if (pos_ == end_ && !Fill()) return true;
    const char c = buf_[pos_];
    if (c == '\n') return true;
    if (c == '\0') {
      Halt(Stop::kNul, offset());
      return true;
    }
    if (!in_string_ && IsSpace(c) && space_run_) {  // one byte of the run was handed on
      ++pos_;
      ++skipped_;
      Collapse& last = collapses_[(collapse_count_ + kRecent - 1) % kRecent];
      if (collapse_count_ != 0 && last.handed == handed_) {
        last.skipped = skipped_;
      } else {
        collapses_[collapse_count_++ % kRecent] = {handed_, skipped_};
      }
      continue;
    }
    if ((in_string_ || !BeginsAPiece(c)) && piece_ >= max_piece_) {
      stop_in_string_ = in_string_;
      Halt(Stop::kTooLong, offset());
      return true;
    }
    return false;
  }
}

bool JsonLineStream::saw_value() const {
  if (!whole_) return saw_value_;
  for (const char* p = whole_begin(); p != whole_end(); ++p) {
    if (!IsSpace(*p)) return true;
  }
  return false;
}

uint64_t JsonLineStream::ByteOfPosition(uint64_t position) const {
  if (whole_) return line_start_ + (position == 0 ? 0 : std::min(position - 1, whole_end_ - pos_));
  if (position > handed_) return stop_ != Stop::kNone ? stop_byte_ : offset();
  if (position == 0) return line_start_;
  // Byte k of those handed (from 0) came after the collapses with handed <= k.
  const uint64_t k = position - 1;
  uint64_t skipped = 0;
  bool found = collapse_count_ <= kRecent;  // every collapse is remembered
  for (uint64_t n = collapse_count_; n != 0 && n + kRecent > collapse_count_; --n) {
    const Collapse& c = collapses_[(n - 1) % kRecent];
    if (c.handed <= k) {
      skipped = c.skipped;
      found = true;
      break;
    }
  }
  return found ? line_start_ + k + skipped : line_start_;
}

}  // namespace rf::convert
