// The routing snapshot, built from hand-made inputs: which nodes it lists and in what order,
// where clients reach them, which slots this node serves, and when it may serve at all.
#include "routing_build.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

Member member(const std::string& id, int port, MemberState state = MemberState::kAlive) {
  Member m;
  m.id = id;
  m.addr = "10.0.0.1:" + std::to_string(port + 10000);
  m.resp_addr = "10.0.0.1:" + std::to_string(port);
  m.native_port = port + 1000;
  m.state = state;
  return m;
}

struct Inputs {
  SlotTable table = SlotTable().plan({"a", "b", "c"}).stamped(4, "a");
  std::map<std::string, Member> known = {{"a", member("a", 6380)},
                                         {"b", member("b", 6381)},
                                         {"c", member("c", 6382)},
                                         {"d", member("d", 6383)},
                                         {"e", member("e", 6384, MemberState::kDead)}};
  RoutingInputs in;
  Inputs() {
    in.table = &table;
    in.self = "b";
    in.known = &known;
    in.alive = {"a", "b", "c"};
    for (uint32_t s = 0; s < kSlotCount; ++s)
      if (table.owner_id(s) == "b") in.held.set(s);
  }
};

TEST(RoutingBuild, TableMembersFirstThenOtherLiveNodes) {
  Inputs i;
  const Routing r = build_routing(i.in);
  ASSERT_EQ(r.nodes.size(), 4u);  // a, b, c (the table), then d (alive); e is dead
  EXPECT_EQ(r.nodes[0].id, "a");
  EXPECT_EQ(r.nodes[3].id, "d");
  EXPECT_FALSE(r.nodes[3].in_table);
  EXPECT_EQ(r.self_index, 1);
  EXPECT_TRUE(r.nodes[1].self);
  EXPECT_EQ(r.nodes[2].resp_host, "10.0.0.1");
  EXPECT_EQ(r.nodes[2].resp_port, 6382);
  EXPECT_EQ(r.nodes[2].native_port, 7382);
  EXPECT_EQ(r.nodes[2].peer_addr, "10.0.0.1:16382");
  EXPECT_EQ(r.epoch, 4u);
  EXPECT_EQ(r.ranges.size(), 3u);
  for (uint32_t s = 0; s < kSlotCount; ++s) EXPECT_EQ(r.owner[s], i.table.owner(s));
}

TEST(RoutingBuild, ServesOnlyOwnedSlotsWhoseStateItHolds) {
  Inputs i;
  uint32_t ours = 0, theirs = 0;
  for (uint32_t s = 0; s < kSlotCount; ++s) (i.table.owner_id(s) == "b" ? ours : theirs) = s;
  i.in.held.reset(ours);  // its state is still on its way
  i.in.awaiting.set(ours);
  i.in.held.set(theirs);  // a copy of another's slot is not served
  const Routing r = build_routing(i.in);
  EXPECT_FALSE(r.serving.test(ours));
  EXPECT_TRUE(r.awaiting.test(ours));
  EXPECT_FALSE(r.serving.test(theirs));
  EXPECT_EQ(r.serving.count(), i.table.slots_of(1) - 1);
}

TEST(RoutingBuild, WithoutAMajorityOrWhileStandingDownNothingIsServed) {
  Inputs i;
  EXPECT_TRUE(build_routing(i.in).quorum);
  i.in.alive = {"b"};  // the others dead or only suspected: no majority
  Routing r = build_routing(i.in);
  EXPECT_FALSE(r.quorum);
  EXPECT_TRUE(r.serving.none());
  i.in.alive = {"a", "b"};
  EXPECT_TRUE(build_routing(i.in).quorum);
  i.in.standing_down = true;
  EXPECT_FALSE(build_routing(i.in).quorum);
  // Two members cannot tell a partition from a death: the lower id keeps the quorum (and
  // will take the other's slots), the higher one stops serving.
  Inputs two;
  two.table = SlotTable().plan({"a", "b"}).stamped(2, "a");
  two.in.alive = {"b"};
  two.in.held.reset();
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (two.table.owner_id(s) == "b") two.in.held.set(s);
  r = build_routing(two.in);
  EXPECT_FALSE(r.quorum);
  EXPECT_TRUE(r.serving.none());
  two.in.alive = {"a", "b"};
  r = build_routing(two.in);
  EXPECT_TRUE(r.quorum);
  EXPECT_EQ(r.serving.count(), two.table.slots_of(1));
  Inputs lower;
  lower.table = two.table;
  lower.in.self = "a";
  lower.in.alive = {"a"};
  lower.in.held.reset();
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (lower.table.owner_id(s) == "a") lower.in.held.set(s);
  r = build_routing(lower.in);
  EXPECT_TRUE(r.quorum);
  EXPECT_EQ(r.serving.count(), lower.table.slots_of(0));
}

TEST(RoutingBuild, AMemberNobodyHeardOfIsDeadAndNoTableServesNothing) {
  Inputs i;
  i.known.erase("c");
  Routing r = build_routing(i.in);
  EXPECT_EQ(r.nodes[2].id, "c");
  EXPECT_EQ(r.nodes[2].state, MemberState::kDead);
  SlotTable none;
  i.in.table = &none;
  r = build_routing(i.in);
  EXPECT_EQ(r.epoch, 0u);
  EXPECT_TRUE(r.serving.none());
  EXPECT_TRUE(r.ranges.empty());
  EXPECT_EQ(r.owner[0], kNoOwner);
}

}  // namespace
}  // namespace fg
