// Fixed window arithmetic.
#include "fixed_window.hpp"

#include <algorithm>

namespace fg {

Decision fixed_window_take(FixedWindowState& st, const LimitSpec& s, int64_t cost, int64_t now_ns,
                           bool dry_run) {
  const int64_t w = s.c;
  if (st.window_end_ns <= now_ns || st.window_end_ns - w > now_ns) {
    st.window_end_ns = now_ns - now_ns % w + w;
    st.count = 0;
  }
  Decision d;
  d.limit = s.a;
  d.allowed = cost <= s.a - st.count;
  if (d.allowed) {
    if (!dry_run) st.count += cost;
  } else {
    d.retry_after_ns = cost <= s.a ? st.window_end_ns - now_ns : kNever;
  }
  d.remaining = s.a - st.count;  // (below zero only in debt: FG.ADJUST charged past the limit)
  d.reset_after_ns = st.count > 0 ? st.window_end_ns - now_ns : 0;
  return d;
}

void fixed_window_refund(FixedWindowState& st, const LimitSpec& s, int64_t cost, int64_t taken_ns) {
  const int64_t w = s.c;
  if (cost <= 0 || st.window_end_ns != taken_ns - taken_ns % w + w) return;  // window gone
  st.count = st.count > cost ? st.count - cost : 0;
}

void fixed_window_adjust(FixedWindowState& st, const LimitSpec& s, int64_t delta, int64_t now_ns) {
  fixed_window_take(st, s, 0, now_ns, true);  // (the current window)
  // (debt at most kMaxCount past the limit: repeated charges cannot wrap the count)
  st.count = delta < 0 && st.count < -delta ? 0 : std::min(st.count + delta, s.a + kMaxCount);
}

}  // namespace fg
