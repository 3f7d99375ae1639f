// Splitting a stream of RESP replies into whole values.
#include "resp_reply.hpp"

#include <cstdint>

namespace fg {

namespace {
// Parses the decimal after a type byte up to CRLF; returns the offset past CRLF or 0.
size_t read_line_int(const char* p, size_t n, int64_t& v) {
  size_t i = 1;
  bool neg = false;
  if (i < n && p[i] == '-') {
    neg = true;
    ++i;
  }
  v = 0;
  const size_t digits = i;
  while (i < n && p[i] >= '0' && p[i] <= '9' && i - digits < 18) v = v * 10 + (p[i++] - '0');
  if (i == digits || i + 1 >= n || p[i] != '\r' || p[i + 1] != '\n') return 0;
  if (neg) v = -v;
  return i + 2;
}
}  // namespace

size_t resp_value_length(const char* p, size_t n, int depth) {
  if (n < 3 || depth > 16) return 0;
  switch (p[0]) {
    case '+':
    case '-':
    case ':':
    case ',':
    case '#':
    case '_':
    case '(': {
      for (size_t i = 1; i + 1 < n; ++i)
        if (p[i] == '\r' && p[i + 1] == '\n') return i + 2;
      return 0;
    }
    case '$':
    case '!':
    case '=': {
      int64_t len;
      const size_t h = read_line_int(p, n, len);
      if (h == 0) return 0;
      if (len < 0) return h;
      const size_t total = h + static_cast<size_t>(len) + 2;
      return total <= n ? total : 0;
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      int64_t count;
      size_t h = read_line_int(p, n, count);
      if (h == 0) return 0;
      if (count < 0) return h;
      if (p[0] == '%') count *= 2;
      for (int64_t k = 0; k < count; ++k) {
        const size_t m = resp_value_length(p + h, n - h, depth + 1);
        if (m == 0) return 0;
        h += m;
      }
      return h;
    }
    default:
      return 0;
  }
}

}  // namespace fg
