// A second glob matcher, written the slow and obvious way, to hold glob.cpp's against: the
// pattern read into tokens (a star, or the set of bytes one position accepts), then every
// way of matching tried with a table over (token, byte). Redis's rules on top: an empty
// string matches only the empty pattern; more than 1000 star runs that do not end the
// pattern match nothing. (The readings of classes and escapes are checked against
// redis-server itself by node_test's GlobDiff.)
#pragma once
#include <bitset>
#include <string_view>
#include <vector>

namespace fg::reference {

struct Token {
  bool star = false;
  std::bitset<256> accepts;
};

inline unsigned char fold(unsigned char c, bool nocase) {
  return nocase && c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + 32) : c;
}

inline std::vector<Token> tokens(std::string_view p, bool nocase) {
  std::vector<Token> out;
  size_t i = 0;
  auto byte = [&](size_t at) { return static_cast<unsigned char>(p[at]); };
  while (i < p.size()) {
    Token t;
    if (p[i] == '*') {
      t.star = true;
      while (i < p.size() && p[i] == '*') ++i;
    } else if (p[i] == '?') {
      t.accepts.set();
      ++i;
    } else if (p[i] == '[') {
      ++i;
      bool negate = false;
      if (i < p.size() && p[i] == '^') negate = true, ++i;
      for (; i < p.size() && p[i] != ']'; ++i) {
        if (p[i] == '\\' && i + 1 < p.size()) {
          t.accepts.set(byte(++i));
        } else if (i + 2 < p.size() && p[i + 1] == '-') {
          // Redis compares a range as signed chars, folded after ordering the ends.
          int a = static_cast<signed char>(p[i]), b = static_cast<signed char>(p[i + 2]);
          if (a > b) std::swap(a, b);
          a = static_cast<signed char>(fold(static_cast<unsigned char>(a), nocase));
          b = static_cast<signed char>(fold(static_cast<unsigned char>(b), nocase));
          for (int c = 0; c < 256; ++c) {
            const int x = static_cast<signed char>(fold(static_cast<unsigned char>(c), nocase));
            if (x >= a && x <= b) t.accepts.set(static_cast<size_t>(c));
          }
          i += 2;
        } else {
          for (int c = 0; c < 256; ++c)
            if (fold(static_cast<unsigned char>(c), nocase) == fold(byte(i), nocase))
              t.accepts.set(static_cast<size_t>(c));
        }
      }
      if (i < p.size()) ++i;  // the ']'
      if (negate) t.accepts.flip();
    } else {
      if (p[i] == '\\' && i + 1 < p.size()) ++i;
      for (int c = 0; c < 256; ++c)
        if (fold(static_cast<unsigned char>(c), nocase) == fold(byte(i), nocase))
          t.accepts.set(static_cast<size_t>(c));
      ++i;
    }
    out.push_back(t);
  }
  return out;
}

inline bool glob_match(std::string_view p, std::string_view s, bool nocase) {
  if (s.empty()) return p.empty();
  const std::vector<Token> t = tokens(p, nocase);
  size_t inner_stars = 0;
  for (size_t k = 0; k + 1 < t.size(); ++k) inner_stars += t[k].star ? 1 : 0;
  if (inner_stars > 1000) return false;
  // ok[k][i]: tokens k.. match s[i..]
  const size_t T = t.size(), n = s.size();
  std::vector<std::vector<char>> ok(T + 1, std::vector<char>(n + 1, 0));
  ok[T][n] = 1;
  for (size_t k = T; k-- > 0;) {
    for (size_t i = n + 1; i-- > 0;) {
      if (t[k].star) {
        ok[k][i] = ok[k + 1][i] || (i < n && ok[k][i + 1]);
      } else {
        ok[k][i] = i < n && t[k].accepts.test(static_cast<unsigned char>(s[i])) && ok[k + 1][i + 1];
      }
    }
  }
  return ok[0][0];
}

}  // namespace fg::reference
