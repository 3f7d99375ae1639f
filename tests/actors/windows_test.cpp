// Fixed window, sliding log and sliding window counter with a frozen clock, including the
// fixed window's double burst at a boundary and its absence in the sliding log.
#include <gtest/gtest.h>

#include "fixed_window.hpp"
#include "sliding_log.hpp"
#include "sliding_window.hpp"

namespace fg {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;
// A window boundary (multiple of 60 s) so tests can straddle it deliberately.
constexpr int64_t kT0 = int64_t{28'333'333} * 60 * kS;

template <class State, class Fn>
int admitted(State& st, Fn take, const LimitSpec& spec, int n, int64_t at) {
  int ok = 0;
  for (int i = 0; i < n; ++i) ok += take(st, spec, 1, at, false).allowed ? 1 : 0;
  return ok;
}

// "free plan: 100 per minute"
TEST(FixedWindow, DoubleBurstAtTheBoundary) {
  FixedWindowState st;
  const LimitSpec spec = LimitSpec::window(Kind::kFixedWindow, 100, 60 * kS);
  EXPECT_EQ(admitted(st, fixed_window_take, spec, 150, kT0 + 59'900 * kMs), 100);
  EXPECT_EQ(admitted(st, fixed_window_take, spec, 150, kT0 + 60'000 * kMs), 100);
  // 200 admissions within 100 ms: the known weakness the sliding log exists to fix.
}

TEST(FixedWindow, ReportsResetAndRetryAtWindowEnd) {
  FixedWindowState st;
  const LimitSpec spec = LimitSpec::window(Kind::kFixedWindow, 2, 10 * kS);
  fixed_window_take(st, spec, 2, kT0 + 4 * kS, false);
  Decision d = fixed_window_take(st, spec, 1, kT0 + 4 * kS, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ns, 6 * kS);
  EXPECT_EQ(d.reset_after_ns, 6 * kS);
  EXPECT_EQ(fixed_window_take(st, spec, 3, kT0 + 4 * kS, false).retry_after_ns, -1);
  EXPECT_TRUE(fixed_window_take(st, spec, 1, kT0 + 10 * kS, false).allowed);
}

// envoyproxy/ratelimit's counting (the gateway door): a denied hit is counted too, so a
// large hit past the limit keeps the window closed for small ones; a check of 0 consumes
// nothing; all of it ends with the window.
TEST(FixedWindow, CountingDeniedHitsAsTheGatewayDoorDoes) {
  FixedWindowState st;
  LimitSpec spec = LimitSpec::window(Kind::kFixedWindow, 10, 60 * kS);
  spec.count_denied = true;
  EXPECT_TRUE(fixed_window_take(st, spec, 8, kT0, false).allowed);
  Decision d = fixed_window_take(st, spec, 5, kT0 + kS, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, -3);  // 13 hits against 10
  EXPECT_FALSE(fixed_window_take(st, spec, 1, kT0 + 2 * kS, false).allowed);
  EXPECT_FALSE(fixed_window_take(st, spec, 0, kT0 + 2 * kS, true).allowed);
  EXPECT_EQ(st.count, 14);
  EXPECT_TRUE(fixed_window_take(st, spec, 1, kT0 + 60 * kS, false).allowed);
  // Without it, the denied hit is not counted and a small one still fits.
  FixedWindowState plain;
  spec.count_denied = false;
  EXPECT_TRUE(fixed_window_take(plain, spec, 8, kT0, false).allowed);
  EXPECT_FALSE(fixed_window_take(plain, spec, 5, kT0, false).allowed);
  EXPECT_TRUE(fixed_window_take(plain, spec, 1, kT0, false).allowed);
}

TEST(SlidingLog, NoDoubleBurstAtTheBoundary) {
  SlidingLogState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingLog, 100, 60 * kS);
  EXPECT_EQ(admitted(st, sliding_log_take, spec, 150, kT0 + 59'900 * kMs), 100);
  EXPECT_EQ(admitted(st, sliding_log_take, spec, 150, kT0 + 60'000 * kMs), 0);
  // The first slot frees exactly one window after the admissions.
  EXPECT_EQ(admitted(st, sliding_log_take, spec, 150, kT0 + 119'899 * kMs), 0);
  EXPECT_EQ(admitted(st, sliding_log_take, spec, 150, kT0 + 119'900 * kMs), 100);
}

TEST(SlidingLog, NeverMoreThanLimitInAnyWindow) {
  SlidingLogState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingLog, 10, 1 * kS);
  std::vector<int64_t> admitted_at;
  for (int64_t t = 0; t < 5 * kS; t += 37 * kMs) {
    for (int k = 0; k < 3; ++k) {
      if (sliding_log_take(st, spec, 1, kT0 + t, false).allowed) admitted_at.push_back(t);
    }
  }
  for (size_t i = 0; i < admitted_at.size(); ++i) {
    size_t in_window = 0;
    for (size_t j = i; j < admitted_at.size() && admitted_at[j] < admitted_at[i] + kS; ++j)
      ++in_window;
    ASSERT_LE(in_window, 10u) << "window starting at " << admitted_at[i];
  }
  EXPECT_GT(admitted_at.size(), 40u);  // and it does admit at the limit's pace
}

TEST(SlidingLog, RetryAfterPointsAtTheFirstFreeInstant) {
  SlidingLogState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingLog, 3, 10 * kS);
  sliding_log_take(st, spec, 1, kT0, false);
  sliding_log_take(st, spec, 1, kT0 + 1 * kS, false);
  sliding_log_take(st, spec, 1, kT0 + 2 * kS, false);
  Decision d = sliding_log_take(st, spec, 2, kT0 + 5 * kS, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, 6 * kS);  // two must leave: the second at t0+1s+10s
  EXPECT_EQ(d.reset_after_ns, 7 * kS);
  EXPECT_EQ(sliding_log_take(st, spec, 4, kT0 + 5 * kS, false).retry_after_ns, -1);
  EXPECT_TRUE(sliding_log_take(st, spec, 2, kT0 + 11 * kS, false).allowed);
}

TEST(SlidingLog, MemoryFollowsTheLiveCount) {
  SlidingLogState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingLog, 1000, 1 * kS);
  for (int i = 0; i < 1000; ++i) sliding_log_take(st, spec, 1, kT0 + i * kMs, false);
  EXPECT_EQ(st.live(), 1000u);
  sliding_log_take(st, spec, 1, kT0 + 10 * kS, false);
  EXPECT_EQ(st.live(), 1u);
  EXPECT_LT(st.entries.capacity(), 100u);
  EXPECT_FALSE(sliding_log_idle(st, kT0 + 10 * kS));
  EXPECT_TRUE(sliding_log_idle(st, kT0 + 11 * kS));
}

TEST(SlidingWindow, WeightsThePreviousWindow) {
  SlidingWindowState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingWindow, 100, 60 * kS);
  EXPECT_EQ(admitted(st, sliding_window_take, spec, 150, kT0 + 59 * kS), 100);
  // 15 s into the next window, 75% of the previous 100 still count: 25 fit.
  EXPECT_EQ(admitted(st, sliding_window_take, spec, 150, kT0 + 75 * kS), 25);
  Decision d = sliding_window_take(st, spec, 1, kT0 + 75 * kS, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  // Next admission once the weighted previous count drops by one: 0.6 s later.
  EXPECT_EQ(d.retry_after_ns, 600 * kMs);
  EXPECT_TRUE(sliding_window_take(st, spec, 1, kT0 + 75 * kS + 600 * kMs, false).allowed);
}

TEST(SlidingWindow, NoDoubleBurstAtTheBoundary) {
  SlidingWindowState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingWindow, 100, 60 * kS);
  EXPECT_EQ(admitted(st, sliding_window_take, spec, 150, kT0 + 59'900 * kMs), 100);
  EXPECT_LE(admitted(st, sliding_window_take, spec, 150, kT0 + 60'000 * kMs), 1);
}

TEST(SlidingWindow, IdleAfterTwoWindows) {
  SlidingWindowState st;
  const LimitSpec spec = LimitSpec::window(Kind::kSlidingWindow, 5, 10 * kS);
  sliding_window_take(st, spec, 1, kT0 + 1 * kS, false);
  EXPECT_FALSE(sliding_window_idle(st, kT0 + 19 * kS));
  EXPECT_TRUE(sliding_window_idle(st, kT0 + 20 * kS));
}

TEST(Windows, ValidationRejectsBadParameters) {
  for (Kind k : {Kind::kFixedWindow, Kind::kSlidingLog, Kind::kSlidingWindow}) {
    EXPECT_NE(validate(LimitSpec::window(k, 0, kS)), nullptr);
    EXPECT_NE(validate(LimitSpec::window(k, -1, kS)), nullptr);
    EXPECT_NE(validate(LimitSpec::window(k, 1, 0)), nullptr);
    EXPECT_NE(validate(LimitSpec::window(k, 1, kMaxPeriodNs + 1)), nullptr);
    EXPECT_EQ(validate(LimitSpec::window(k, 100, 60 * kS)), nullptr);
  }
  EXPECT_NE(validate(LimitSpec::window(Kind::kSlidingLog, kMaxLogLimit + 1, kS)), nullptr);
}

}  // namespace
}  // namespace fg
