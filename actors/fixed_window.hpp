// Fixed window counter (the INCR + EXPIRE pattern): resets at each window boundary.
#pragma once
#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

struct FixedWindowState {
  int64_t window_end_ns = 0;
  int64_t count = 0;
};

// Windows are aligned to the epoch, so every node agrees where a window starts; a calendar
// window (Kind::kCalendarWindow) is one from local midnight to the next (calendar.hpp), the
// same state and arithmetic otherwise.
Decision fixed_window_take(FixedWindowState& s, const LimitSpec& spec, int64_t cost, int64_t now_ns,
                           bool dry_run);

// Gives back `cost` taken at `taken_ns`, if its window is still the current one.
void fixed_window_refund(FixedWindowState& s, const LimitSpec& spec, int64_t cost,
                         int64_t taken_ns);

// FG.ADJUST: counts `delta` more (> 0; past the limit: the rest of the window is denied) or
// fewer (< 0, never below zero) in the current window.
void fixed_window_adjust(FixedWindowState& s, const LimitSpec& spec, int64_t delta, int64_t now_ns);
inline bool fixed_window_idle(const FixedWindowState& s, int64_t now_ns) {
  return s.window_end_ns <= now_ns;
}

}  // namespace fg
