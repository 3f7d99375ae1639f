// Token bucket arithmetic in integer nanoseconds, widened to 128 bits where products meet.
#include "token_bucket.hpp"

#include <algorithm>

namespace fg {

namespace {
// Time for `tokens` tokens to drip in, rounded up so a bucket never over-grants.
int64_t drip_ns(int64_t tokens, const LimitSpec& s) {
  __int128 num = static_cast<__int128>(tokens) * s.c;
  return static_cast<int64_t>((num + s.b - 1) / s.b);
}
// (Rounded down, below zero too: a debt of 2.5 tokens leaves -3.)
int64_t tokens_in(int64_t ns, const LimitSpec& s) {
  const __int128 num = static_cast<__int128>(ns) * s.b;
  return static_cast<int64_t>(num >= 0 ? num / s.c : -((-num + s.c - 1) / s.c));
}
}  // namespace

Decision token_bucket_take(TokenBucketState& st, const LimitSpec& s, int64_t cost, int64_t now_ns,
                           bool dry_run) {
  const int64_t full_ns = drip_ns(s.a, s);
  const int64_t base = std::max(st.full_at_ns, now_ns);
  int64_t deficit = base - now_ns;  // time until full; <= full_ns
  Decision d;
  d.limit = s.a;
  if (cost > s.a) {  // can never fit, however long the caller waits
    d.allowed = false;
    d.retry_after_ns = kNever;
  } else {
    const int64_t need = drip_ns(cost, s);
    d.allowed = deficit + need <= full_ns;
    if (d.allowed) {
      if (!dry_run) {
        st.full_at_ns = base + need;
        deficit += need;
      }
    } else {
      d.retry_after_ns = deficit + need - full_ns;
    }
  }
  // (below zero only in debt: FG.ADJUST charged past empty)
  d.remaining = tokens_in(full_ns - deficit, s);
  d.reset_after_ns = deficit;
  return d;
}

// The tokens come back as if they had dripped in already; a bucket never overfills.
void token_bucket_refund(TokenBucketState& st, const LimitSpec& s, int64_t cost) {
  if (cost <= 0) return;
  st.full_at_ns -= drip_ns(std::min(cost, s.a), s);
}

void token_bucket_adjust(TokenBucketState& st, const LimitSpec& s, int64_t delta, int64_t now_ns) {
  const int64_t base = std::max(st.full_at_ns, now_ns);
  const __int128 ns =
      (static_cast<__int128>(delta < 0 ? -delta : delta) * s.c + s.b - 1) / s.b;  // drip time
  if (delta > 0) {
    const __int128 at = static_cast<__int128>(base) + ns;
    const __int128 most = static_cast<__int128>(now_ns) + kMaxDebtNs;
    st.full_at_ns = static_cast<int64_t>(at < most ? at : most);
  } else if (delta < 0) {
    const __int128 at = static_cast<__int128>(base) - ns;
    st.full_at_ns = at < now_ns ? now_ns : static_cast<int64_t>(at);
  }
}

}  // namespace fg
