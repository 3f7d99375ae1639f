// GCRA following redis-cell step for step, including its float rounding of the emission
// interval and of `remaining`, so CL.THROTTLE replies are identical to redis-cell's.
#include "gcra.hpp"

namespace fg {

Decision gcra_take(GcraState& st, const LimitSpec& s, int64_t quantity, int64_t now_ns,
                   bool dry_run) {
  const int64_t emission =
      static_cast<int64_t>(static_cast<double>(s.c) / static_cast<double>(s.b));
  const int64_t dvt = emission * (s.a + 1);
  const __int128 increment128 = static_cast<__int128>(emission) * quantity;
  // A quantity so large that its increment overflows can never be admitted.
  const int64_t increment =
      increment128 > kMaxPeriodNs * 4 ? kMaxPeriodNs * 4 : static_cast<int64_t>(increment128);
  const int64_t tat = st.tat_ns == 0 ? now_ns : st.tat_ns;
  const int64_t new_tat = (now_ns > tat ? now_ns : tat) + increment;
  const int64_t allow_at = new_tat - dvt;
  const int64_t diff = now_ns - allow_at;

  Decision d;
  d.limit = s.a + 1;
  int64_t ttl;
  if (diff < 0) {
    d.allowed = false;
    d.retry_after_ns = increment <= dvt ? -diff : kNever;
    // (a state whose instant passed is a key redis-cell and Redis's GCRA would have let
    // expire: nothing pending)
    ttl = tat > now_ns ? tat - now_ns : 0;
  } else {
    d.allowed = true;
    ttl = new_tat - now_ns;
    if (!dry_run) st.tat_ns = new_tat;
  }
  const int64_t next = dvt - ttl;
  if (next <= -emission && emission > 0) {  // in debt (FG.ADJUST): below zero, as many as owed
    d.remaining = next / emission;
  } else if (next > -emission && emission >= 1000) {
    d.remaining = static_cast<int64_t>(static_cast<double>(next / 1000) /
                                       static_cast<double>(emission / 1000));
  } else if (next > -emission) {
    d.remaining = emission > 0 ? next / emission : 0;
  }
  d.reset_after_ns = ttl;
  return d;
}

int64_t redis_cell_seconds(int64_t ns) {
  if (ns == kNever) return -1;
  int64_t s = ns / kNsPerSec;
  if ((ns % kNsPerSec) / kNsPerMs > 0) ++s;
  return s;
}

void gcra_refund(GcraState& st, const LimitSpec& s, int64_t quantity, int64_t now_ns) {
  if (quantity <= 0 || st.tat_ns == 0) return;
  const int64_t emission =
      static_cast<int64_t>(static_cast<double>(s.c) / static_cast<double>(s.b));
  const __int128 back = static_cast<__int128>(emission) * quantity;
  const __int128 tat = static_cast<__int128>(st.tat_ns) - back;
  st.tat_ns = tat > now_ns ? static_cast<int64_t>(tat) : now_ns;  // at most back to idle
}

void gcra_adjust(GcraState& st, const LimitSpec& s, int64_t delta, int64_t now_ns) {
  if (delta < 0) return gcra_refund(st, s, -delta, now_ns);
  if (delta == 0) return;
  const int64_t emission =
      static_cast<int64_t>(static_cast<double>(s.c) / static_cast<double>(s.b));
  const int64_t tat = st.tat_ns == 0 || st.tat_ns < now_ns ? now_ns : st.tat_ns;
  const __int128 at = static_cast<__int128>(tat) + static_cast<__int128>(emission) * delta;
  const __int128 most = static_cast<__int128>(now_ns) + kMaxDebtNs;
  st.tat_ns = static_cast<int64_t>(at < most ? at : most);
}

}  // namespace fg
