// Hand-off rules, one at a time, and then whole simulated clusters in which state moves
// with its slots: at no step do two nodes serve one slot, and no admission is lost
// across joins and graceful leaves.
#include "slot_keeper.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <set>

#include "sim_cluster.hpp"

namespace fg {
namespace {

constexpr int64_t kMs = 1'000'000;
const SlotKeeper::CanSend kEveryoneUp = [](const std::string&) { return true; };
const SlotKeeper::CanSend kNobodyUp = [](const std::string&) { return false; };

SlotTable first(std::vector<std::string> members) {
  return SlotTable().plan(std::move(members)).stamped(1, "a");
}

TEST(SlotKeeper, TheFirstTableStartsEverySlotEmpty) {
  SlotKeeper k("a", 3000 * kMs);
  const SlotTable t = first({"a", "b"});
  auto acts = k.on_table(SlotTable(), t, kEveryoneUp, 0);
  EXPECT_EQ(acts.serve_empty.count(), t.slots_of(0));
  EXPECT_EQ(acts.fresh, acts.serve_empty);  // nobody held them: no copy is missing
  EXPECT_TRUE(acts.send.empty());
  EXPECT_EQ(k.held().count(), t.slots_of(0));
  EXPECT_EQ(k.awaiting_count(), 0u);
}

// A cluster node's process may be a member restarted before anyone noticed: even the
// cluster's first table's slots wait (for their replicas' copies) until told nobody has one.
TEST(SlotKeeper, AFirstTableWaitsWhenAskedToAndNobodyHoldingStartsItFresh) {
  SlotKeeper k("a", 3000 * kMs);
  k.set_first_table_awaits(true);
  const SlotTable t = first({"a", "b"});
  auto acts = k.on_table(SlotTable(), t, kEveryoneUp, 0);
  EXPECT_TRUE(acts.serve_empty.none());
  EXPECT_EQ(k.awaiting_count(), t.slots_of(0));
  SlotBits half;
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (t.owner(s) == 0 && s % 2 == 0) half.set(s);
  // A copy of half comes back as a hand-off; nobody holds the rest.
  EXPECT_FALSE(k.on_install(half, 1, t).any());
  acts = k.nobody_holds(~half);
  EXPECT_EQ(acts.serve_empty.count(), t.slots_of(0) - half.count());
  EXPECT_EQ(acts.fresh, acts.serve_empty);
  EXPECT_EQ(k.held().count(), t.slots_of(0));
  EXPECT_EQ(k.awaiting_count(), 0u);
  // Slots not awaited are not served by it.
  EXPECT_TRUE(k.nobody_holds(~SlotBits()).serve_empty.none());
}

TEST(SlotKeeper, AJoinGivesAwayOnlyTheJoinersShareAndTheJoinerWaitsForIt) {
  const SlotTable t1 = first({"a", "b"});
  const SlotTable t2 = t1.plan({"a", "b", "c"}).stamped(2, "a");
  SlotKeeper a("a", 3000 * kMs), c("c", 3000 * kMs);
  a.on_table(SlotTable(), t1, kEveryoneUp, 0);
  auto acts = a.on_table(t1, t2, kEveryoneUp, 0);
  ASSERT_EQ(acts.send.size(), 1u);
  const SlotBits to_c = acts.send.at("c");
  EXPECT_EQ(to_c.count(), t1.slots_of(0) - t2.slots_of(0));
  EXPECT_EQ(a.held().count(), t2.slots_of(0));

  // The joiner never saw an earlier table: it cannot know who held its slots, so it waits.
  auto joined = c.on_table(SlotTable(), t2, kEveryoneUp, 0);
  EXPECT_TRUE(joined.serve_empty.none());
  EXPECT_EQ(c.awaiting_count(), t2.slots_of(2));
  auto got = c.on_install(to_c, 2, t2);
  EXPECT_FALSE(got.any());
  EXPECT_EQ(c.held(), to_c);
  EXPECT_EQ(c.awaiting_count(), t2.slots_of(2) - to_c.count());
}

TEST(SlotKeeper, StateSentUnderANewerTableIsHeldNotBouncedBack) {
  const SlotTable t1 = first({"a", "b"});
  const SlotTable t2 = t1.plan({"b"}).stamped(2, "a");  // a leaves
  SlotKeeper b("b", 3000 * kMs);
  b.on_table(SlotTable(), t1, kEveryoneUp, 0);
  SlotBits from_a;
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (t1.owner_id(s) == "a") from_a.set(s);
  // Arrives before b has adopted t2: under t1 these are a's, but b must keep them.
  auto acts = b.on_install(from_a, 2, t1);
  EXPECT_TRUE(acts.send.empty());
  acts = b.on_table(t1, t2, kEveryoneUp, 0);
  EXPECT_FALSE(acts.any());
  EXPECT_EQ(b.held().count(), kSlotCount);
}

TEST(SlotKeeper, StateForSomeoneElseIsPassedOn) {
  const SlotTable t1 = first({"a", "b", "c"});
  SlotKeeper b("b", 3000 * kMs);
  b.on_table(SlotTable(), t1, kEveryoneUp, 0);
  SlotBits stray;
  stray.set(0);  // a's slot, sent to b under an old table
  auto acts = b.on_install(stray, 1, t1);
  ASSERT_EQ(acts.send.count("a"), 1u);
  EXPECT_TRUE(acts.send.at("a").test(0));
  EXPECT_FALSE(b.held().test(0));
}

TEST(SlotKeeper, AwaitedStateThatNeverComesIsServedEmptyAfterTheTimeout) {
  const SlotTable t1 = first({"a", "b"});
  const SlotTable t2 = t1.plan({"a", "b", "c"}).stamped(2, "a");
  SlotKeeper c("c", 3000 * kMs);
  c.on_table(SlotTable(), t2, kEveryoneUp, 0);
  EXPECT_FALSE(c.on_tick(kEveryoneUp, 2999 * kMs).any());
  auto acts = c.on_tick(kEveryoneUp, 3000 * kMs);
  EXPECT_EQ(acts.serve_empty.count(), t2.slots_of(2));
  EXPECT_EQ(c.held().count(), t2.slots_of(2));
}

TEST(SlotKeeper, ADeadOwnersSlotsAreServedAtOnce) {
  const SlotTable t1 = first({"a", "b", "c"});
  const SlotTable t2 = t1.plan({"a", "b"}).stamped(2, "a");
  SlotKeeper a("a", 3000 * kMs);
  a.on_table(SlotTable(), t1, kEveryoneUp, 0);
  auto acts = a.on_table(
      t1, t2, [](const std::string& id) { return id != "c"; }, 0);
  EXPECT_EQ(a.held().count(), t2.slots_of(0));
  EXPECT_EQ(acts.serve_empty.count(), t2.slots_of(0) - t1.slots_of(0));
  EXPECT_TRUE(acts.fresh.none());  // c held them: their state is lost here, not fresh
  EXPECT_EQ(a.awaiting_count(), 0u);
}

TEST(SlotKeeper, ASourceThatDiesWhileAwaitedStopsTheWait) {
  const SlotTable t1 = first({"a", "b"});
  const SlotTable t2 = t1.plan({"a", "b", "c"}).stamped(2, "a");
  SlotKeeper a("a", 3000 * kMs);
  a.on_table(SlotTable(), t1, kEveryoneUp, 0);
  // a gets nothing new from a join; make it a leave of b instead, b then dies.
  const SlotTable t3 = t1.plan({"a"}).stamped(2, "a");
  a.on_table(t1, t3, kEveryoneUp, 0);
  EXPECT_GT(a.awaiting_count(), 0u);
  auto acts = a.on_tick(kNobodyUp, 10 * kMs);
  EXPECT_EQ(acts.serve_empty.count(), t1.slots_of(1));
  EXPECT_EQ(a.held().count(), kSlotCount);
  (void)t2;
}

// --- whole clusters -------------------------------------------------------------------

// Every node of a SimCluster with a SlotKeeper and, per slot, a count of admissions made
// while it served the slot. State moves between nodes as hand-off messages that take a
// few milliseconds. Every step, each node admits one request on every slot it serves
// (every 16th slot, to keep the test quick).
class HandoffSim {
 public:
  // Gossip takes 0.2-20 ms and loses 2% of datagrams; a hand-off takes 2-25 ms, so state
  // often arrives before its receiver has adopted the table that sent it.
  explicit HandoffSim(size_t n, uint64_t seed = 1) : sim(n, seed), rng(seed) {
    sim.net().set_delay_ns(200'000, 20 * kMs);
    sim.net().set_loss(0.02);
    for (size_t i = 0; i < n; ++i) attach(i);
    sim.on_step = [this] { step(); };
  }

  size_t add() {
    const size_t i = sim.add();
    attach(i);
    return i;
  }

  void leave(size_t i) {
    const SlotTable& t = sim.agreement(i).table();
    std::vector<std::string> rest;
    for (const auto& id : sim.node(i).live_ids())
      if (id != SimCluster::id(i)) rest.push_back(id);
    sim.agreement(i).propose(t.plan(rest).stamped(t.epoch() + 1, SimCluster::id(i)));
    sim.node(i).leave(sim.now());
    leaving.insert(i);
  }

  // Nobody serving or holding anything they should not; returns a description if so.
  std::string check_settled() {
    for (uint32_t s = 0; s < kSlotCount; s += kEvery) {
      size_t holders = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (!sim.alive(i) || leaving.count(i)) continue;
        if (nodes[i].has.test(s)) {
          ++holders;
          if (nodes[i].value[s] != admitted[s]) {
            return "slot " + std::to_string(s) + " at " + SimCluster::id(i) + " counts " +
                   std::to_string(nodes[i].value[s]) + ", admitted " + std::to_string(admitted[s]);
          }
        }
      }
      if (holders != 1) {
        std::string d = "slot " + std::to_string(s) + " held by " + std::to_string(holders);
        for (size_t i = 0; i < nodes.size(); ++i) {
          const SlotTable& t = sim.agreement(i).table();
          d += "; " + SimCluster::id(i) + (sim.alive(i) ? "" : "(down)") +
               (leaving.count(i) ? "(left)" : "") + " e" + std::to_string(t.epoch()) + "/" +
               t.planner() + " owner=" + (t.owner(s) == kNoOwner ? "-" : t.owner_id(s)) +
               " held=" + std::to_string(nodes[i].keeper->held().test(s)) +
               " await=" + std::to_string(nodes[i].keeper->awaiting().test(s)) +
               " has=" + std::to_string(nodes[i].has.test(s));
        }
        return d;
      }
    }
    return "";
  }

