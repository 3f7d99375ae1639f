// libFuzzer target: any bytes, cut where the input says into a pattern and a string, must
// match as the slow second matcher (tests/actors/glob_reference.hpp) says, in work bounded
// by the inputs (a stall fails the run's -timeout), never growing the stack with the pattern.
#include <cstdint>
#include <string_view>

#include "../actors/glob_reference.hpp"
#include "glob.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool nocase = data[0] & 1;
  const size_t cut = data[1] % (size - 1);
  const std::string_view all(reinterpret_cast<const char*>(data + 2), size - 2);
  const std::string_view p = all.substr(0, cut), s = all.substr(cut);
  const bool fast = fg::glob_match(p, s, nocase);
  const bool slow = fg::reference::glob_match(p, s, nocase);
  // The bound may give up on a match that needs more than its steps: only as "no match",
  // and only where the unbounded matcher agrees with the reference.
  if (fast != slow) {
    if (fast || fg::glob_match_within(p, s, nocase, INT64_MAX) != slow) __builtin_trap();
  }
  return 0;
}
