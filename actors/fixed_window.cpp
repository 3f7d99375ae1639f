// Fixed window arithmetic.
#include "fixed_window.hpp"

#include <algorithm>

#include "calendar.hpp"

namespace fg {

namespace {
// Where the window holding `t` ends: the epoch-aligned one, or the calendar's (computed only
// when a window ends, so a calendar window costs what a fixed one does in between).
int64_t window_end_at(const LimitSpec& s, int64_t t) {
  if (s.kind == Kind::kCalendarWindow) return calendar_window_at(s.b, t).end_ns;
  return t - t % s.c + s.c;
}
}  // namespace

Decision fixed_window_take(FixedWindowState& st, const LimitSpec& s, int64_t cost, int64_t now_ns,
                           bool dry_run) {
  // (c: a window's length, a calendar window's longest; a window ending further ahead than
  // that is from a clock that has since gone back)
  if (st.window_end_ns <= now_ns || st.window_end_ns - s.c > now_ns) {
    st.window_end_ns = window_end_at(s, now_ns);
    st.count = 0;
  }
  Decision d;
  d.limit = s.a;
  d.allowed = cost <= s.a - st.count;
  if (d.allowed) {
    if (!dry_run) st.count += cost;
  } else {
    d.retry_after_ns = cost <= s.a ? st.window_end_ns - now_ns : kNever;
    // (bounded as FG.ADJUST's debt: repeated hits cannot wrap the count)
    if (s.count_denied && !dry_run) st.count = std::min(st.count + cost, s.a + kMaxCount);
  }
  d.remaining = s.a - st.count;  // (below zero only in debt: FG.ADJUST charged past the limit)
  d.reset_after_ns = st.count > 0 ? st.window_end_ns - now_ns : 0;
  return d;
}

void fixed_window_refund(FixedWindowState& st, const LimitSpec& s, int64_t cost, int64_t taken_ns) {
  if (cost <= 0 || st.window_end_ns != window_end_at(s, taken_ns)) return;  // window gone
  st.count = st.count > cost ? st.count - cost : 0;
}

void fixed_window_adjust(FixedWindowState& st, const LimitSpec& s, int64_t delta, int64_t now_ns) {
  fixed_window_take(st, s, 0, now_ns, true);  // (the current window)
  // (debt at most kMaxCount past the limit: repeated charges cannot wrap the count)
  st.count = delta < 0 && st.count < -delta ? 0 : std::min(st.count + delta, s.a + kMaxCount);
}

}  // namespace fg