  SimCluster sim;
  int double_serves = 0;
  std::set<size_t> leaving;
  static constexpr uint32_t kEvery = 16;

 private:
  struct Node {
    std::unique_ptr<SlotKeeper> keeper;
    SlotBits has;
    std::vector<int64_t> value = std::vector<int64_t>(kSlotCount, 0);
  };
  struct Transfer {
    size_t to;
    SlotBits slots;
    std::vector<int64_t> values;
    uint64_t epoch;
    int64_t at;
  };

  SlotKeeper::CanSend can_send(size_t i) {
    return [this, i](const std::string& id) {
      const auto& o = sim.node(i).others();
      auto it = o.find(id);
      return it != o.end() && (it->second.live() || it->second.state == MemberState::kLeft);
    };
  }

  void attach(size_t i) {
    if (nodes.size() <= i) nodes.resize(i + 1);
    nodes[i].keeper = std::make_unique<SlotKeeper>(SimCluster::id(i), 3000 * kMs);
    sim.agreement(i).on_change([this, i](const SlotTable& before, const SlotTable& after) {
      apply(i, nodes[i].keeper->on_table(before, after, can_send(i), sim.now()));
    });
  }

  void apply(size_t i, const SlotKeeper::Actions& a) {
    Node& n = nodes[i];
    for (uint32_t s = 0; s < kSlotCount; ++s) {
      if (!a.serve_empty.test(s)) continue;
      n.has.set(s);
      n.value[s] = 0;
    }
    for (const auto& [to, slots] : a.send) {
      Transfer t{std::stoul(to.substr(5)), slots, n.value, sim.agreement(i).table().epoch(),
                 sim.now() + static_cast<int64_t>(2 + rng() % 24) * kMs};
      n.has &= ~slots;
      in_flight.push_back(std::move(t));
    }
  }

