// What every limiter answers: enough for RateLimit-* headers, Retry-After and CL.THROTTLE.
#pragma once
#include <cstdint>

namespace fg {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr int64_t kNever = -1;  // retry_after when allowed, or when the request can never fit

struct Decision {
  bool allowed = false;
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t reset_after_ns = 0;       // until the limiter is back to its full, idle state
  int64_t retry_after_ns = kNever;  // until this same request would be allowed; -1 = n/a
  // A take that may wait (FG.TAKE ... WAIT): its place was reserved and its admission is due
  // this long from now (0: admitted now). Its door answers then.
  int64_t wait_ns = 0;
};

// The longest a take may wait for its admission (FG.TAKE ... WAIT ms).
constexpr int64_t kMaxWaitMs = 60'000;

// Rounds a duration up to whole milliseconds, keeping -1 ("never") as is.
inline int64_t ceil_ms(int64_t ns) {
  if (ns < 0) return -1;
  return ns / kNsPerMs + (ns % kNsPerMs != 0 ? 1 : 0);
}

}  // namespace fg
