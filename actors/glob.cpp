// Glob matching with Redis's answers, in one loop and a bounded number of steps.
//
// Every token but '*' matches exactly one byte, so when a try fails only the last star
// seen needs to give up one more byte: an earlier star taking more could only push the
// rest later into the string, which the last star's tries already cover. That makes the
// match a loop with two cursors, linear for ordinary patterns, and at worst the string's
// length times the longest run of tokens between two stars, which the step bound caps.
#include "glob.hpp"

#include <cstdint>
#include <utility>

namespace fg {

namespace {

char lower(char c, bool nocase) {
  return nocase && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// The token at p[pi] (not '*') against the byte c: whether it matches, and where the next
// token starts in `next`. Tokens are read as stringmatchlen reads them: a class runs to its
// ']' (or the pattern's end), "x-y" is a range (either way round), "\x" inside one is x
// compared exactly; "\x" outside one is x; a lone '\' at the end is itself.
bool token_matches(std::string_view p, size_t pi, char c, bool nocase, size_t& next) {
  const size_t n = p.size();
  if (p[pi] == '?') {
    next = pi + 1;
    return true;
  }
  if (p[pi] == '[') {
    size_t i = pi + 1;
    const bool negate = i < n && p[i] == '^';
    if (negate) ++i;
    bool match = false;
    while (i < n && p[i] != ']') {
      if (p[i] == '\\' && i + 1 < n) {
        ++i;
        match = match || p[i] == c;
      } else if (i + 2 < n && p[i + 1] == '-') {
        // (signed chars, as Redis compares them; case folded after the swap, as it does)
        int lo = p[i], hi = p[i + 2];
        if (lo > hi) std::swap(lo, hi);
        const int x = lower(c, nocase);
        lo = lower(static_cast<char>(lo), nocase);
        hi = lower(static_cast<char>(hi), nocase);
        match = match || (x >= lo && x <= hi);
        i += 2;
      } else {
        match = match || lower(p[i], nocase) == lower(c, nocase);
      }
      ++i;
    }
    next = i < n ? i + 1 : n;  // past the ']'; an unclosed class ends the pattern
    return negate ? !match : match;
  }
  size_t i = pi;
  if (p[i] == '\\' && i + 1 < n) ++i;
  next = i + 1;
  return lower(p[i], nocase) == lower(c, nocase);
}

}  // namespace

bool glob_match(std::string_view p, std::string_view s, bool nocase) {
  return glob_match_within(p, s, nocase,
                           static_cast<int64_t>(kGlobStepsPerByte * (p.size() + s.size())) + 1024);
}

// (a step is a byte of pattern read: a long class costs its length each time it is tried)
bool glob_match_within(std::string_view p, std::string_view s, bool nocase, int64_t steps) {
  if (s.empty()) return p.empty();
  const size_t m = p.size(), n = s.size();
  size_t stars = 0;                      // star runs passed that are not the pattern's end
  size_t star_p = SIZE_MAX, star_s = 0;  // after the last star run; where its try started
  size_t pi = 0, si = 0;
  while (si < n) {
    if (pi < m && p[pi] == '*') {
      while (pi < m && p[pi] == '*') ++pi;
      if (pi == m) return true;  // (a trailing star takes the rest)
      if (++stars > kGlobMaxStars) return false;
      star_p = pi;
      star_s = si;
      continue;
    }
    size_t next = pi + 1;
    const bool match = pi < m && token_matches(p, pi, s[si], nocase, next);
    if ((steps -= static_cast<int64_t>(next - pi)) < 0) return false;
    if (match) {
      pi = next;
      ++si;
      continue;
    }
    if (star_p == SIZE_MAX) return false;
    pi = star_p;  // the last star takes one byte more, and the rest tries again after it
    si = ++star_s;
  }
  while (pi < m && p[pi] == '*') ++pi;
  return pi == m;
}

}  // namespace fg
