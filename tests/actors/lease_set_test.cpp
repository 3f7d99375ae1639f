// Leases: grant under the limit, renew, release, expiry reclaims, holder renewals.
#include "lease_set.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

// "5 concurrent connections per user"
TEST(LeaseSet, GrantsUpToTheLimit) {
  LeaseSet s;
  for (uint64_t i = 1; i <= 5; ++i) {
    AcquireResult r = s.acquire(5, 30 * kS, "app-1", i, kT0);
    ASSERT_TRUE(r.granted);
    EXPECT_EQ(r.held, static_cast<int64_t>(i));
  }
  AcquireResult r = s.acquire(5, 30 * kS, "app-1", 6, kT0 + 10 * kS);
  EXPECT_FALSE(r.granted);
  EXPECT_EQ(r.held, 5);
  EXPECT_EQ(r.retry_after_ns, 20 * kS);
  EXPECT_TRUE(s.release(3));
  EXPECT_FALSE(s.release(3));
  EXPECT_TRUE(s.acquire(5, 30 * kS, "app-1", 7, kT0 + 10 * kS).granted);
}

TEST(LeaseSet, ExpiryReclaimsPermits) {
  LeaseSet s;
  s.acquire(2, 10 * kS, "a", 1, kT0);
  s.acquire(2, 20 * kS, "b", 2, kT0);
  EXPECT_EQ(s.count(kT0 + 9 * kS), 2);
  EXPECT_EQ(s.count(kT0 + 10 * kS), 1);
  std::vector<std::string> gone;
  s.expire(kT0 + 10 * kS, &gone);
  EXPECT_EQ(gone, std::vector<std::string>{"a"});
  EXPECT_FALSE(s.idle(kT0 + 19 * kS));
  EXPECT_TRUE(s.idle(kT0 + 20 * kS));
}

TEST(LeaseSet, RenewExtendsOnlyLiveLeases) {
  LeaseSet s;
  s.acquire(2, 10 * kS, "a", 1, kT0);
  EXPECT_TRUE(s.renew(1, 10 * kS, kT0 + 9 * kS));
  EXPECT_EQ(s.count(kT0 + 18 * kS), 1);
  EXPECT_FALSE(s.renew(1, 10 * kS, kT0 + 19 * kS));  // expired: too late
  EXPECT_FALSE(s.renew(42, 10 * kS, kT0));           // unknown
}

TEST(LeaseSet, HeartbeatRenewsEveryLeaseOfTheHolder) {
  LeaseSet s;
  s.acquire(10, 10 * kS, "app-1", 1, kT0);
  s.acquire(10, 10 * kS, "app-1", 2, kT0);
  s.acquire(10, 10 * kS, "app-2", 3, kT0);
  EXPECT_EQ(s.renew_holder("app-1", 10 * kS, kT0 + 5 * kS), 2);
  EXPECT_EQ(s.count(kT0 + 12 * kS), 2);  // app-2's lapsed, app-1's live
}

}  // namespace
}  // namespace fg
