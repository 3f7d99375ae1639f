// Making and validating limits: shared by both doors, the config file and the CLI.
#include "limit_spec.hpp"

#include <strings.h>

#include "calendar.hpp"
#include "errors.hpp"
#include "words.hpp"

namespace fg {

namespace {
constexpr std::string_view kNames[] = {"none",
                                       "token_bucket",
                                       "gcra",
                                       "fixed_window",
                                       "sliding_log",
                                       "sliding_window",
                                       "concurrency",
                                       "string",
                                       "hash",
                                       "zset",
                                       "list",
                                       "set",
                                       "calendar_window",
                                       "stream"};  // (Kind's order)
}

std::string_view kind_name(Kind k) { return kNames[static_cast<int>(k)]; }

Kind kind_from_name(std::string_view name) {
  for (int i = 1; i <= static_cast<int>(kLastKind); ++i) {
    if (is_limiter(static_cast<Kind>(i)) && name.size() == kNames[i].size() &&
        strncasecmp(name.data(), kNames[i].data(), name.size()) == 0) {
      return static_cast<Kind>(i);
    }
  }
  return Kind::kNone;
}

const char* validate(const LimitSpec& s) {
  auto positive = [](int64_t v) { return v > 0; };
  switch (s.kind) {
    case Kind::kTokenBucket:
      if (!positive(s.a) || !positive(s.b) || !positive(s.c)) return err::kBucketPositive;
      if (s.a > kMaxCount || s.b > kMaxCount || s.c > kMaxPeriodNs) return err::kBucketRange;
      // Time to refill a whole bucket must fit comfortably in int64 nanoseconds.
      if (static_cast<__int128>(s.a) * s.c / s.b > kMaxPeriodNs) return err::kBucketProduct;
      return nullptr;
    case Kind::kGcra:
      if (s.a < 0) return err::kGcraBurstNegative;
      if (!positive(s.b) || !positive(s.c)) return err::kGcraPositive;
      if (s.a > kMaxCount || s.b > kMaxCount || s.c > kMaxPeriodNs) return err::kGcraRange;
      if (static_cast<__int128>(s.a + 1) * (s.c / s.b) > kMaxPeriodNs) return err::kGcraProduct;
      return nullptr;
    case Kind::kFixedWindow:
    case Kind::kSlidingWindow:
    case Kind::kSlidingLog:
      if (!positive(s.a) || !positive(s.c)) return err::kWindowPositive;
      if (s.c > kMaxPeriodNs) return err::kWindowRange;
      if (s.kind == Kind::kSlidingLog && s.a > kMaxLogLimit) return err::kLogLimit;
      if (s.a > kMaxCount) return err::kLimitRange;
      return nullptr;
    case Kind::kCalendarWindow: {
      if (!positive(s.a)) return err::kWindowPositive;
      if (s.a > kMaxCount) return err::kLimitRange;
      const CalendarUnit u = calendar_unit_of(s.b);
      if (s.b < 0 || calendar_unit_name(u).empty()) return err::kCalendarUnit;
      if (s.c != calendar_max_span_ns(u)) return err::kWindowRange;
      if (!calendar_zone_known(calendar_zone_of(s.b))) return err::kUnknownTimeZone;
      return nullptr;
    }
    case Kind::kConcurrency:
      if (!positive(s.a) || !positive(s.c)) return err::kLeasePositive;
      if (s.a > kMaxLeaseLimit) return err::kLeaseLimit;
      if (s.c > kMaxPeriodNs) return err::kTtlRange;
      return nullptr;
    case Kind::kNone:
    case Kind::kString:
    case Kind::kHash:
    case Kind::kZSet:
    case Kind::kList:
    case Kind::kSet:
    case Kind::kStream:
      break;
  }
  return err::kUnknownKind;
}

size_t param_count(Kind k) { return k == Kind::kTokenBucket || k == Kind::kGcra ? 3 : 2; }

Result<LimitSpec> make_calendar(int64_t limit, std::string_view unit, std::string_view zone) {
  const CalendarUnit u = calendar_unit_from_name(unit);
  if (u == CalendarUnit::kNone) return Error{err::kCalendarUnit};
  Result<uint32_t> id = calendar_zone(zone);
  if (!id.ok()) return Error{id.error()};
  const LimitSpec spec = LimitSpec::make(Kind::kCalendarWindow, limit, calendar_b(u, id.value()),
                                         calendar_max_span_ns(u));
  if (const char* why = validate(spec)) return Error{why};  // (the zone found again: cached)
  return spec;
}

Result<LimitSpec> make_limit(Kind kind, int64_t a, int64_t b, int64_t period_ms) {
  if (!is_limiter(kind) || kind == Kind::kCalendarWindow) {
    return Error{err::kUnknownKind};
  }
  if (period_ms <= 0) return Error{err::kNotPositive};
  if (period_ms > kMaxPeriodNs / 1'000'000) return Error{err::kNotInteger};
  const int64_t ns = period_ms * 1'000'000;
  LimitSpec spec;
  switch (kind) {
    case Kind::kTokenBucket:
      spec = LimitSpec::token_bucket(a, b, ns);
      break;
    case Kind::kGcra:
      spec = LimitSpec::gcra(a, b, ns);
      break;
    case Kind::kConcurrency:
      spec = LimitSpec::concurrency(a, ns);
      break;
    default:
      spec = LimitSpec::window(kind, a, ns);
      break;
  }
  if (const char* why = validate(spec)) return Error{why};
  return spec;
}

Result<LimitSpec> parse_limit_words(const std::vector<std::string_view>& words, size_t& i) {
  const Kind kind = i < words.size() ? kind_from_name(words[i]) : Kind::kNone;
  if (kind == Kind::kNone) return Error{err::kLimitNeedsKind};
  if (kind == Kind::kCalendarWindow) {  // calendar_window <limit> <period> [TZ <zone>]
    if (i + 2 >= words.size()) return Error{err::kind_params(kind_name(kind), 2)};
    int64_t limit = 0;
    if (!parse_int(words[i + 1], limit)) return Error{err::kNotInteger};
    const std::string_view unit = words[i + 2];
    i += 3;
    std::string_view zone = "UTC";
    if (i + 1 < words.size() && iequals(words[i], "tz")) {
      zone = words[i + 1];
      i += 2;
    }
    return make_calendar(limit, unit, zone);
  }
  const size_t n = param_count(kind);
  if (i + n >= words.size()) return Error{err::kind_params(kind_name(kind), n)};
  int64_t p[3] = {0, 0, 0};
  for (size_t k = 0; k < n; ++k) {
    if (!parse_int(words[i + 1 + k], p[k])) return Error{err::kNotInteger};
  }
  i += 1 + n;
  return n == 3 ? make_limit(kind, p[0], p[1], p[2]) : make_limit(kind, p[0], 0, p[1]);
}

}  // namespace fg
