// The node clock's slewing: wall-clock steps are followed slowly, never jumped.
#include "clock.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kHourNs = 3600LL * 1000 * kMs;

TEST(Clock, SlewMovesAtMostMaxPpmOfElapsedTime) {
  struct Case {
    int64_t offset, target, elapsed, want;
  } cases[] = {
      {0, kHourNs, 10 * kMs, 5'000},                           // +1 h step: 5 µs per 10 ms
      {0, -kHourNs, 10 * kMs, -5'000},                         // -1 h step: the same, backwards
      {0, 1'000, 10 * kMs, 1'000},                             // a small gap closes at once
      {100, 100, 10 * kMs, 100},                               // on target: unchanged
      {0, kHourNs, 1000 * kMs, 500'000},                       // 0.5 ms per second
      {0, kHourNs, 0, 0},                                      // no time passed, no step
      {7, kHourNs, -5, 7},                                     // a steady clock never runs back
      {0, 2 * kHourNs, 86'400'000LL * kMs, 43'200'000'000LL},  // a day: 43.2 s
  };
  for (const auto& c : cases)
    EXPECT_EQ(slew_offset(c.offset, c.target, c.elapsed, kMaxSlewPpm), c.want)
        << c.offset << " -> " << c.target << " over " << c.elapsed;
}

TEST(Clock, ProcessClockTracksWallTimeAndNeverRunsBack) {
  SystemClock& c = SystemClock::process();
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  int64_t last = c.now_ns();
  EXPECT_LT(std::llabs(last - wall), 1000 * kMs);  // the same clock as the wall, at start
  for (int i = 0; i < 100000; ++i) {
    const int64_t t = c.now_ns();
    ASSERT_GE(t, last);
    last = t;
  }
}

}  // namespace
}  // namespace fg
