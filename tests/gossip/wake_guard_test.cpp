// Standing down after a stall: until a majority is heard from and no newer table exists.
#include "wake_guard.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(WakeGuard, RegularTicksNeverStandDown) {
  WakeGuard g;
  for (int64_t t = 1; t < 1000; ++t) {
    EXPECT_FALSE(g.on_tick(t * 10 * kMs));
    EXPECT_FALSE(g.standing_down(3, 5));
  }
}

TEST(WakeGuard, AStallStandsDownUntilAMajorityIsHeard) {
  WakeGuard g;
  g.on_tick(10 * kMs);
  EXPECT_TRUE(g.on_tick(6000 * kMs));  // paused for six seconds
  EXPECT_TRUE(g.standing_down(3, 5));
  g.on_heard("b", 3);
  EXPECT_TRUE(g.standing_down(3, 5));  // self + 1 of 5
  g.on_heard("b", 3);                  // the same member twice is still one
  EXPECT_TRUE(g.standing_down(3, 5));
  g.on_heard("c", 3);
  EXPECT_FALSE(g.standing_down(3, 5));  // self + 2 of 5
  EXPECT_FALSE(g.standing_down(3, 5));
}

TEST(WakeGuard, ANewerTableKeepsItDownUntilAdopted) {
  WakeGuard g;
  g.on_tick(10 * kMs);
  g.on_tick(2000 * kMs);
  g.on_heard("b", 4);  // the others moved on while we slept
  g.on_heard("c", 4);
  EXPECT_TRUE(g.standing_down(3, 5));
  EXPECT_FALSE(g.standing_down(4, 5));  // table agreement fetched epoch 4
}

TEST(WakeGuard, HeardBeforeTheStallDoesNotCount) {
  WakeGuard g;
  g.on_tick(10 * kMs);
  g.on_heard("b", 3);
  g.on_heard("c", 3);
  g.on_tick(1000 * kMs);
  EXPECT_TRUE(g.standing_down(3, 5));
  EXPECT_FALSE(g.on_tick(1010 * kMs));
  EXPECT_TRUE(g.standing_down(3, 5));
}

TEST(WakeGuard, TwoNodeTablesCannotTellAndServe) {
  WakeGuard g;
  g.on_tick(10 * kMs);
  g.on_tick(3000 * kMs);
  EXPECT_FALSE(g.standing_down(2, 2));
}

}  // namespace
}  // namespace fg