  void step() {
    // Deliver hand-offs that have arrived (delivering one may send another).
    std::vector<Transfer> due;
    for (auto it = in_flight.begin(); it != in_flight.end();) {
      if (it->at <= sim.now()) {
        due.push_back(std::move(*it));
        it = in_flight.erase(it);
      } else {
        ++it;
      }
    }
    for (Transfer& t : due) {
      Node& n = nodes[t.to];
      for (uint32_t s = 0; s < kSlotCount; ++s) {
        if (!t.slots.test(s)) continue;
        n.has.set(s);
        n.value[s] = t.values[s];
      }
      apply(t.to, n.keeper->on_install(t.slots, t.epoch, sim.agreement(t.to).table()));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (sim.alive(i)) apply(i, nodes[i].keeper->on_tick(can_send(i), sim.now()));
    }
    // Serve: a node serves a slot it owns in its table and holds the state of.
    for (uint32_t s = 0; s < kSlotCount; s += kEvery) {
      int serving = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (!sim.alive(i)) continue;
        const SlotTable& t = sim.agreement(i).table();
        if (t.owner(s) == kNoOwner || t.owner_id(s) != SimCluster::id(i)) continue;
        if (!nodes[i].keeper->held().test(s) || !nodes[i].has.test(s)) continue;
        ++serving;
        ++nodes[i].value[s];
        ++admitted[s];
      }
      if (serving > 1) ++double_serves;
    }
  }

