// Status and Result: the error channel for data, file and configuration errors.
//
// A Status names what failed in terms a user can act on: the file, the chunk and the byte offset
// where it applies, and errno for system-call failures. Only main() turns a Status into an exit
// code and a one-line message; everything below it returns Status or Result<T>.
//
// Usage (kUsage) is the one code that means "the command line asks for something that cannot be
// run" (a bad flag value, flags that contradict each other or the files they name): the programs
// exit 2 for it and 1 for every other error. InvalidArgument is not a usage error: it is a value
// the code was handed that is wrong (a bad checkpoint's field, a wrong call), whoever made it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rf {

class Status {
 public:
  enum class Code {
    kOk,
    kNotFound,
    kCorruption,
    kIOError,
    kInvalidArgument,
    kUnsupported,
    kAborted,
    kUsage
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status NotFound(std::string path, std::string msg, int err = 0);
  static Status Corruption(std::string path, std::string msg);
  static Status IOError(std::string path, std::string msg, int err = 0);
  static Status InvalidArgument(std::string msg);
  static Status Unsupported(std::string msg);
  static Status Aborted(std::string msg);
  static Status Usage(std::string msg);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsUsage() const { return code_ == Code::kUsage; }

  // Where the failure is. Each returns *this so a caller that knows more can add it:
  //   return st.WithChunk(7).WithOffset(4096 * 7);
  Status& WithPath(std::string path);
  Status& WithChunk(uint64_t chunk);
  Status& WithOffset(uint64_t offset);

  const std::string& path() const { return path_; }
  std::optional<uint64_t> chunk() const { return chunk_; }
  std::optional<uint64_t> offset() const { return offset_; }
  int err() const { return errno_; }
  const std::string& message() const { return message_; }

  // One line: "<path>: chunk <c> at byte <o>: <message>: <strerror> (errno <n>)".
  std::string ToString() const;

 private:
  Status(Code code, std::string path, std::string msg, int err)
      : code_(code), path_(std::move(path)), message_(std::move(msg)), errno_(err) {}

  Code code_ = Code::kOk;
  std::string path_;
  std::string message_;
  std::optional<uint64_t> chunk_;
  std::optional<uint64_t> offset_;
  int errno_ = 0;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rf

// Propagate a failed Status from an expression that yields a Status.
#define RF_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::rf::Status rf_status_ = (expr);        \
    if (!rf_status_.ok()) return rf_status_; \
  } while (0)

#define RF_CONCAT_INNER(a, b) a##b
#define RF_CONCAT(a, b) RF_CONCAT_INNER(a, b)
// Assign the value of a Result<T> expression to `lhs`, or return its Status.
#define RF_ASSIGN_OR_RETURN(lhs, expr)                                                        \
  auto RF_CONCAT(rf_result_, __LINE__) = (expr);                                              \
  if (!RF_CONCAT(rf_result_, __LINE__).ok()) return RF_CONCAT(rf_result_, __LINE__).status(); \
  lhs = std::move(RF_CONCAT(rf_result_, __LINE__)).value()
