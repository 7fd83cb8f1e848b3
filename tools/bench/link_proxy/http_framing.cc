#include "tools/bench/link_proxy/http_framing.h"

#include <strings.h>

#include <algorithm>
#include <cstdlib>

namespace rf::link {
namespace {

constexpr size_t kMaxHead = 64 << 10;
constexpr uint32_t kHeadEnd = 0x0d0a0d0a;  // "\r\n\r\n"

// The value of header `name` (case-insensitive) in `head`, or "" where it has none.
std::string HeaderValue(const std::string& head, const char* name) {
  const size_t len = std::char_traits<char>::length(name);
  size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const size_t line = at + 2, end = head.find("\r\n", line);
    if (end == std::string::npos) break;
    if (end - line > len && head[line + len] == ':' &&
        ::strncasecmp(head.data() + line, name, len) == 0) {
      size_t v = line + len + 1;
      while (v < end && head[v] == ' ') ++v;
      return head.substr(v, end - v);
    }
    at = end;
  }
  return "";
}

}  // namespace

void RequestTracker::Feed(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_method_) {
      if (c == ' ') {
        in_method_ = false;
      } else if (method_.size() < 16) {
        method_ += c;
      }
    }
    tail_ = (tail_ << 8) | static_cast<uint8_t>(c);
    if (tail_ == kHeadEnd) {
      methods_.push_back(method_);
      method_.clear();
      in_method_ = true;
      tail_ = 0;
    }
  }
}

std::string RequestTracker::PopMethod() {
  if (methods_.empty()) return "GET";
  std::string m = std::move(methods_.front());
  methods_.pop_front();
  return m;
}

void ResponseFramer::HeadDone(Output* out) {
  const std::string method = requests_->PopMethod();
  const int status = head_.size() > 12 ? std::atoi(head_.c_str() + 9) : 0;
  const std::string length = HeaderValue(head_, "Content-Length");
  const bool no_body = method == "HEAD" || status == 204 || status == 304 || status / 100 == 1;
  if (!no_body && (length.empty() || !HeaderValue(head_, "Transfer-Encoding").empty())) {
    out->bytes.insert(out->bytes.end(), head_.begin(), head_.end());  // cannot frame: plain
    head_.clear();
    state_ = State::kPlain;
    return;
  }
  body_ = left_ = no_body ? 0 : std::strtoull(length.c_str(), nullptr, 10);
  const Fault f = body_ > 0 ? faults_->Next(body_) : Fault{};
  discard_ = f.kind == FaultKind::k503;
  flip_at_ = f.kind == FaultKind::kFlip ? left_ - left_ / 2 : UINT64_MAX;  // the middle byte
  end_at_ =
      f.kind == FaultKind::kReset || f.kind == FaultKind::kCut ? left_ - left_ / 2 : UINT64_MAX;
  end_kind_ = f.kind == FaultKind::kReset ? End::kReset : End::kCut;
  if (f.kind == FaultKind::kStall) out->stall_ms += f.ms;
  if (discard_) {
    static constexpr char k503[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n";
    out->bytes.insert(out->bytes.end(), k503, k503 + sizeof k503 - 1);
  } else {
    out->bytes.insert(out->bytes.end(), head_.begin(), head_.end());
  }
  head_.clear();
  state_ = left_ > 0 ? State::kBody : State::kHead;
}

ResponseFramer::Output ResponseFramer::Feed(const char* p, size_t n) {
  Output out;
  size_t i = 0;
  while (i < n && out.end == End::kNone) {
    switch (state_) {
      case State::kEnded:
        return out;
      case State::kPlain:
        out.bytes.insert(out.bytes.end(), p + i, p + n);
        return out;
      case State::kHead: {
        // Up to the end of the head: scan the bytes appended for "\r\n\r\n".
        const size_t before = head_.size();
        const size_t take = std::min(n - i, kMaxHead - std::min(kMaxHead, before));
        head_.append(p + i, take);
        const size_t from = before >= 3 ? before - 3 : 0;
        const size_t end = head_.find("\r\n\r\n", from);
        if (end != std::string::npos) {
          const size_t used = end + 4 - before;
          head_.resize(end + 4);
          i += used;
          HeadDone(&out);
        } else if (head_.size() >= kMaxHead) {
          out.bytes.insert(out.bytes.end(), head_.begin(), head_.end());
          head_.clear();
          i += take;
          state_ = State::kPlain;
        } else {
          i += take;
        }
        break;
      }
      case State::kBody: {
        uint64_t take = std::min<uint64_t>(n - i, left_);
        // Stop at the fault's offset (counted down: the byte when left_ == end_at_).
        if (end_at_ != UINT64_MAX && left_ - take < end_at_) take = left_ - end_at_;
        if (!discard_) {
          const size_t at = out.bytes.size();
          out.bytes.insert(out.bytes.end(), p + i, p + i + take);
          if (flip_at_ <= left_ && flip_at_ > left_ - take) {
            out.bytes[at + (left_ - flip_at_)] ^= 0x5a;
            flip_at_ = UINT64_MAX;
          }
        }
        i += take;
        left_ -= take;
        if (left_ == end_at_) {
          out.end = end_kind_;
          state_ = State::kEnded;
        } else if (left_ == 0) {
          state_ = State::kHead;
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace rf::link
