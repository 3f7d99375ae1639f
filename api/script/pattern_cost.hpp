// The worst-case work of a Lua 5.1 pattern match, from the pattern and the subject's length
// alone, so the sandbox can refuse a match that would run for seconds inside one C call
// (where no instruction hook can stop it) before it starts.
#pragma once
#include <cstddef>
#include <string_view>

namespace fg {

// How a pattern is used: find/match/gsub honour a leading '^' as an anchor; gmatch does not.
enum class PatternUse { kAnchorable, kGmatch };

// An upper bound on the matcher's steps for `pattern` over `subject_bytes` bytes (from the
// start position on): the start positions tried, times every length each backtracking item
// may take. An item backtracks when something after it can fail: a `*`, `+` or `-` item
// (n+1 lengths), a `?` item (2), and `%b` and back references (one scan of up to n each).
// A quantified item that is the pattern's last (only captures after it) never backtracks.
// Saturates instead of overflowing.
double pattern_steps(std::string_view pattern, size_t subject_bytes, PatternUse use);

// What a single match call may cost; past it the sandbox refuses the call. Measured with
// Lua 5.1's matcher on these machines, 'a*b' over 1,000 bytes of 'a' (2M here) takes ~9 ms:
// the worst allowed match is about one default script budget (5 ms).
inline constexpr double kMaxPatternSteps = 1'000'000;

}  // namespace fg
