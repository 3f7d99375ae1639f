// The limiter kinds and their parameters, with the validation every entry point shares.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace fg {

enum class Kind : uint8_t {
  kNone = 0,
  kTokenBucket = 1,
  kGcra = 2,
  kFixedWindow = 3,
  kSlidingLog = 4,
  kSlidingWindow = 5,
  kConcurrency = 6,
};

// Upper bounds that keep every intermediate product inside int64 and memory bounded.
constexpr int64_t kMaxPeriodNs = int64_t{10} * 366 * 24 * 3600 * 1'000'000'000;  // ~10 years
constexpr int64_t kMaxCount = int64_t{1} << 40;
constexpr int64_t kMaxLogLimit = 100'000;    // sliding log keeps one entry per admission
constexpr int64_t kMaxLeaseLimit = 100'000;  // concurrency keeps one entry per lease

// One limit, kind plus three integers whose meaning depends on the kind:
//   token_bucket:   a=capacity  b=refill tokens  c=per period_ns
//   gcra:           a=max_burst b=count          c=per period_ns   (CL.THROTTLE)
//   fixed_window, sliding_log, sliding_window:  a=limit  c=window_ns
//   concurrency:    a=limit     c=lease ttl_ns
// What a named policy's requests get when the cluster cannot reach any copy of the key's
// state: an error (the default), an admission, or a denial — the reply says which.
enum class FailMode : uint8_t { kError = 0, kOpen = 1, kClosed = 2 };

struct LimitSpec {
  Kind kind = Kind::kNone;
  // Policy options (they fill padding: no size cost per request).
  FailMode on_unavailable = FailMode::kError;
  bool sync = false;    // the reply waits until a replica holds the change
  uint16_t policy = 0;  // which named policy this is, for metrics (0: none; see PolicyIds)
  int64_t a = 0;
  int64_t b = 0;
  int64_t c = 0;

  static LimitSpec make(Kind k, int64_t a, int64_t b, int64_t c) {
    LimitSpec s;
    s.kind = k;
    s.a = a;
    s.b = b;
    s.c = c;
    return s;
  }
  static LimitSpec token_bucket(int64_t capacity, int64_t refill, int64_t period_ns) {
    return make(Kind::kTokenBucket, capacity, refill, period_ns);
  }
  static LimitSpec gcra(int64_t max_burst, int64_t count, int64_t period_ns) {
    return make(Kind::kGcra, max_burst, count, period_ns);
  }
  static LimitSpec window(Kind k, int64_t limit, int64_t window_ns) {
    return make(k, limit, 0, window_ns);
  }
  static LimitSpec concurrency(int64_t limit, int64_t ttl_ns) {
    return make(Kind::kConcurrency, limit, 0, ttl_ns);
  }
};
static_assert(sizeof(LimitSpec) == 32);

// Empty when the spec is usable; otherwise the reason, worded for a client.
std::string validate(const LimitSpec& spec);

std::string_view kind_name(Kind k);
Kind kind_from_name(std::string_view name);  // kNone when unknown; case-insensitive

}  // namespace fg
