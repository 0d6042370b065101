// Status and Result<T>: errors as values across module boundaries.
//
// A Status is either ok or carries a code and a human-readable message that
// is meant to reach the user unchanged (HTTP body, load_program output, run
// record).  Result<T> holds either a value or a non-ok Status.
//
//   Result<Manifest> m = parse_manifest(text, "config.yaml");
//   if (!m.ok()) return m.status();
//   use(m.value());
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace lizard {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the user's input is wrong (400)
  kNotFound,         // a named thing does not exist (404)
  kConflict,         // the request clashes with current state (409)
  kUnavailable,      // no worker / resource available now (503)
  kTooLarge,         // does not fit (413 / memory)
  kInternal,         // a bug or an environment failure (500)
  kCompileError,     // user code does not compile (422)
  kRuntimeError,     // user code failed while running
  kCancelled,
  kWorkerLost,        // a worker serving a run went away (503; the run re-plans)
  kPermissionDenied,  // the input names something the daemon may not touch (403)
  kStorageFull,       // the server's disk is full: nothing was stored (507)
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<prefix>: <message>".
  Status with_context(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, prefix + ": " + message_);
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return Status(Code::kInvalidArgument, std::move(m));
}
inline Status not_found(std::string m) {
  return Status(Code::kNotFound, std::move(m));
}
inline Status internal_error(std::string m) {
  return Status(Code::kInternal, std::move(m));
}
inline Status unavailable(std::string m) {
  return Status(Code::kUnavailable, std::move(m));
}
inline Status compile_error(std::string m) {
  return Status(Code::kCompileError, std::move(m));
}
inline Status runtime_error(std::string m) {
  return Status(Code::kRuntimeError, std::move(m));
}
inline Status worker_lost(std::string m) {
  return Status(Code::kWorkerLost, std::move(m));
}
inline Status too_large(std::string m) {
  return Status(Code::kTooLarge, std::move(m));
}
inline Status permission_denied(std::string m) {
  return Status(Code::kPermissionDenied, std::move(m));
}
inline Status storage_full(std::string m) {
  return Status(Code::kStorageFull, std::move(m));
}

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace lizard

#define LIZARD_CONCAT_INNER(a, b) a##b
#define LIZARD_CONCAT(a, b) LIZARD_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not ok.
#define LIZARD_RETURN_IF_ERROR(expr)  \
  do {                                \
    ::lizard::Status _lz_st = (expr); \
    if (!_lz_st.ok()) return _lz_st;  \
  } while (0)

// Declares `lhs` from a Result-valued `expr`, returning its status on error.
#define LIZARD_ASSIGN_OR_RETURN(lhs, expr) \
  LIZARD_ASSIGN_OR_RETURN_IMPL(LIZARD_CONCAT(_lz_res_, __LINE__), lhs, expr)
#define LIZARD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
