// Glob matching with Redis's answers, in one loop and a bounded number of steps.
//
// Every token but '*' matches exactly one byte, so when a try fails only the last star
// seen needs to give up one more byte: an earlier star taking more could only push the
// rest later into the string, which the last star's tries already cover. That makes the
// match a loop with two cursors, linear for ordinary patterns, and at worst the string's
// length times the longest run of tokens between two stars, which the step bound caps.
#include "glob.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
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

// The bytes the token `t` (not a star: a byte, '?', "\\x" or a whole class) takes, in one
// pass over it: what token_matches answers for each byte. A class's members are marked on
// the folded byte's scale (ranges as runs, by a difference array), escaped ones on the raw
// byte's, and the 256 bytes read off both at the end.
GlobPattern::Bytes GlobPattern::token_bytes(std::string_view t, bool nocase) {
  Bytes b;
  auto fold = [nocase](int c) {  // (c as a signed char, folded as lower() folds it)
    return nocase && c >= 'A' && c <= 'Z' ? c + 32 : c;
  };
  auto each_byte = [&](auto&& takes) {
    for (int c = 0; c < 256; ++c)
      if (takes(static_cast<signed char>(c), c)) b.set(static_cast<unsigned char>(c));
  };
  if (t[0] == '?') {
    each_byte([](int, int) { return true; });
    return b;
  }
  if (t[0] != '[') {
    const int want = fold(static_cast<signed char>(t.size() > 1 ? t[1] : t[0]));
    each_byte([&](int x, int) { return fold(x) == want; });
    return b;
  }
  Bytes raw;
  int cover[258] = {};  // on the folded scale, x + 128
  size_t i = 1;
  const size_t n = t.size();
  const bool negate = i < n && t[i] == '^';
  if (negate) ++i;
  while (i < n && t[i] != ']') {
    if (t[i] == '\\' && i + 1 < n) {
      raw.set(static_cast<unsigned char>(t[++i]));
    } else if (i + 2 < n && t[i + 1] == '-') {
      int lo = static_cast<signed char>(t[i]), hi = static_cast<signed char>(t[i + 2]);
      if (lo > hi) std::swap(lo, hi);
      lo = fold(lo);
      hi = fold(hi);
      if (lo <= hi) {
        ++cover[lo + 128];
        --cover[hi + 129];
      }
      i += 2;
    } else {
      const int v = fold(static_cast<signed char>(t[i]));
      ++cover[v + 128];
      --cover[v + 129];
    }
    ++i;
  }
  for (int x = 1; x < 258; ++x) cover[x] += cover[x - 1];
  each_byte([&](int x, int c) {
    const bool in = raw.has(static_cast<unsigned char>(c)) || cover[fold(x) + 128] > 0;
    return negate ? !in : in;
  });
  return b;
}

// The pattern read into tokens: a star run, or the set of bytes one position takes (read as
// token_matches reads it). Classes with the same text share one table; a single byte is a
// table too (one bit, or its two cases), so a match compares by table lookup alone.
GlobPattern::GlobPattern(std::string_view p, bool nocase, size_t max_len) {
  empty_ = p.empty();
  const size_t n = p.size();
  std::unordered_map<std::string_view, uint32_t> seen;
  size_t inner_stars = 0;
  size_t i = 0;
  while (i < n) {
    if (p[i] == '*') {
      while (i < n && p[i] == '*') ++i;
      if (i < n) ++inner_stars;
      tokens_.push_back({true, 0});
      continue;
    }
    if (++fixed_ > max_len || inner_stars > kGlobMaxStars) {
      never_ = true;  // (nothing that long is matched against it, or too many stars)
      tokens_.clear();
      classes_.clear();
      return;
    }
    size_t next = i + 1;
    if (p[i] == '[') {  // (stepped through as token_matches steps: a range may take a ']')
      next = i + 1;
      if (next < n && p[next] == '^') ++next;
      while (next < n && p[next] != ']') {
        if (p[next] == '\\' && next + 1 < n) {
          ++next;
        } else if (next + 2 < n && p[next + 1] == '-') {
          next += 2;
        }
        ++next;
      }
      next = next < n ? next + 1 : n;
    } else if (p[i] == '\\' && i + 1 < n) {
      next = i + 2;
    }
    const std::string_view text = p.substr(i, next - i);
    auto [it, fresh] = seen.emplace(text, static_cast<uint32_t>(classes_.size()));
    if (fresh) classes_.push_back(token_bytes(text, nocase));
    tokens_.push_back({false, it->second});
    i = next;
  }
  if (inner_stars > kGlobMaxStars) {
    never_ = true;
    return;
  }
  any_ = !tokens_.empty() && fixed_ == 0;
}

bool GlobPattern::match(std::string_view s, int64_t* used) const {
  if (s.empty()) return empty_;
  if (never_ || s.size() < fixed_) return false;
  if (any_) return true;
  const size_t m = tokens_.size(), n = s.size();
  const int64_t budget = static_cast<int64_t>(kGlobStepsPerByte * (m + n)) + 1024;
  int64_t steps = budget;
  struct Count {  // (tells `used` however the match ends)
    int64_t* used;
    const int64_t& steps;
    int64_t budget;
    ~Count() {
      if (used) *used = budget - steps;
    }
  } count{used, steps, budget};
  size_t star_p = SIZE_MAX, star_s = 0;
  size_t pi = 0, si = 0;
  while (si < n) {
    if (pi < m && tokens_[pi].star) {
      if (++pi == m) return true;
      star_p = pi;
      star_s = si;
      continue;
    }
    if (--steps < 0) return false;
    if (pi < m && classes_[tokens_[pi].cls].has(static_cast<unsigned char>(s[si]))) {
      ++pi;
      ++si;
      continue;
    }
    if (star_p == SIZE_MAX) return false;
    pi = star_p;
    si = ++star_s;
  }
  while (pi < m && tokens_[pi].star) ++pi;
  return pi == m;
}

}  // namespace fg
