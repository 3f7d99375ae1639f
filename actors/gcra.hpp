// GCRA with redis-cell's exact CL.THROTTLE semantics (theoretical arrival time, burst, rate).
#pragma once
#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

struct GcraState {
  int64_t tat_ns = 0;  // theoretical arrival time; 0 = never seen
};

// quantity 0 peeks, as in redis-cell. Spec must be validated (kind kGcra).
Decision gcra_take(GcraState& s, const LimitSpec& spec, int64_t quantity, int64_t now_ns,
                   bool dry_run);

// Gives back a `quantity` admitted earlier (an expired or cancelled reservation).
void gcra_refund(GcraState& s, const LimitSpec& spec, int64_t quantity, int64_t now_ns);
// FG.ADJUST: admits `delta` (> 0) whatever the state — into debt: the theoretical arrival
// time runs past the burst, and later requests wait for it — or gives back `-delta` (< 0).
void gcra_adjust(GcraState& s, const LimitSpec& spec, int64_t delta, int64_t now_ns);

inline bool gcra_idle(const GcraState& s, int64_t now_ns) { return s.tat_ns <= now_ns; }

// CL.THROTTLE reports whole seconds, rounded up when a millisecond part remains; -1 stays.
int64_t redis_cell_seconds(int64_t ns);

}  // namespace fg
