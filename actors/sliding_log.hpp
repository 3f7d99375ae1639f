// Sliding window log: an exact record of admissions, never more than L in any window W.
#pragma once
#include <vector>

#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

// Admissions in time order; an entry holds every admission of one instant. Memory is
// bounded by the limit (each entry carries cost >= 1 and the live total is <= limit).
struct SlidingLogState {
  struct Entry {
    int64_t at_ns;
    int64_t cost;
  };
  std::vector<Entry> entries;
  size_t head = 0;    // entries before head have left the window
  int64_t total = 0;  // sum of cost in [head, end)
  int64_t window_ns = 0;

  size_t live() const { return entries.size() - head; }
};

// An admission at t counts for the window (now - W, now].
Decision sliding_log_take(SlidingLogState& s, const LimitSpec& spec, int64_t cost, int64_t now_ns,
                          bool dry_run);

// Removes `cost` admitted at exactly `taken_ns` from the log, if still there.
void sliding_log_refund(SlidingLogState& s, int64_t cost, int64_t taken_ns);

bool sliding_log_idle(const SlidingLogState& s, int64_t now_ns);
// FG.ADJUST: records `delta` more admissions now (> 0), as many as the limit has room for (a
// log holds at most its limit: no debt), or removes the newest `-delta` (< 0).
void sliding_log_adjust(SlidingLogState& s, const LimitSpec& spec, int64_t delta, int64_t now_ns);

}  // namespace fg
