// Token bucket with a frozen clock: burst, refill, cost, cost > capacity, overflow.
#include "token_bucket.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

// "subscriptions: 5 per second with a burst of 10"
TEST(TokenBucket, BurstThenRefill) {
  TokenBucketState st;
  const LimitSpec spec = LimitSpec::token_bucket(10, 5, kS);
  for (int i = 0; i < 10; ++i) {
    Decision d = token_bucket_take(st, spec, 1, kT0, false);
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.remaining, 9 - i);
    EXPECT_EQ(d.limit, 10);
  }
  Decision d = token_bucket_take(st, spec, 1, kT0, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ns, 200 * kMs);
  EXPECT_EQ(d.reset_after_ns, 2 * kS);
  EXPECT_FALSE(token_bucket_take(st, spec, 1, kT0 + 199 * kMs, false).allowed);
  EXPECT_TRUE(token_bucket_take(st, spec, 1, kT0 + 200 * kMs, false).allowed);
  EXPECT_FALSE(token_bucket_take(st, spec, 1, kT0 + 200 * kMs, false).allowed);
  // After two idle seconds the bucket is full again and the state is idle.
  EXPECT_TRUE(token_bucket_idle(st, kT0 + 2200 * kMs));
  EXPECT_EQ(token_bucket_take(st, spec, 1, kT0 + 2200 * kMs, true).remaining, 10);
}

// "WebSocket messages: 120 per minute"
TEST(TokenBucket, FractionalRefillIsExact) {
  TokenBucketState st;
  const LimitSpec spec = LimitSpec::token_bucket(120, 120, 60 * kS);
  for (int i = 0; i < 120; ++i) ASSERT_TRUE(token_bucket_take(st, spec, 1, kT0, false).allowed);
  EXPECT_FALSE(token_bucket_take(st, spec, 1, kT0 + 499 * kMs, false).allowed);
  EXPECT_TRUE(token_bucket_take(st, spec, 1, kT0 + 500 * kMs, false).allowed);
}

TEST(TokenBucket, CostConsumesSeveralTokens) {
  TokenBucketState st;
  const LimitSpec spec = LimitSpec::token_bucket(10, 10, kS);
  EXPECT_TRUE(token_bucket_take(st, spec, 7, kT0, false).allowed);
  Decision d = token_bucket_take(st, spec, 4, kT0, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 3);
  EXPECT_EQ(d.retry_after_ns, 100 * kMs);
  EXPECT_TRUE(token_bucket_take(st, spec, 3, kT0, false).allowed);
}

TEST(TokenBucket, CostLargerThanCapacityIsNeverAllowed) {
  TokenBucketState st;
  const LimitSpec spec = LimitSpec::token_bucket(10, 10, kS);
  Decision d = token_bucket_take(st, spec, 11, kT0, false);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, -1);
  EXPECT_EQ(d.remaining, 10);  // nothing was taken
  EXPECT_TRUE(token_bucket_take(st, spec, 10, kT0, false).allowed);
}

TEST(TokenBucket, HugeParametersAreRejectedOrSafe) {
  EXPECT_NE(validate(LimitSpec::token_bucket(0, 1, kS)), nullptr);
  EXPECT_NE(validate(LimitSpec::token_bucket(1, 0, kS)), nullptr);
  EXPECT_NE(validate(LimitSpec::token_bucket(1, 1, 0)), nullptr);
  EXPECT_NE(validate(LimitSpec::token_bucket(-5, 1, kS)), nullptr);
  // capacity / refill * period beyond ~10 years cannot be represented.
  EXPECT_NE(validate(LimitSpec::token_bucket(int64_t{1} << 39, 1, kMaxPeriodNs)), nullptr);
  // The largest accepted values still compute without overflow.
  const LimitSpec big = LimitSpec::token_bucket(kMaxCount, kMaxCount, kMaxPeriodNs);
  ASSERT_EQ(validate(big), nullptr);
  TokenBucketState st;
  Decision d = token_bucket_take(st, big, kMaxCount, kT0, false);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_FALSE(token_bucket_take(st, big, 1, kT0, false).allowed);
}

TEST(TokenBucket, ClockSteppingBackDoesNotMintTokens) {
  TokenBucketState st;
  const LimitSpec spec = LimitSpec::token_bucket(2, 1, kS);
  EXPECT_TRUE(token_bucket_take(st, spec, 2, kT0, false).allowed);
  EXPECT_FALSE(token_bucket_take(st, spec, 1, kT0 - 10 * kS, false).allowed);
}

}  // namespace
}  // namespace fg
