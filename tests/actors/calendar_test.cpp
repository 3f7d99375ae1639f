// Calendar windows: local midnights of the tz database, across days of 23 and 25 hours and
// a midnight that a zone skips, weeks from Monday, months and years — compared with glibc's
// own reading of the same database (mktime), an implementation apart from cctz.
#include "calendar.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "errors.hpp"
#include "fixed_window.hpp"
#include "limit_spec.hpp"

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kH = 3600 * kS;

int64_t b_of(CalendarUnit unit, const char* zone) {
  Result<uint32_t> id = calendar_zone(zone);
  EXPECT_TRUE(id.ok()) << zone;
  return calendar_b(unit, id.ok() ? id.value() : 0);
}

// glibc's local midnight of y-m-d in `zone` (0 when that midnight does not exist there).
int64_t glibc_midnight(const char* zone, int y, int m, int d) {
  setenv("TZ", zone, 1);
  tzset();
  std::tm t{};
  t.tm_year = y - 1900;
  t.tm_mon = m - 1;
  t.tm_mday = d;
  t.tm_isdst = -1;
  const std::time_t at = std::mktime(&t);
  std::tm back{};
  localtime_r(&at, &back);
  const bool exists = back.tm_hour == 0 && back.tm_min == 0 && back.tm_mday == d;
  return exists ? static_cast<int64_t>(at) * kS : 0;
}

