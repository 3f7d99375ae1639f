// JSON text for the admin port's answers: a string, quoted and escaped.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace fg {

// `s` as a JSON string: quotes and backslashes escaped, control and non-ASCII bytes as
// \u00XX (a key name is bytes, not always UTF-8: each byte stays visible and apart).
inline std::string json_str(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace fg
