// Table agreement in simulation: every node ends up with the same table, which follows
// crashes, joins and healed partitions.
#include <gtest/gtest.h>

#include "sim_cluster.hpp"

namespace fg {
namespace {

// True when every live node holds the same table, whose members are exactly the live ids.
bool agreed(SimCluster& c) {
  const SlotTable* first = nullptr;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c.alive(i)) continue;
    const SlotTable& t = c.agreement(i).table();
    if (t.epoch() == 0 || t.members() != c.node(i).live_ids()) return false;
    if (first && !(t == *first)) return false;
    first = &t;
  }
  return first != nullptr;
}

TEST(TableAgreement, FiveNodesAgreeOnOneBalancedTable) {
  SimCluster c(5, 11);
  c.run_ms(4000);
  ASSERT_TRUE(agreed(c));
  const SlotTable& t = c.agreement(3).table();
  EXPECT_EQ(t.members().size(), 5u);
  EXPECT_EQ(t.planner(), SimCluster::id(0));  // the lowest id coordinates
  for (uint16_t m = 0; m < 5; ++m)
    EXPECT_NEAR(static_cast<double>(t.slots_of(m)), kSlotCount / 5.0, 1.0);
}

TEST(TableAgreement, ACrashedNodesSlotsMoveAndNothingElse) {
  SimCluster c(5, 12);
  c.run_ms(4000);
  ASSERT_TRUE(agreed(c));
  const SlotTable before = c.agreement(1).table();
  c.crash(2);
  // The first table after the crash gives its slots to their replica, nothing else.
  SlotTable after;
  for (int i = 0; i < 600 && after.epoch() <= before.epoch(); ++i) {
    c.run_ms(10);
    after = c.agreement(1).table();
  }
  ASSERT_EQ(after.epoch(), before.epoch() + 1);
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    if (before.owner_id(s) != SimCluster::id(2)) {
      ASSERT_EQ(after.owner_id(s), before.owner_id(s)) << s;
    } else {
      ASSERT_EQ(after.owner_id(s), before.members()[before.replicas(s)[1]]) << s;
    }
  }
  c.run_ms(3000);  // then an even one
  ASSERT_TRUE(agreed(c));
  EXPECT_TRUE(c.agreement(1).table().balanced());
  EXPECT_EQ(c.agreement(1).table().members().size(), 4u);
}

TEST(TableAgreement, TheCoordinatorCrashingHandsOverToTheNextLowest) {
  SimCluster c(5, 13);
  c.run_ms(4000);
  c.crash(0);
  c.run_ms(6000);
  ASSERT_TRUE(agreed(c));
  EXPECT_EQ(c.agreement(2).table().planner(), SimCluster::id(1));
}

TEST(TableAgreement, AJoinerGetsItsShare) {
  SimCluster c(4, 14);
  c.run_ms(4000);
  ASSERT_TRUE(agreed(c));
  const SlotTable before = c.agreement(0).table();
  const size_t j = c.add();
  c.run_ms(4000);
  ASSERT_TRUE(agreed(c));
  const SlotTable& after = c.agreement(j).table();
  size_t moved = 0;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    if (before.owner_id(s) != after.owner_id(s)) {
      ++moved;
      ASSERT_EQ(after.owner_id(s), SimCluster::id(j));
    }
  }
  EXPECT_NEAR(static_cast<double>(moved), kSlotCount / 5.0, 1.0);
}

TEST(TableAgreement, OnlyTheMajoritySidePlansAndViewsReconcile) {
  SimCluster c(5, 15);
  c.run_ms(4000);
  const uint64_t epoch = c.agreement(0).table().epoch();
  c.partition({0, 1}, {2, 3, 4});
  c.run_ms(8000);
  // The majority planned without the minority; the minority (no quorum) planned nothing.
  EXPECT_EQ(c.agreement(0).table().members().size(), 5u);
  EXPECT_EQ(c.agreement(0).table().epoch(), epoch);
  EXPECT_EQ(c.agreement(3).table().members().size(), 3u);
  c.net().heal();
  c.run_ms(20000);
  ASSERT_TRUE(agreed(c));
  EXPECT_EQ(c.agreement(4).table().members().size(), 5u);
  // The minority came back through a break in membership: its old state is stale.
  EXPECT_GT(c.agreement(4).table().member_since(SimCluster::id(0)), epoch);
  EXPECT_EQ(c.agreement(4).table().member_since(SimCluster::id(3)), 1u);
}

TEST(TableAgreement, AnEvenSplitPlansOnTheSideOfTheLowestId) {
  SimCluster c(4, 16);
  c.run_ms(4000);
  c.partition({0, 1}, {2, 3});
  c.run_ms(8000);
  EXPECT_EQ(c.agreement(0).table().members().size(), 2u);
  EXPECT_EQ(c.agreement(2).table().members().size(), 4u);
}

}  // namespace
}  // namespace fg
