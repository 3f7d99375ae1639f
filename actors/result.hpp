// A value or the reason there is none: what every fallible function of the node returns
// (parsing, validation, settings, users, files, TLS contexts, secrets), never a bool with
// a string out-parameter nor an empty string for "good". The reason is the text a client
// or an operator reads, in Redis's words where Redis has some (actors/errors.hpp). No
// exceptions cross a thread.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace fg {

// Why something failed: the reply text, e.g. "ERR value is not an integer or out of range".
struct Error {
  std::string text;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: a value is a success
  Result(Error e) : v_(std::move(e)) {}      // NOLINT: so is a reason a failure
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // Only after ok() said so (no check here: it sits on request paths).
  const T& value() const { return *std::get_if<0>(&v_); }
  T& value() { return *std::get_if<0>(&v_); }
  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get_if<1>(&v_)->text; }  // only if !ok()

 private:
  std::variant<T, Error> v_;
};

// Success or a reason, for what returns no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e.text)) {}  // NOLINT
  bool ok() const { return error_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace fg
