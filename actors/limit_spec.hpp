// The limiter kinds and their parameters, with the validation every entry point shares.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace fg {

enum class Kind : uint8_t {
  kNone = 0,
  kTokenBucket = 1,
  kGcra = 2,
  kFixedWindow = 3,
  kSlidingLog = 4,
  kSlidingWindow = 5,
  kConcurrency = 6,
  // Data types of the Redis data commands (actors/data_ops.cpp): kinds of key, never limits.
  kString = 7,
  kHash = 8,
  kZSet = 9,
  kList = 10,
  kSet = 11,
  // A fixed window from local midnight to the next (day, week, month, year): calendar.hpp.
  kCalendarWindow = 12,
  // Streams (actors/data_stream.cpp): a data type.
  kStream = 13,
};
inline bool is_limiter(Kind k) {
  return (k != Kind::kNone && k <= Kind::kConcurrency) || k == Kind::kCalendarWindow;
}
constexpr Kind kLastKind = Kind::kStream;

// Upper bounds that keep every intermediate product inside int64 and memory bounded.
constexpr int64_t kMaxPeriodNs = int64_t{10} * 366 * 24 * 3600 * 1'000'000'000;  // ~10 years
constexpr int64_t kMaxCount = int64_t{1} << 40;
// How far into debt FG.ADJUST may charge a bucket or GCRA: its next admission at most this
// far off (a bound that keeps every later sum of instants inside int64).
constexpr int64_t kMaxDebtNs = 4 * kMaxPeriodNs;
constexpr int64_t kMaxLogLimit = 100'000;    // sliding log keeps one entry per admission
constexpr int64_t kMaxLeaseLimit = 100'000;  // concurrency keeps one entry per lease

// One limit, kind plus three integers whose meaning depends on the kind:
//   token_bucket:   a=capacity  b=refill tokens  c=per period_ns
//   gcra:           a=max_burst b=count          c=per period_ns   (CL.THROTTLE)
//   fixed_window, sliding_log, sliding_window:  a=limit  c=window_ns
//   concurrency:    a=limit     c=lease ttl_ns
//   calendar_window: a=limit    b=unit and zone (calendar_b)  c=the unit's longest span
// What a named policy's requests get when the cluster cannot reach any copy of the key's
// state: an error (the default), an admission, or a denial — the reply says which.
enum class FailMode : uint8_t { kError = 0, kOpen = 1, kClosed = 2 };

struct LimitSpec {
  Kind kind = Kind::kNone;
  // Policy options (they fill padding: no size cost per request).
  FailMode on_unavailable = FailMode::kError;
  bool sync = false;  // the reply waits until a replica holds the change
  // Shadow mode: counted exactly as enforced, but every request is allowed; a would-be
  // denial is counted per policy (RequestCore::finish). Rate limits only.
  bool shadow = false;
  // Fixed and calendar windows: a denied take is counted too (envoyproxy/ratelimit's INCRBY
  // on every hit, which the gateway door keeps): a hit past the limit keeps the window
  // closed for smaller ones until it ends.
  bool count_denied : 1;
  // `slices: off`: every take is decided by the key's owner, never from a quota slice a
  // node or a gateway holds (api/COMMANDS.md, Quota slices).
  bool no_slices : 1;
  uint16_t policy = 0;  // which named policy this is, for metrics (0: none; see PolicyIds)
  int64_t a = 0;
  int64_t b = 0;
  int64_t c = 0;

  constexpr LimitSpec() : count_denied(false), no_slices(false) {}

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

// Null when the spec is usable; otherwise the reply text saying why not (errors.hpp).
const char* validate(const LimitSpec& spec);

std::string_view kind_name(Kind k);
Kind kind_from_name(std::string_view name);  // kNone when unknown; case-insensitive
// How many numbers a kind takes as users write it: 3 for token_bucket and gcra, else 2
// (calendar_window: its limit and a period word, then TZ and a zone name or UTC).
size_t param_count(Kind k);

// The one way a limit is made from what a user wrote — RESP arguments, a native request,
// the config file, the CLI: a kind and its numbers with the period (window, ttl) in
// milliseconds. Checks the period's range, then validate().
Result<LimitSpec> make_limit(Kind kind, int64_t a, int64_t b, int64_t period_ms);
// A calendar window: `limit` per `unit` ("day", "week", "month", "year") in `zone` (a name
// of the tz database).
Result<LimitSpec> make_calendar(int64_t limit, std::string_view unit, std::string_view zone);
// "<kind> <numbers...>" at words[i] (the numbers strict decimal); advances i past them.
Result<LimitSpec> parse_limit_words(const std::vector<std::string_view>& words, size_t& i);

}  // namespace fg
