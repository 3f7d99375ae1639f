// Glob patterns as Redis's stringmatchlen reads them (*, ?, [abc], [^a-z], \x), matched
// without recursion and within a work bound, so no pattern can crash or stall a thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

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

}  // namespace fg
