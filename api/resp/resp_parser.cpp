// RESP request parsing: multibulk (`*N` then `$len` arguments) and inline commands.
#include "resp_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "errors.hpp"

namespace fg {

namespace {
// Parses a decimal integer occupying all of [p, p+n); false if it is not one.
bool parse_ll(const char* p, size_t n, long long& out) {
  if (n == 0 || n > 20) return false;
  bool neg = false;
  size_t i = 0;
  if (p[0] == '-') {
    neg = true;
    i = 1;
    if (n == 1) return false;
  }
  unsigned long long v = 0;
  for (; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return false;
    v = v * 10 + static_cast<unsigned>(p[i] - '0');
    if (v > (1ULL << 62)) return false;
  }
  out = neg ? -static_cast<long long>(v) : static_cast<long long>(v);
  return true;
}

// The common case in one pass: 1-18 digits at `from`, then CRLF, all within the input.
// False for anything else (a sign, too many digits, the line not all here yet): the caller
// then takes the general path, which finds the line's end and judges it.
bool quick_number(const char* data, size_t len, size_t from, long long& out, size_t& eol) {
  long long v = 0;
  size_t i = from;
  for (; i < len && i - from < 18; ++i) {
    const unsigned d = static_cast<unsigned char>(data[i]) - '0';
    if (d > 9) break;
    v = v * 10 + d;
  }
  if (i == from || i + 1 >= len || data[i] != '\r' || data[i + 1] != '\n') return false;
  out = v;
  eol = i;
  return true;
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}
}  // namespace

void RespParser::reset() {
  state_ = State::kStart;
  pos_ = 0;
  scanned_ = 0;
  args_total_ = 0;
  bulk_len_ = 0;
  spans_.clear();
}

ParseResult RespParser::error(std::string_view msg) {
  reset();
  ParseResult r;
  r.status = ParseStatus::kError;
  r.error = msg;
  return r;
}

size_t RespParser::find_crlf(const char* data, size_t len, size_t from) {
  size_t start = std::max(from, scanned_);
  if (start >= len) return std::string_view::npos;
  const void* p = std::memchr(data + start, '\r', len - start);
  while (p) {
    size_t i = static_cast<const char*>(p) - data;
    if (i + 1 >= len) {
      scanned_ = i;  // '\r' is the last byte: look again from here
      return std::string_view::npos;
    }
    if (data[i + 1] == '\n') {
      scanned_ = 0;
      return i;
    }
    p = std::memchr(data + i + 1, '\r', len - i - 1);
  }
  scanned_ = len;
  return std::string_view::npos;
}

ParseResult RespParser::parse(const char* data, size_t len, std::vector<std::string_view>& args,
                              std::deque<std::string>& arena) {
  args.clear();
  const ParseResult need;
  for (;;) {
    if (state_ == State::kStart) {
      if (len == 0) return need;
      if (data[0] != '*') return parse_inline(data, len, args, arena);
      size_t eol;
      long long n;
      if (quick_number(data, len, 1, n, eol)) {
        scanned_ = 0;
      } else {
        eol = find_crlf(data, len, 1);
        if (eol == std::string_view::npos) {
          if (len > limits_.max_inline_len) return error(err::kMbulkCount);
          return need;
        }
        if (!parse_ll(data + 1, eol - 1, n)) return error(err::kMbulkLength);
      }
      if (n > static_cast<long long>(limits_.max_args)) return error(err::kMbulkLength);
      if (n <= 0) {  // an empty command: consumed, with no arguments, and ignored
        ParseResult r;
        r.status = ParseStatus::kCommand;
        r.consumed = eol + 2;
        reset();
        return r;
      }
      args_total_ = n;
      spans_.clear();
      spans_.reserve(static_cast<size_t>(n < 64 ? n : 64));
      pos_ = eol + 2;
      state_ = State::kBulkLen;
    }
    if (state_ == State::kBulkLen) {
      if (pos_ >= len) return need;
      if (data[pos_] != '$') {
        static thread_local std::string msg;
        msg = err::expected_dollar(data[pos_]);
        return error(msg);
      }
      size_t eol;
      long long n;
      if (quick_number(data, len, pos_ + 1, n, eol)) {
        scanned_ = 0;
      } else {
        eol = find_crlf(data, len, pos_ + 1);
        if (eol == std::string_view::npos) {
          if (len - pos_ > limits_.max_inline_len) return error(err::kBulkCount);
          return need;
        }
        if (!parse_ll(data + pos_ + 1, eol - pos_ - 1, n)) return error(err::kBulkLength);
      }
      if (n < 0 || static_cast<size_t>(n) > limits_.max_bulk_len) return error(err::kBulkLength);
      bulk_len_ = n;
      pos_ = eol + 2;
      state_ = State::kBulkData;
    }
    if (state_ == State::kBulkData) {
      const size_t need_bytes = static_cast<size_t>(bulk_len_) + 2;
      if (len - pos_ < need_bytes) return need;
      spans_.emplace_back(pos_, static_cast<size_t>(bulk_len_));
      pos_ += need_bytes;
      if (static_cast<long long>(spans_.size()) < args_total_) {
        state_ = State::kBulkLen;
        continue;
      }
      for (auto [off, n] : spans_) args.emplace_back(data + off, n);
      ParseResult r;
      r.status = ParseStatus::kCommand;
      r.consumed = pos_;
      reset();
      return r;
    }
  }
}

ParseResult RespParser::parse_inline(const char* data, size_t len,
                                     std::vector<std::string_view>& args,
                                     std::deque<std::string>& arena) {
  const size_t from = std::max(scanned_, size_t{0});
  const void* nl = std::memchr(data + from, '\n', len - from);
  if (!nl) {
    scanned_ = len;
    if (len > limits_.max_inline_len) return error(err::kInlineTooBig);
    return {};
  }
  scanned_ = 0;
  size_t eol = static_cast<const char*>(nl) - data;
  if (eol > limits_.max_inline_len) return error(err::kInlineTooBig);
  size_t line_len = eol;
  if (line_len > 0 && data[line_len - 1] == '\r') --line_len;
  std::vector<std::string> parts;
  if (!split_inline_args(std::string_view(data, line_len), parts)) {
    return error(err::kUnbalancedQuotes);
  }
  if (parts.size() > limits_.max_args) return error(err::kMbulkLength);
  for (auto& p : parts) {
    arena.push_back(std::move(p));
    args.emplace_back(arena.back());
  }
  ParseResult r;
  r.status = ParseStatus::kCommand;
  r.consumed = eol + 1;
  reset();
  return r;
}

bool split_inline_args(std::string_view line, std::vector<std::string>& out) {
  size_t i = 0;
  const size_t n = line.size();
  for (;;) {
    while (i < n && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= n) return true;
    std::string cur;
    bool inq = false, insq = false, done = false;
    while (!done) {
      if (inq) {
        if (i >= n) return false;
        if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' && is_hex(line[i + 2]) &&
            is_hex(line[i + 3])) {
          cur += static_cast<char>(hex_val(line[i + 2]) * 16 + hex_val(line[i + 3]));
          i += 3;
        } else if (line[i] == '\\' && i + 1 < n) {
          ++i;
          char c = line[i];
          cur += c == 'n'   ? '\n'
                 : c == 'r' ? '\r'
                 : c == 't' ? '\t'
                 : c == 'b' ? '\b'
                 : c == 'a' ? '\a'
                            : c;
        } else if (line[i] == '"') {
          // closing quote must be followed by a space or the end
          if (i + 1 < n && !std::isspace(static_cast<unsigned char>(line[i + 1]))) return false;
          done = true;
        } else {
          cur += line[i];
        }
      } else if (insq) {
        if (i >= n) return false;
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          ++i;
          cur += '\'';
        } else if (line[i] == '\'') {
          if (i + 1 < n && !std::isspace(static_cast<unsigned char>(line[i + 1]))) return false;
          done = true;
        } else {
          cur += line[i];
        }
      } else {
        if (i >= n) {
          done = true;
          break;
        }
        char c = line[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
          done = true;
        } else if (c == '"') {
          inq = true;
        } else if (c == '\'') {
          insq = true;
        } else {
          cur += c;
        }
      }
      if (i < n) ++i;
    }
    out.push_back(std::move(cur));
  }
}

}  // namespace fg
