// Glob patterns as Redis's stringmatchlen reads them (*, ?, [abc], [^a-z], \x), matched
// without recursion and within a work bound, so no pattern can crash or stall a thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fg {

// Redis's answers: '*' matches any run of bytes, '?' and a class one byte; an empty string
// matches only the empty pattern (as stringmatchlen, where "*" does not match ""); a
// pattern with more than kGlobMaxStars star runs that are not at its end matches nothing
// (Redis's nesting limit). The match runs in one loop (no stack grows with the pattern) and
// gives up as no match past kGlobStepsPerByte steps per byte of pattern and string — only
// a pattern built to stall (a long run that nearly matches, again and again) needs that.
bool glob_match(std::string_view pattern, std::string_view s, bool nocase);
// The same with a bound of its own: at most `max_steps` bytes of pattern read (tests).
bool glob_match_within(std::string_view pattern, std::string_view s, bool nocase,
                       int64_t max_steps);

inline constexpr size_t kGlobMaxStars = 1000;
inline constexpr size_t kGlobStepsPerByte = 16;

// A pattern read once and matched against many strings (KEYS, the SCAN family): glob_match's
// answers, with each class made a table of the bytes it takes. A match's work is bounded by
// the string and the pattern's tokens — not its bytes, so a long class costs one step, not
// its length — and a string shorter than the pattern's fixed tokens (all but the stars) is
// answered at once. Patterns that could only match strings longer than `max_len` (a key's
// kMaxKeyLen, say) are not read further: they match nothing.
class GlobPattern {
 public:
  explicit GlobPattern(std::string_view pattern, bool nocase = false, size_t max_len = SIZE_MAX);
  // (`steps`, when given: the token comparisons it made, for tests)
  bool match(std::string_view s, int64_t* steps = nullptr) const;
  // "*" (or a run of stars): every string but the empty one, with no work at all.
  bool any() const { return any_; }

 private:
  struct Token {
    bool star = false;
    uint32_t cls = 0;  // (not a star) the bytes it takes: classes_[cls]
  };
  struct Bytes {
    uint64_t bits[4] = {};
    bool has(unsigned char c) const { return (bits[c >> 6] >> (c & 63)) & 1; }
    void set(unsigned char c) { bits[c >> 6] |= uint64_t{1} << (c & 63); }
  };
  static Bytes token_bytes(std::string_view token, bool nocase);
  std::vector<Token> tokens_;
  std::vector<Bytes> classes_;
  size_t fixed_ = 0;  // tokens that are not stars: the shortest string it matches
  bool empty_ = false, never_ = false, any_ = false;
};

}  // namespace fg
