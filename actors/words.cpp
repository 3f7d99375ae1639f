// Redis's rules for integers and names.
#include "words.hpp"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fg {

// Redis's string2ll, digit by digit: "0", or an optional '-' and a first digit 1-9.
bool parse_int(std::string_view s, int64_t& out) {
  const size_t n = s.size();
  if (n == 0 || n > 20) return false;
  if (n == 1 && s[0] == '0') {
    out = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative && ++i == n) return false;
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = static_cast<uint64_t>(s[i++] - '0');
  for (; i < n; ++i) {
    const unsigned d = static_cast<unsigned char>(s[i]) - unsigned{'0'};
    if (d > 9 || v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > uint64_t{INT64_MAX} + 1) return false;
    out = static_cast<int64_t>(~v + 1);  // two's complement: -2^63 fits
  } else {
    if (v > uint64_t{INT64_MAX}) return false;
    out = static_cast<int64_t>(v);
  }
  return true;
}

bool parse_long_double(std::string_view s, long double& out) {
  char buf[5 * 1024];  // Redis's MAX_LONG_DOUBLE_CHARS
  if (s.empty() || s.size() >= sizeof buf) return false;
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  errno = 0;
  char* end = nullptr;
  const long double v = std::strtold(buf, &end);
  if (std::isspace(static_cast<unsigned char>(buf[0])) || *end != '\0' ||
      static_cast<size_t>(end - buf) != s.size() ||
      (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || std::fpclassify(v) == FP_ZERO)) ||
      errno == EINVAL || std::isnan(v)) {
    return false;
  }
  out = v;
  return true;
}

std::string format_long_double(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[5 * 1024];
  int n = std::snprintf(buf, sizeof buf, "%.17Lf", v);
  if (n < 0 || static_cast<size_t>(n) >= sizeof buf) return "0";
  size_t l = static_cast<size_t>(n);
  if (std::memchr(buf, '.', l)) {
    while (buf[l - 1] == '0') --l;
    if (buf[l - 1] == '.') --l;
  }
  if (l == 2 && buf[0] == '-' && buf[1] == '0') return "0";
  return std::string(buf, l);
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool parse_lease_id(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out != 0;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)  // (ASCII, as Redis compares command names; no locale lookups)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace fg
