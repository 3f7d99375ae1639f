// GCRA against redis-cell's published test vectors and CL.THROTTLE's seconds rounding.
#include "gcra.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

struct Case {
  int64_t at_ms;
  int64_t quantity;
  int64_t remaining;
  int64_t reset_after_ns;
  int64_t retry_after_ns;
  bool limited;
};

// redis-cell src/cell/mod.rs `it_rate_limits`: max_burst 4, 1 per second.
TEST(Gcra, RedisCellVectors) {
  const Case cases[] = {
      {0, 6, 5, 0, -1, true},  // never more than the maximum at once
      {0, 1, 4, 1 * kS, -1, false},
      {0, 1, 3, 2 * kS, -1, false},
      {0, 1, 2, 3 * kS, -1, false},
      {0, 1, 1, 4 * kS, -1, false},
      {0, 1, 0, 5 * kS, -1, false},
      {0, 1, 0, 5 * kS, 1 * kS, true},
      {3000, 1, 2, 3000 * kMs, -1, false},
      {3100, 1, 1, 3900 * kMs, -1, false},
      {4000, 1, 1, 4000 * kMs, -1, false},
      {8000, 1, 4, 1000 * kMs, -1, false},
      {9500, 1, 4, 1000 * kMs, -1, false},
      {9500, 0, 4, 1 * kS, -1, false},  // quantity 0 peeks
      {9500, 2, 2, 3 * kS, -1, false},
      {9500, 5, 2, 3 * kS, 3 * kS, true},
  };
  GcraState st;
  const LimitSpec spec = LimitSpec::gcra(4, 1, 1 * kS);
  ASSERT_EQ(validate(spec), nullptr);
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(i++));
    Decision d = gcra_take(st, spec, c.quantity, kStart + c.at_ms * kMs, false);
    EXPECT_EQ(d.allowed, !c.limited);
    EXPECT_EQ(d.limit, 5);
    EXPECT_EQ(d.remaining, c.remaining);
    EXPECT_EQ(d.reset_after_ns, c.reset_after_ns);
    EXPECT_EQ(d.retry_after_ns, c.retry_after_ns);
  }
}

// The redis-cell README example: CL.THROTTLE user123 15 30 60 -> 0 16 15 -1 2
TEST(Gcra, ReadmeExampleInSeconds) {
  GcraState st;
  Decision d = gcra_take(st, LimitSpec::gcra(15, 30, 60 * kS), 1, kStart, false);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.limit, 16);
  EXPECT_EQ(d.remaining, 15);
  EXPECT_EQ(redis_cell_seconds(d.retry_after_ns), -1);
  EXPECT_EQ(redis_cell_seconds(d.reset_after_ns), 2);
}

TEST(Gcra, SecondsRoundUpOnAnyMillisecond) {
  EXPECT_EQ(redis_cell_seconds(-1), -1);
  EXPECT_EQ(redis_cell_seconds(0), 0);
  EXPECT_EQ(redis_cell_seconds(999 * kMs), 1);
  EXPECT_EQ(redis_cell_seconds(1 * kS), 1);
  EXPECT_EQ(redis_cell_seconds(1 * kS + 1 * kMs), 2);
  EXPECT_EQ(redis_cell_seconds(1 * kS + 999), 1);  // sub-millisecond remainder ignored
}

TEST(Gcra, DryRunDoesNotConsume) {
  GcraState st;
  const LimitSpec spec = LimitSpec::gcra(0, 1, 10 * kS);
  EXPECT_TRUE(gcra_take(st, spec, 1, kStart, true).allowed);
  EXPECT_TRUE(gcra_take(st, spec, 1, kStart, false).allowed);
  EXPECT_FALSE(gcra_take(st, spec, 1, kStart, false).allowed);
}

TEST(Gcra, HugeQuantityIsDeniedWithoutOverflow) {
  GcraState st;
  const LimitSpec spec = LimitSpec::gcra(10, 1, 1 * kS);
  Decision d = gcra_take(st, spec, int64_t{1} << 40, kStart, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, -1);
  EXPECT_EQ(d.remaining, 11);
}

TEST(Gcra, ValidationRejectsBadParameters) {
  EXPECT_NE(validate(LimitSpec::gcra(-1, 1, kS)), nullptr);
  EXPECT_NE(validate(LimitSpec::gcra(1, 0, kS)), nullptr);
  EXPECT_NE(validate(LimitSpec::gcra(1, 1, 0)), nullptr);
  EXPECT_NE(validate(LimitSpec::gcra(int64_t{1} << 50, 1, kS)), nullptr);
  EXPECT_EQ(validate(LimitSpec::gcra(0, 1, kS)), nullptr);
}

}  // namespace
}  // namespace fg
