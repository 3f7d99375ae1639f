// Validation of limiter parameters, shared by RESP commands and configured policies.
#include "limit_spec.hpp"

#include <strings.h>

namespace fg {

namespace {
constexpr std::string_view kNames[] = {
    "none", "token_bucket", "gcra", "fixed_window", "sliding_log", "sliding_window", "concurrency"};
}

std::string_view kind_name(Kind k) { return kNames[static_cast<int>(k)]; }

Kind kind_from_name(std::string_view name) {
  for (int i = 1; i < 7; ++i) {
    if (name.size() == kNames[i].size() &&
        strncasecmp(name.data(), kNames[i].data(), name.size()) == 0) {
      return static_cast<Kind>(i);
    }
  }
  return Kind::kNone;
}

std::string validate(const LimitSpec& s) {
  auto positive = [](int64_t v) { return v > 0; };
  switch (s.kind) {
    case Kind::kTokenBucket:
      if (!positive(s.a) || !positive(s.b) || !positive(s.c))
        return "capacity, refill and period must be positive";
      if (s.a > kMaxCount || s.b > kMaxCount || s.c > kMaxPeriodNs)
        return "capacity, refill or period is out of range";
      // Time to refill a whole bucket must fit comfortably in int64 nanoseconds.
      if (static_cast<__int128>(s.a) * s.c / s.b > kMaxPeriodNs)
        return "capacity / refill * period is out of range";
      return {};
    case Kind::kGcra:
      if (s.a < 0) return "max_burst must not be negative";
      if (!positive(s.b) || !positive(s.c)) return "count and period must be positive";
      if (s.a > kMaxCount || s.b > kMaxCount || s.c > kMaxPeriodNs)
        return "max_burst, count or period is out of range";
      if (static_cast<__int128>(s.a + 1) * (s.c / s.b) > kMaxPeriodNs)
        return "max_burst * period / count is out of range";
      return {};
    case Kind::kFixedWindow:
    case Kind::kSlidingWindow:
    case Kind::kSlidingLog:
      if (!positive(s.a) || !positive(s.c)) return "limit and window must be positive";
      if (s.c > kMaxPeriodNs) return "window is out of range";
      if (s.kind == Kind::kSlidingLog && s.a > kMaxLogLimit)
        return "sliding_log limit must be at most 100000";
      if (s.a > kMaxCount) return "limit is out of range";
      return {};
    case Kind::kConcurrency:
      if (!positive(s.a) || !positive(s.c)) return "limit and ttl must be positive";
      if (s.a > kMaxLeaseLimit) return "concurrency limit must be at most 100000";
      if (s.c > kMaxPeriodNs) return "ttl is out of range";
      return {};
    case Kind::kNone:
      break;
  }
  return "unknown limiter kind";
}

}  // namespace fg
