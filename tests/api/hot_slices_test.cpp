// Quota slices of hot keys on the node that forwards them: when it asks, how much, what a
// slice admits, when it ends, and which limits are never sliced.
#include "hot_slices.hpp"

#include <gtest/gtest.h>

#include "request.hpp"

namespace fg {
namespace {

constexpr int64_t kMs = 1'000'000;
const LimitSpec kBucket = LimitSpec::token_bucket(100, 100, 1000 * kMs);

Outcome granted(int64_t remaining, int64_t reset_ns = 500 * kMs) {
  Outcome o;
  o.decision.allowed = true;
  o.decision.limit = 100;
  o.decision.remaining = remaining;
  o.decision.reset_after_ns = reset_ns;
  return o;
}

// Forwards `n` takes of `key` a millisecond apart from `t`; the slice asked for, if any.
int64_t forward(HotSlices& hs, const LimitSpec& spec, int n, int64_t& t) {
  int64_t asked = 0;
  for (int i = 0; i < n; ++i, t += kMs) {
    Decision d;
    int64_t ask = 0;
    EXPECT_FALSE(hs.take("k", spec, 1, t, 3, d, ask));
    if (ask > 0) asked = ask;
  }
  return asked;
}

TEST(HotSlices, AKeyForwardedPastTheThresholdAsksForASliceAndAdmitsFromIt) {
  HotSlices hs;
  hs.configure(500, 100);  // 500 forwards a second, slices of 100 ms
  int64_t t = 1'000'000 * kMs;
  // 40 in 40 ms: 1000 a second by the tenth's count, past the threshold.
  const int64_t ask = forward(hs, kBucket, 60, t);
  ASSERT_GT(ask, 0);
  EXPECT_LE(ask, 100 / 3);  // at most the capacity's share of one of 3 members
  EXPECT_EQ(hs.asked.load(), 1u);
  // (only one slice asked for at a time)
  EXPECT_EQ(forward(hs, kBucket, 5, t), 0);
  hs.granted("k", kBucket, ask, granted(60), t);
  EXPECT_EQ(hs.held("k", t), ask);
  Decision d;
  int64_t again = 0;
  ASSERT_TRUE(hs.take("k", kBucket, 1, t, 3, d, again));
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.limit, 100);
  EXPECT_EQ(d.remaining, 60 + ask - 1);
  EXPECT_EQ(d.retry_after_ns, kNever);
  EXPECT_EQ(hs.held("k", t), ask - 1);
  // A take the slice cannot cover is forwarded (and may ask for the next slice).
  EXPECT_FALSE(hs.take("k", kBucket, ask, t, 3, d, again));
  // Its time up: what is left is lost (counted as taken at the owner).
  EXPECT_EQ(hs.held("k", t + 100 * kMs), 0);
  EXPECT_FALSE(hs.take("k", kBucket, 1, t + 100 * kMs, 3, d, again));
  EXPECT_EQ(hs.admitted.load(), 1u);
}

TEST(HotSlices, ADeniedSliceGivesNothingAndAWindowsSliceEndsWithIt) {
  HotSlices hs;
  hs.configure(500, 100);
  const LimitSpec window = LimitSpec::window(Kind::kFixedWindow, 90, 1000 * kMs);
  int64_t t = 5'000 * kMs;
  int64_t ask = forward(hs, window, 60, t);
  ASSERT_GT(ask, 0);
  Outcome no;
  no.decision.allowed = false;
  no.decision.remaining = 0;
  hs.granted("k", window, ask, no, t);
  EXPECT_EQ(hs.held("k", t), 0);
  // Asked again later; granted with the window ending in 30 ms: the slice ends then.
  t += 200 * kMs;
  ask = forward(hs, window, 60, t);
  ASSERT_GT(ask, 0);
  hs.granted("k", window, ask, granted(40, 30 * kMs), t);
  EXPECT_EQ(hs.held("k", t + 29 * kMs), ask);
  EXPECT_EQ(hs.held("k", t + 30 * kMs), 0);
}

TEST(HotSlices, NeverSlicedLimitsAndAChangedPolicy) {
  HotSlices hs;
  hs.configure(500, 100);
  int64_t t = 1'000 * kMs;
  LimitSpec off = kBucket;
  off.no_slices = true;
  EXPECT_EQ(forward(hs, off, 100, t), 0);
  LimitSpec shadow = kBucket;
  shadow.shadow = true;
  EXPECT_EQ(forward(hs, shadow, 100, t), 0);
  EXPECT_EQ(forward(hs, LimitSpec::window(Kind::kSlidingLog, 100, 1000 * kMs), 100, t), 0);
  EXPECT_EQ(forward(hs, LimitSpec::concurrency(5, 1000 * kMs), 100, t), 0);
  EXPECT_FALSE(HotSlices::sliceable(off));
  LimitSpec every_hit = LimitSpec::window(Kind::kFixedWindow, 100, 1000 * kMs);
  every_hit.count_denied = true;  // (the gateway door's upstream counters)
  EXPECT_FALSE(HotSlices::sliceable(every_hit));
  EXPECT_TRUE(HotSlices::sliceable(LimitSpec::gcra(5, 10, 1000 * kMs)));
  EXPECT_TRUE(HotSlices::sliceable(LimitSpec::window(Kind::kSlidingWindow, 5, 1000 * kMs)));
  // A slice of the old limit is not spent under a new one.
  const int64_t ask = forward(hs, kBucket, 60, t);
  ASSERT_GT(ask, 0);
  hs.granted("k", kBucket, ask, granted(50), t);
  Decision d;
  int64_t again = 0;
  EXPECT_FALSE(hs.take("k", LimitSpec::token_bucket(10, 10, 1000 * kMs), 1, t, 3, d, again));
  EXPECT_EQ(hs.held("k", t), 0);
  // Off: nothing is watched or asked.
  hs.configure(0, 100);
  EXPECT_EQ(forward(hs, kBucket, 100, t), 0);
}

TEST(HotSlices, ASeaOfColdKeysLeavesRoomForAHotOne) {
  HotSlices hs;
  hs.configure(500, 100);
  int64_t t = 1'000 * kMs;
  Decision d;
  int64_t ask = 0;
  for (int i = 0; i < 20'000; ++i) {  // (more than it watches at once, each forwarded once)
    EXPECT_FALSE(hs.take("cold:" + std::to_string(i), kBucket, 1, t, 3, d, ask));
    EXPECT_EQ(ask, 0);
  }
  t += 200 * kMs;
  EXPECT_GT(forward(hs, kBucket, 60, t), 0);
}

}  // namespace
}  // namespace fg
