// Sliding window counter: the previous window's count, weighted by how much of it still
// overlaps the sliding window, plus the current one. O(1) memory, approximate.
#pragma once
#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

struct SlidingWindowState {
  int64_t start_ns = 0;  // start of the current (epoch-aligned) window
  int64_t window_ns = 0;
  int64_t curr = 0;
  int64_t prev = 0;
};

Decision sliding_window_take(SlidingWindowState& s, const LimitSpec& spec, int64_t cost,
                             int64_t now_ns, bool dry_run);

// Gives back `cost` taken at `taken_ns` from whichever window (current or previous)
// still counts it.
void sliding_window_refund(SlidingWindowState& s, const LimitSpec& spec, int64_t cost,
                           int64_t taken_ns);

// FG.ADJUST: counts `delta` more in the current window (> 0; past the limit: debt, which
// the window's sliding repays) or fewer (< 0: the current window's, then the previous').
void sliding_window_adjust(SlidingWindowState& s, const LimitSpec& spec, int64_t delta,
                           int64_t now_ns);
inline bool sliding_window_idle(const SlidingWindowState& s, int64_t now_ns) {
  return s.window_ns == 0 || s.start_ns + 2 * s.window_ns <= now_ns;
}

}  // namespace fg
