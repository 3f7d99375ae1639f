// RESP2/RESP3 reply encoder appending to a byte buffer; RESP3-only types degrade to their
// RESP2 equivalents (map -> flat array, null -> $-1, boolean -> integer, double -> bulk).
#pragma once
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace fg {

class RespWriter {
 public:
  RespWriter(std::string& out, int proto) : out_(&out), proto_(proto) {}

  void simple(std::string_view s) { line('+', s); }
  // `e` is the error text without the leading '-', e.g. "ERR syntax error". CR/LF in it
  // become spaces so a client-supplied string can never break the framing.
  void error(std::string_view e);
  void integer(int64_t v) { number(':', v); }
  void bulk(std::string_view s) {
    number('$', static_cast<int64_t>(s.size()));
    out_->append(s);
    out_->append("\r\n", 2);
  }
  void null() { out_->append(proto_ >= 3 ? "_\r\n" : "$-1\r\n"); }
  void null_array() { out_->append(proto_ >= 3 ? "_\r\n" : "*-1\r\n"); }
  void array(size_t n) { number('*', static_cast<int64_t>(n)); }
  void map(size_t n) {
    number(proto_ >= 3 ? '%' : '*', static_cast<int64_t>(proto_ >= 3 ? n : 2 * n));
  }
  void set(size_t n) { number(proto_ >= 3 ? '~' : '*', static_cast<int64_t>(n)); }
  // A HELP reply: each line a simple string, as Redis's addReplyHelp.
  template <size_t N>
  void help(const char* const (&lines)[N]) {
    array(N);
    for (const char* line : lines) simple(line);
  }
  // Something the server sends of its own accord (pub/sub): RESP3's push, RESP2's array.
  void push(size_t n) { number(proto_ >= 3 ? '>' : '*', static_cast<int64_t>(n)); }
  void boolean(bool b) {
    if (proto_ >= 3) {
      out_->append(b ? "#t\r\n" : "#f\r\n");
    } else {
      integer(b ? 1 : 0);
    }
  }
  // A double as Redis 7.0 writes one (%.17g): RESP3's ',', RESP2's bulk string.
  void dbl(double v) {
    char buf[64];
    const int n = std::snprintf(buf, sizeof buf, "%.17g", v);
    if (proto_ >= 3) return line(',', std::string_view(buf, static_cast<size_t>(n)));
    bulk(std::string_view(buf, static_cast<size_t>(n)));
  }
  void ok() { out_->append("+OK\r\n", 5); }
  void raw(std::string_view s) { out_->append(s); }

  int proto() const { return proto_; }
  std::string& buffer() { return *out_; }

 private:
  void number(char prefix, int64_t v) {
    char buf[24];
    buf[0] = prefix;
    auto r = std::to_chars(buf + 1, buf + sizeof(buf) - 2, v);
    r.ptr[0] = '\r';
    r.ptr[1] = '\n';
    out_->append(buf, static_cast<size_t>(r.ptr + 2 - buf));
  }
  void line(char prefix, std::string_view s);

  std::string* out_;
  int proto_;
};

}  // namespace fg
