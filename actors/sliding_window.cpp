// Sliding window counter arithmetic, kept exact by scaling everything by the window length.
#include "sliding_window.hpp"

#include <algorithm>

namespace fg {

namespace {
using i128 = __int128;

// Smallest e in [0, w] with prev*(w-e) <= room*w, i.e. when the weighted previous
// window has shrunk enough for `room` to be free.
int64_t wait_for_room(int64_t prev, int64_t room, int64_t w) {
  if (prev <= 0 || static_cast<i128>(prev) <= room) return 0;
  // e >= w - room*w/prev, rounded up.
  i128 need = static_cast<i128>(w) * prev - static_cast<i128>(room) * w;
  return static_cast<int64_t>((need + prev - 1) / prev);
}
}  // namespace

Decision sliding_window_take(SlidingWindowState& st, const LimitSpec& s, int64_t cost,
                             int64_t now_ns, bool dry_run) {
  const int64_t w = s.c;
  const int64_t start = now_ns - now_ns % w;
  if (st.window_ns != w || st.start_ns > start) {
    st = SlidingWindowState{start, w, 0, 0};
  } else if (st.start_ns != start) {
    st.prev = st.start_ns + w == start ? st.curr : 0;
    st.curr = 0;
    st.start_ns = start;
  }
  const int64_t elapsed = now_ns - start;
  const i128 weighted_prev = static_cast<i128>(st.prev) * (w - elapsed);  // scaled by w
  const i128 limit_scaled = static_cast<i128>(s.a) * w;
  Decision d;
  d.limit = s.a;
  d.allowed = weighted_prev + static_cast<i128>(st.curr + cost) * w <= limit_scaled;
  if (d.allowed) {
    if (!dry_run) st.curr += cost;
  } else if (cost > s.a) {
    d.retry_after_ns = kNever;
  } else if (st.curr + cost <= s.a) {
    d.retry_after_ns = start + wait_for_room(st.prev, s.a - st.curr - cost, w) - now_ns;
  } else {
    d.retry_after_ns = start + w + wait_for_room(st.curr, s.a - cost, w) - now_ns;
  }
  const i128 used = weighted_prev + static_cast<i128>(st.curr) * w;
  const i128 left = (limit_scaled - used) / w;
  // (below zero only in debt: FG.ADJUST charged past the limit)
  d.remaining = static_cast<int64_t>(left);
  if (st.curr > 0) {
    d.reset_after_ns = start + 2 * w - now_ns;
  } else if (st.prev > 0) {
    d.reset_after_ns = start + w - now_ns;
  }
  return d;
}

void sliding_window_refund(SlidingWindowState& st, const LimitSpec& s, int64_t cost,
                           int64_t taken_ns) {
  const int64_t w = s.c;
  const int64_t start = taken_ns - taken_ns % w;
  if (cost <= 0 || st.window_ns != w) return;
  int64_t* n = st.start_ns == start ? &st.curr : st.start_ns == start + w ? &st.prev : nullptr;
  if (n) *n = *n > cost ? *n - cost : 0;
}

void sliding_window_adjust(SlidingWindowState& st, const LimitSpec& s, int64_t delta,
                           int64_t now_ns) {
  sliding_window_take(st, s, 0, now_ns, true);  // (the current window)
  if (delta >= 0) {  // (debt at most kMaxCount past the limit: charges cannot wrap it)
    st.curr = std::min(st.curr + delta, s.a + kMaxCount);
    return;
  }
  int64_t back = -delta;
  for (int64_t* n : {&st.curr, &st.prev}) {
    const int64_t b = *n < back ? *n : back;
    *n -= b;
    back -= b;
  }
}

}  // namespace fg
