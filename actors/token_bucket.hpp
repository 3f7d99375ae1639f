// Token bucket as a pure function: capacity B, refilled with `refill` tokens every period.
#pragma once
#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

// The whole state is the instant the bucket will be full again ("full_at"); tokens are
// derived from it, so one int64 holds fractional tokens exactly to the nanosecond.
struct TokenBucketState {
  int64_t full_at_ns = 0;
};

// Takes `cost` tokens if they are there (never when dry_run). Spec must be validated.
Decision token_bucket_take(TokenBucketState& s, const LimitSpec& spec, int64_t cost, int64_t now_ns,
                           bool dry_run);

// Gives back `cost` tokens taken earlier (an expired or cancelled reservation).
void token_bucket_refund(TokenBucketState& s, const LimitSpec& spec, int64_t cost);
// FG.ADJUST: takes `delta` tokens (> 0) whether or not they are there — the bucket goes
// into debt, refilled before anyone is admitted — or gives `-delta` back (< 0), never past
// full.
void token_bucket_adjust(TokenBucketState& s, const LimitSpec& spec, int64_t delta, int64_t now_ns);

inline bool token_bucket_idle(const TokenBucketState& s, int64_t now_ns) {
  return s.full_at_ns <= now_ns;
}

}  // namespace fg