  std::vector<Node> nodes;
  std::deque<Transfer> in_flight;
  std::vector<int64_t> admitted = std::vector<int64_t>(kSlotCount, 0);
  std::mt19937_64 rng;
};

TEST(HandoffSim, JoinsMoveStateWithTheSlotsAndNeverServeASlotTwice) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    HandoffSim h(3, seed);
    h.sim.run_ms(3000);
    EXPECT_EQ(h.check_settled(), "");
    h.add();
    h.sim.run_ms(3000);
    EXPECT_EQ(h.check_settled(), "");
    h.add();
    h.add();
    h.sim.run_ms(4000);
    EXPECT_EQ(h.check_settled(), "");
    EXPECT_EQ(h.double_serves, 0);
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(h.sim.agreement(i).table().members().size(), 6u);
  }
}

TEST(HandoffSim, GracefulLeavesHandEverySlotOverIncludingTheCoordinators) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    HandoffSim h(5, seed);
    h.sim.run_ms(3000);
    ASSERT_EQ(h.check_settled(), "");
    h.leave(2);
    h.sim.run_ms(3000);
    EXPECT_EQ(h.check_settled(), "");
    h.leave(0);  // the coordinator
    h.sim.run_ms(3000);
    EXPECT_EQ(h.check_settled(), "");
    EXPECT_EQ(h.double_serves, 0);
    EXPECT_EQ(h.sim.agreement(1).table().members().size(), 3u);
  }
}

TEST(HandoffSim, ACrashedNodesSlotsAreServedAgainAndOthersKeepTheirState) {
  HandoffSim h(4, 5);
  h.sim.run_ms(3000);
  ASSERT_EQ(h.check_settled(), "");
  h.sim.crash(3);
  h.sim.run_ms(8000);
  EXPECT_EQ(h.double_serves, 0);
  // Every slot is served by exactly one survivor (the crashed node's counts are gone
  // until replication arrives, so only ownership is checked here).
  const SlotTable& t = h.sim.agreement(0).table();
  EXPECT_EQ(t.members().size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(h.sim.agreement(i).table(), t);
}

}  // namespace
}  // namespace fg
