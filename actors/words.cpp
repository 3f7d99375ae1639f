// Redis's rules for integers, names and glob patterns.
#include "words.hpp"

#include <strings.h>

#include <cctype>
#include <charconv>
#include <utility>

namespace fg {

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s[0] == '+' || (s.size() > 1 && s[0] == '0')) return false;  // as Redis's string2ll
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool parse_lease_id(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out != 0;
}

bool glob_match(std::string_view p, std::string_view s, bool nocase) {
  auto lower = [nocase](char c) {
    return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
  };
  size_t pi = 0, si = 0;
  while (pi < p.size()) {
    switch (p[pi]) {
      case '*': {
        while (pi + 1 < p.size() && p[pi + 1] == '*') ++pi;
        if (pi + 1 == p.size()) return true;
        for (size_t k = si; k <= s.size(); ++k)
          if (glob_match(p.substr(pi + 1), s.substr(k), nocase)) return true;
        return false;
      }
      case '?':
        if (si >= s.size()) return false;
        ++si;
        break;
      case '[': {
        if (si >= s.size()) return false;
        ++pi;
        bool negate = pi < p.size() && p[pi] == '^';
        if (negate) ++pi;
        bool match = false;
        while (pi < p.size() && p[pi] != ']') {
          if (p[pi] == '\\' && pi + 1 < p.size()) {
            ++pi;
            if (lower(p[pi]) == lower(s[si])) match = true;
          } else if (pi + 2 < p.size() && p[pi + 1] == '-') {
            char a = lower(p[pi]), b = lower(p[pi + 2]), c = lower(s[si]);
            if (a > b) std::swap(a, b);
            if (c >= a && c <= b) match = true;
            pi += 2;
          } else if (lower(p[pi]) == lower(s[si])) {
            match = true;
          }
          ++pi;
        }
        if (negate) match = !match;
        if (!match) return false;
        ++si;
        break;
      }
      case '\\':
        if (pi + 1 < p.size()) ++pi;
        [[fallthrough]];
      default:
        if (si >= s.size() || lower(p[pi]) != lower(s[si])) return false;
        ++si;
        break;
    }
    ++pi;
  }
  return si == s.size();
}

}  // namespace fg
