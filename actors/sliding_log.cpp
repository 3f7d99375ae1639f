// Sliding window log: evict what left the window, admit if the rest plus cost fits.
#include "sliding_log.hpp"

namespace fg {

namespace {
void evict(SlidingLogState& st, int64_t now_ns, int64_t w) {
  while (st.head < st.entries.size() && st.entries[st.head].at_ns <= now_ns - w) {
    st.total -= st.entries[st.head].cost;
    ++st.head;
  }
  // Compact once the dead prefix dominates, so memory follows the live count.
  if (st.head > 16 && st.head * 2 > st.entries.size()) {
    st.entries.erase(st.entries.begin(), st.entries.begin() + static_cast<long>(st.head));
    st.head = 0;
    if (st.entries.capacity() > 4 * st.entries.size() + 16) st.entries.shrink_to_fit();
  }
}
}  // namespace

Decision sliding_log_take(SlidingLogState& st, const LimitSpec& s, int64_t cost, int64_t now_ns,
                          bool dry_run) {
  const int64_t w = s.c;
  st.window_ns = w;
  evict(st, now_ns, w);
  Decision d;
  d.limit = s.a;
  d.allowed = cost <= s.a - st.total;
  if (d.allowed) {
    if (!dry_run && cost > 0) {
      if (st.live() > 0 && st.entries.back().at_ns >= now_ns) {
        st.entries.back().cost += cost;  // same instant (or a clock that stepped back)
      } else {
        st.entries.push_back({now_ns, cost});
      }
      st.total += cost;
    }
  } else if (cost > s.a) {
    d.retry_after_ns = kNever;
  } else {
    // The earliest instant at which enough old admissions have left the window.
    int64_t freed = 0;
    for (size_t i = st.head; i < st.entries.size(); ++i) {
      freed += st.entries[i].cost;
      if (st.total - freed + cost <= s.a) {
        d.retry_after_ns = st.entries[i].at_ns + w - now_ns;
        break;
      }
    }
  }
  d.remaining = s.a > st.total ? s.a - st.total : 0;
  d.reset_after_ns = st.live() > 0 ? st.entries.back().at_ns + w - now_ns : 0;
  if (d.reset_after_ns < 0) d.reset_after_ns = 0;
  return d;
}

bool sliding_log_idle(const SlidingLogState& st, int64_t now_ns) {
  return st.live() == 0 || st.entries.back().at_ns <= now_ns - st.window_ns;
}

void sliding_log_refund(SlidingLogState& st, int64_t cost, int64_t taken_ns) {
  for (size_t i = st.entries.size(); i > st.head && cost > 0; --i) {
    SlidingLogState::Entry& e = st.entries[i - 1];
    if (e.at_ns < taken_ns) break;
    if (e.at_ns != taken_ns) continue;
    const int64_t back = e.cost < cost ? e.cost : cost;
    e.cost -= back;
    st.total -= back;
    if (e.cost == 0) st.entries.erase(st.entries.begin() + static_cast<long>(i - 1));
    return;
  }
}

void sliding_log_adjust(SlidingLogState& st, const LimitSpec& s, int64_t delta, int64_t now_ns) {
  if (delta > 0) {
    sliding_log_take(st, s, 0, now_ns, true);  // (what left the window)
    const int64_t room = s.a - st.total;
    if (room > 0) sliding_log_take(st, s, delta < room ? delta : room, now_ns, false);
    return;
  }
  for (int64_t back = -delta; back > 0 && st.live() > 0;) {
    SlidingLogState::Entry& e = st.entries.back();
    const int64_t b = e.cost < back ? e.cost : back;
    e.cost -= b;
    st.total -= b;
    back -= b;
    if (e.cost == 0) st.entries.pop_back();
  }
}

}  // namespace fg