TEST(Calendar, DaysAreLocalMidnightToMidnightAsGlibcReadsTheDatabase) {
  for (const char* zone : {"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                           "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham"}) {
    const int64_t b = b_of(CalendarUnit::kDay, zone);
    int checked = 0;
    for (int m = 1; m <= 12; ++m) {
      for (int d = 1; d <= 28; ++d) {
        const int64_t start = glibc_midnight(zone, 2026, m, d);
        const int64_t end = glibc_midnight(zone, 2026, m, d + 1);
        if (start == 0 || end == 0) continue;
        for (const int64_t at : {start, start + 1, (start + end) / 2, end - 1}) {
          const CalendarWindow w = calendar_window_at(b, at);
          ASSERT_EQ(w.start_ns, start) << zone << " 2026-" << m << "-" << d << " at " << at;
          ASSERT_EQ(w.end_ns, end) << zone << " 2026-" << m << "-" << d;
        }
        ++checked;
      }
    }
    EXPECT_GT(checked, 300) << zone;
  }
  unsetenv("TZ");
  tzset();
}

TEST(Calendar, DaysOf23And25Hours) {
  const int64_t b = b_of(CalendarUnit::kDay, "Europe/Berlin");
  // 2026-03-29: clocks go from 02:00 CET to 03:00 CEST (1774746000 = 2026-03-29T01:00Z).
  CalendarWindow w = calendar_window_at(b, int64_t{1774746000} * kS);
  EXPECT_EQ(w.start_ns, int64_t{1774738800} * kS);  // 2026-03-28T23:00Z, 00:00 CET
  EXPECT_EQ(w.end_ns - w.start_ns, 23 * kH);
  // 2026-10-25: from 03:00 CEST back to 02:00 CET.
  w = calendar_window_at(b, int64_t{1792900000} * kS);
  EXPECT_EQ(w.start_ns, int64_t{1792879200} * kS);  // 2026-10-24T22:00Z, 00:00 CEST
  EXPECT_EQ(w.end_ns - w.start_ns, 25 * kH);
}

TEST(Calendar, AMidnightTheZoneSkipsStartsTheDayWhenTheClockJumps) {
  // Havana, 2026-03-08: 23:59:59 CST is followed by 01:00 CDT (05:00Z).
  const int64_t b = b_of(CalendarUnit::kDay, "America/Havana");
  const CalendarWindow before = calendar_window_at(b, int64_t{1772945999} * kS);
  const CalendarWindow after = calendar_window_at(b, int64_t{1772946000} * kS);
  EXPECT_EQ(before.end_ns, int64_t{1772946000} * kS);
  EXPECT_EQ(after.start_ns, int64_t{1772946000} * kS);
  EXPECT_EQ(after.end_ns - after.start_ns, 23 * kH);
}

TEST(Calendar, WeeksMonthsAndYears) {
  // Wednesday 2026-11-25T12:00Z: its ISO week is Monday 23 to Monday 30 (UTC).
  const int64_t wed = int64_t{1795608000} * kS;
  CalendarWindow w = calendar_window_at(b_of(CalendarUnit::kWeek, "UTC"), wed);
  EXPECT_EQ(w.start_ns, int64_t{1795392000} * kS);
  EXPECT_EQ(w.end_ns - w.start_ns, 7 * 24 * kH);
  // A Monday at 00:30 in Tokyo is still Sunday in UTC: the week is Tokyo's.
  const int64_t monday_tokyo = int64_t{1795392000 - 9 * 3600 + 1800} * kS;
  w = calendar_window_at(b_of(CalendarUnit::kWeek, "Asia/Tokyo"), monday_tokyo);
  EXPECT_EQ(w.start_ns, int64_t{1795392000 - 9 * 3600} * kS);
  // February 2028 has 29 days; a month in New York spans its DST change (March: 31 d - 1 h).
  w = calendar_window_at(b_of(CalendarUnit::kMonth, "UTC"), int64_t{1833753600} * kS);
  EXPECT_EQ(w.start_ns, int64_t{1832976000} * kS);  // 2028-02-01
  EXPECT_EQ(w.end_ns - w.start_ns, 29 * 24 * kH);
  const int64_t ny_march = glibc_midnight("America/New_York", 2026, 3, 1);
  w = calendar_window_at(b_of(CalendarUnit::kMonth, "America/New_York"), ny_march + 10 * kH);
  EXPECT_EQ(w.start_ns, ny_march);
  EXPECT_EQ(w.end_ns - w.start_ns, 31 * 24 * kH - kH);
  w = calendar_window_at(b_of(CalendarUnit::kYear, "Europe/Berlin"), wed);
  EXPECT_EQ(w.start_ns, glibc_midnight("Europe/Berlin", 2026, 1, 1));
  EXPECT_EQ(w.end_ns, glibc_midnight("Europe/Berlin", 2027, 1, 1));
  unsetenv("TZ");
  tzset();
}

TEST(Calendar, OnlyZonesOfTheDatabaseAreZones) {
  EXPECT_TRUE(calendar_zone("Europe/Berlin").ok());
  EXPECT_TRUE(calendar_zone("UTC").ok());
  EXPECT_EQ(calendar_zone_name(calendar_zone("America/Havana").value()), "America/Havana");
  for (const char* bad :
       {"", "Europe/Nowhere", "europe/berlin", "localtime", "/etc/passwd", "../../../etc/passwd",
        "posix/Europe/Berlin", "right/UTC", "zone.tab", "Europe", "Fixed/UTC+01:00"}) {
    Result<uint32_t> z = calendar_zone(bad);
    ASSERT_FALSE(z.ok()) << bad;
    EXPECT_EQ(z.error(), err::kUnknownTimeZone);
  }
  EXPECT_FALSE(calendar_zone(std::string(1000, 'A')).ok());
  EXPECT_FALSE(calendar_zone_known(0x12345678u));
}

TEST(Calendar, LimitsAreMadeFromWordsAndValidated) {
  std::vector<std::string_view> w = {"calendar_window", "1000", "DAY", "TZ", "Europe/Berlin"};
  size_t i = 0;
  Result<LimitSpec> s = parse_limit_words(w, i);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(i, 5u);
  EXPECT_EQ(s->kind, Kind::kCalendarWindow);
  EXPECT_EQ(s->a, 1000);
  EXPECT_EQ(calendar_unit_of(s->b), CalendarUnit::kDay);
  EXPECT_EQ(calendar_zone_name(calendar_zone_of(s->b)), "Europe/Berlin");
  EXPECT_EQ(validate(*s), nullptr);
  // Without TZ: UTC; what follows is left to the command.
  w = {"calendar_window", "5", "month", "COST", "2"};
  i = 0;
  s = parse_limit_words(w, i);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(i, 3u);
  EXPECT_EQ(calendar_zone_name(calendar_zone_of(s->b)), "UTC");
  auto error_of = [](std::vector<std::string_view> words) {
    size_t k = 0;
    Result<LimitSpec> r = parse_limit_words(words, k);
    return r.ok() ? std::string("ok") : r.error();
  };
  EXPECT_EQ(error_of({"calendar_window", "5", "fortnight"}), err::kCalendarUnit);
  EXPECT_EQ(error_of({"calendar_window", "5", "day", "TZ", "Mars/Olympus"}), err::kUnknownTimeZone);
  EXPECT_EQ(error_of({"calendar_window", "0", "day"}), err::kWindowPositive);
  EXPECT_EQ(error_of({"calendar_window", "x", "day"}), err::kNotInteger);
  EXPECT_EQ(error_of({"calendar_window", "5"}), err::kind_params("calendar_window", 2));
  // A spec from elsewhere (a forwarded request) is checked whole.
  LimitSpec forged = *s;
  forged.b = calendar_b(CalendarUnit::kMonth, 0x12345678u);
  EXPECT_STREQ(validate(forged), err::kUnknownTimeZone);
  forged.b = calendar_b(static_cast<CalendarUnit>(9), calendar_zone_of(s->b));
  EXPECT_STREQ(validate(forged), err::kCalendarUnit);
  forged.b = s->b;
  forged.c = 1;
  EXPECT_STREQ(validate(forged), err::kWindowRange);
  EXPECT_EQ(make_limit(Kind::kCalendarWindow, 5, 0, 1000).error(), err::kUnknownKind);
}

TEST(CalendarWindow, CountsUntilLocalMidnightThenStartsAgain) {
  Result<LimitSpec> spec = make_calendar(3, "day", "Europe/Berlin");
  ASSERT_TRUE(spec.ok());
  FixedWindowState st;
  const int64_t midnight = int64_t{1774821600} * kS;  // 2026-03-30 00:00 CEST (22:00Z)
  const int64_t t = midnight - 10 * kS;
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(fixed_window_take(st, *spec, 1, t, false).allowed);
  Decision d = fixed_window_take(st, *spec, 1, t, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, 10 * kS);  // exactly until local midnight
  EXPECT_EQ(d.reset_after_ns, 10 * kS);
  EXPECT_EQ(d.remaining, 0);
  d = fixed_window_take(st, *spec, 1, midnight, false);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 2);
  EXPECT_EQ(d.reset_after_ns, 24 * kH);  // 2026-03-30 is a day of 24 hours
  // A refund for a take of the day before is not this day's.
  fixed_window_refund(st, *spec, 1, t);
  EXPECT_EQ(fixed_window_take(st, *spec, 0, midnight, true).remaining, 2);
  fixed_window_refund(st, *spec, 1, midnight + kS);
  EXPECT_EQ(fixed_window_take(st, *spec, 0, midnight, true).remaining, 3);
  // Debt (FG.ADJUST) carries to the day's end only.
  fixed_window_adjust(st, *spec, 10, midnight + kS);
  EXPECT_EQ(fixed_window_take(st, *spec, 0, midnight + kS, true).remaining, -7);
  EXPECT_EQ(fixed_window_take(st, *spec, 0, midnight + 24 * kH, true).remaining, 3);
}

}  // namespace
}  // namespace fg
