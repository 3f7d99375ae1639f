// The slot planner: balance, contiguity, and how little moves on joins and leaves.
#include "slot_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace fg {
namespace {

std::vector<std::string> ids(std::mt19937_64& rng, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back("node-" + std::to_string(rng()));
  return out;
}

double balance(const SlotTable& t) {
  size_t lo = kSlotCount, hi = 0;
  for (uint16_t m = 0; m < t.members().size(); ++m) {
    lo = std::min(lo, t.slots_of(m));
    hi = std::max(hi, t.slots_of(m));
  }
  return static_cast<double>(hi) / static_cast<double>(lo);
}

// Slots whose owner (by id) differs between two tables.
std::vector<uint32_t> moved(const SlotTable& a, const SlotTable& b) {
  std::vector<uint32_t> out;
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (a.owner_id(s) != b.owner_id(s)) out.push_back(s);
  return out;
}

TEST(SlotTable, AFreshClusterGetsEqualContiguousRanges) {
  SlotTable t = SlotTable().plan({"c", "a", "b"});
  EXPECT_EQ(t.epoch(), 1u);
  EXPECT_EQ(t.members(), (std::vector<std::string>{"a", "b", "c"}));
  auto r = t.ranges();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].first, 0u);
  EXPECT_EQ(r[2].last, kSlotCount - 1);
  for (uint16_t m = 0; m < 3; ++m)
    EXPECT_NEAR(static_cast<double>(t.slots_of(m)), kSlotCount / 3.0, 1.0);
}

TEST(SlotTable, BalancedForThreeToTenNodes) {
  std::mt19937_64 rng(1);
  for (size_t n = 3; n <= 10; ++n) {
    SlotTable t = SlotTable().plan(ids(rng, n));
    EXPECT_LE(balance(t), 1.25) << n;
    EXPECT_LE(balance(t), static_cast<double>(kSlotCount / n + 1) / (kSlotCount / n)) << n;
  }
}

TEST(SlotTable, AJoinMovesOnlyTheJoinersShare) {
  std::mt19937_64 rng(2);
  for (size_t n = 3; n <= 10; ++n) {
    auto members = ids(rng, n);
    SlotTable before = SlotTable().plan(members);
    members.push_back("joiner-" + std::to_string(n));
    SlotTable after = before.plan(members);
    const auto m = moved(before, after);
    for (uint32_t s : m) ASSERT_EQ(after.owner_id(s), members.back()) << "slot " << s;
    EXPECT_NEAR(static_cast<double>(m.size()), kSlotCount / (n + 1.0), 1.0) << n;
    EXPECT_LE(balance(after), 1.25);
  }
}

TEST(SlotTable, ALeaveMovesOnlyTheLeaversSlots) {
  std::mt19937_64 rng(3);
  for (size_t n = 4; n <= 10; ++n) {
    auto members = ids(rng, n);
    SlotTable before = SlotTable().plan(members);
    const std::string leaver = members[rng() % n];
    members.erase(std::find(members.begin(), members.end(), leaver));
    // First the failover table: the leaver's slots go to the replica holding their state.
    SlotTable after = before.plan(members);
    for (uint32_t s : moved(before, after)) {
      ASSERT_EQ(before.owner_id(s), leaver) << "slot " << s;
      ASSERT_EQ(after.owner_id(s), before.members()[before.replicas(s)[1]]) << "slot " << s;
    }
    EXPECT_FALSE(after.balanced());
    // Then the next table evens the load out, moving slots between live members only.
    SlotTable even = after.plan(members);
    EXPECT_TRUE(even.balanced());
    EXPECT_LE(balance(even), 1.25);
    EXPECT_LE(moved(after, even).size(), kSlotCount / n + 1);
  }
}

TEST(SlotTable, ChurnKeepsRangesFewAndBalanced) {
  std::mt19937_64 rng(4);
  auto members = ids(rng, 5);
  SlotTable t = SlotTable().plan(members);
  for (int step = 0; step < 40; ++step) {
    if (members.size() > 3 && rng() % 2) {
      members.erase(members.begin() + static_cast<long>(rng() % members.size()));
    } else if (members.size() < 10) {
      members.push_back("n" + std::to_string(step));
    }
    t = t.plan(members);
    if (!t.balanced()) t = t.plan(members);  // a failover table, then the even one
    ASSERT_LE(balance(t), 1.25) << step;
  }
  // Contiguous enough for CLUSTER SLOTS to stay short, unlike per-slot hashing.
  EXPECT_LT(t.ranges().size(), 200u);
}

TEST(SlotTable, ADepartedOwnersSlotsGoToTheirFirstSurvivingReplica) {
  SlotTable t = SlotTable().plan({"a", "b", "c", "d"}, 3);
  // b and c leave at once: b's slots go to d (c, its first replica, is gone too).
  SlotTable after = t.plan({"a", "d"});
  EXPECT_EQ(after.replica_count(), 3u);
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    const std::string& was = t.owner_id(s);
    if (was == "b" || was == "c") {
      EXPECT_EQ(after.owner_id(s), "d") << s;
    } else {
      EXPECT_EQ(after.owner_id(s), was) << s;
    }
  }
  EXPECT_EQ(after.member_since("a"), 1u);
  EXPECT_EQ(after.member_since("b"), 0u);
  EXPECT_EQ(after.plan({"a", "b", "d"}).member_since("b"), 3u);  // back, but with a break
}

TEST(SlotTable, QuorumIsAMajorityOrTheHalfWithTheLowestId) {
  SlotTable t = SlotTable().plan({"a", "b", "c", "d"});
  EXPECT_TRUE(t.quorum({"a", "b", "c"}));
  EXPECT_TRUE(t.quorum({"a", "d"}));
  EXPECT_FALSE(t.quorum({"b", "c"}));
  EXPECT_FALSE(t.quorum({"d", "x", "y"}));  // newcomers do not count
}

TEST(SlotTable, SameInputsSameTable) {
  SlotTable a = SlotTable().plan({"x", "y", "z"}).plan({"x", "y", "z", "w"});
  SlotTable b = SlotTable().plan({"z", "y", "x"}).plan({"w", "z", "x", "y", "x"});
  EXPECT_TRUE(a == b);
}

TEST(SlotTable, ReplicasAreTheNextDistinctMembers) {
  SlotTable t = SlotTable().plan({"a", "b", "c"});
  for (uint32_t s : {0u, 6000u, kSlotCount - 1}) {
    auto r = t.replicas(s);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0], t.owner(s));
    EXPECT_NE(r[1], r[0]);
  }
  // Each member replicates exactly one other member's slots: replica load is even.
  std::vector<size_t> replica_load(3, 0);
  for (uint32_t s = 0; s < kSlotCount; ++s) ++replica_load[t.replicas(s)[1]];
  for (size_t l : replica_load) EXPECT_NEAR(static_cast<double>(l), kSlotCount / 3.0, 1.0);
  EXPECT_EQ(SlotTable().plan({"solo"}).replicas(5).size(), 1u);
}

}  // namespace
}  // namespace fg
