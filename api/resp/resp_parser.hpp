// Incremental RESP request parser with no I/O: give it the unconsumed bytes, it answers
// "need more", "one command (N bytes consumed)" or a protocol error worded as Redis words it.
#pragma once
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

struct ParserLimits {
  size_t max_bulk_len = 1 << 20;      // bytes in one argument
  size_t max_args = 1 << 16;          // arguments in one command
  size_t max_inline_len = 64 * 1024;  // bytes in one inline command or length line
};

enum class ParseStatus { kNeedMore, kCommand, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kNeedMore;
  size_t consumed = 0;     // bytes of input this command used (kCommand)
  std::string_view error;  // without the leading '-' (kError)
};

class RespParser {
 public:
  explicit RespParser(ParserLimits limits = {}) : limits_(limits) {}

  // `data` must start at the first byte not yet consumed, and hold the same bytes as the
  // previous call plus any that arrived since; progress is kept between calls so nothing
  // is scanned twice. On kCommand, `args` views point into `data` (or into `arena`, for
  // inline commands, whose arguments are unescaped copies). Empty commands (`*0`, blank
  // inline lines) come back as kCommand with no arguments, for the caller to skip.
  ParseResult parse(const char* data, size_t len, std::vector<std::string_view>& args,
                    std::deque<std::string>& arena);

  // True while part of a command has been seen but not all of it.
  bool in_progress() const { return state_ != State::kStart || scanned_ > 0; }
  void reset();
  const ParserLimits& limits() const { return limits_; }
  // (proto-max-bulk-len changed at runtime: the next argument is held to it)
  void set_max_bulk_len(size_t n) { limits_.max_bulk_len = n; }

 private:
  enum class State { kStart, kBulkLen, kBulkData };
  ParseResult parse_inline(const char* data, size_t len, std::vector<std::string_view>& args,
                           std::deque<std::string>& arena);
  // Finds "\r\n" at or after `from`; npos if absent. Remembers how far it looked.
  size_t find_crlf(const char* data, size_t len, size_t from);
  ParseResult error(std::string_view msg);

  ParserLimits limits_;
  State state_ = State::kStart;
  size_t pos_ = 0;      // offset of the next unparsed byte within the command
  size_t scanned_ = 0;  // how far a line search got without finding its end
  long long args_total_ = 0;
  long long bulk_len_ = 0;
  std::vector<std::pair<size_t, size_t>> spans_;  // (offset, length) of finished arguments
};

// Splits an inline command line as Redis does (quotes, escapes); false on unbalanced quotes.
bool split_inline_args(std::string_view line, std::vector<std::string>& out);

}  // namespace fg
