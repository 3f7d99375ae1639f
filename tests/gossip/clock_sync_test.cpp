// A starting node takes the cluster's time (gossip/clock_sync.hpp): the rules alone, then
// nodes on a simulated network whose clocks disagree.
#include "clock_sync.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "membership.hpp"
#include "memory_network.hpp"

namespace fg {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000 * kMs;
constexpr int64_t kT = 1'800'000'000 * kS;  // a wall clock: ns since the Unix epoch

TEST(ClockSync, NeverBegunIsSettled) {
  ClockSync c;
  EXPECT_TRUE(c.settled());
  EXPECT_FALSE(c.decide(5 * kS, {"b"}));
}

TEST(ClockSync, ANodeWithNoSeedButItselfIsSettledAtOnce) {
  ClockSync c;
  c.begin("a", 0, true);
  EXPECT_TRUE(c.settled());
}

TEST(ClockSync, ASettledPeersRoundTripGivesItsOffsetAtOnce) {
  ClockSync c;
  c.begin("a", kT, false);
  EXPECT_FALSE(c.decide(kT, {"b", "c"}));
  // Sent at T by our clock, answered at T - 34.996 s by b's, back at T + 8 ms: b's clock is
  // 35 s behind ours (the midpoint of the trip is T + 4 ms).
  c.sample("b", kT - 35 * kS + 4 * kMs, kT, kT + 8 * kMs, true);
  const auto d = c.decide(kT + 8 * kMs, {"b", "c"});
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, -35 * kS);
  EXPECT_TRUE(c.settled());
  EXPECT_EQ(c.taken_ns(), -35 * kS);
  EXPECT_FALSE(c.decide(kT + 9 * kMs, {"b", "c"}));  // once
}

TEST(ClockSync, AnOffsetWithinTheToleranceMovesNothing) {
  ClockSync c;
  c.begin("a", kT, false);
  c.sample("b", kT + 31 * kMs, kT, kT + 2 * kMs, true);  // 30 ms apart: noise
  EXPECT_EQ(c.decide(kT + 2 * kMs, {"b"}), std::optional<int64_t>(0));
  EXPECT_TRUE(c.settled());
}

// Nodes on one clock (one process: tests) across a slow, lopsided trip — 280 ms there, 20 ms
// back: the offset measured, 130 ms, is within the trip's own error. Nothing moves.
TEST(ClockSync, OneClockNeverMovesHoweverLopsidedTheTrip) {
  ClockSync c;
  c.begin("a", kT, false);
  c.sample("b", kT + 280 * kMs, kT, kT + 300 * kMs, true);
  EXPECT_FALSE(c.decide(kT + 300 * kMs, {"b", "c"}));
  EXPECT_EQ(c.decide(kT + kS, {"b", "c"}), std::optional<int64_t>(0));
}

TEST(ClockSync, ALongRoundTripWaitsForABetterOneOrTheEnd) {
  ClockSync c;
  c.begin("a", kT, false);
  c.sample("b", kT + 10 * kS + 200 * kMs, kT, kT + 400 * kMs, true);  // a 400 ms trip: ±200 ms
  EXPECT_FALSE(c.decide(kT + 400 * kMs, {"b", "c"}));
  c.sample("c", kT + 10 * kS + 505 * kMs, kT + 500 * kMs, kT + 510 * kMs, true);
  const auto d = c.decide(kT + 510 * kMs, {"b", "c"});
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, 10 * kS);  // c's, the tight one
  ClockSync e;
  e.begin("a", kT, false);
  e.sample("b", kT + 10 * kS + 200 * kMs, kT, kT + 400 * kMs, true);
  EXPECT_FALSE(e.decide(kT + 999 * kMs, {"b", "c"}));                         // c may answer better
  EXPECT_EQ(e.decide(kT + kS, {"b", "c"}), std::optional<int64_t>(10 * kS));  // the wait is over
  ClockSync f;
  f.begin("a", kT, false);
  f.sample("b", kT + 10 * kS + 200 * kMs, kT, kT + 400 * kMs, true);
  EXPECT_EQ(f.decide(kT + 400 * kMs, {"b"}), std::optional<int64_t>(10 * kS));  // nobody else
}

TEST(ClockSync, WithNobodySettledTheMedianOfEveryClockOnceAllAnswered) {
  ClockSync c;
  c.begin("c", kT, false);
  // c is 30 s ahead of a, b, d and e.
  for (const char* id : {"a", "b", "d"})
    c.sample(id, kT + 1 * kMs - 30 * kS, kT, kT + 2 * kMs, false);
  EXPECT_FALSE(c.decide(kT + 2 * kMs, {"a", "b", "d", "e"}));  // e may be settled: wait for it
  c.sample("e", kT + 1 * kMs - 30 * kS, kT, kT + 2 * kMs, false);
  const auto d = c.decide(kT + 2 * kMs, {"a", "b", "d", "e"});
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, -30 * kS);
}

TEST(ClockSync, TwoNodesStartingTogetherBothTakeTheLowerIdsClock) {
  ClockSync a, b;
  a.begin("a", kT, false);
  b.begin("b", kT, false);
  // b's clock is 20 s ahead of a's.
  a.sample("b", kT + 20 * kS + 1 * kMs, kT, kT + 2 * kMs, false);
  b.sample("a", kT - 20 * kS + 1 * kMs, kT, kT + 2 * kMs, false);
  EXPECT_EQ(a.decide(kT + 2 * kMs, {"b"}), std::optional<int64_t>(0));
  EXPECT_EQ(b.decide(kT + 2 * kMs, {"a"}), std::optional<int64_t>(-20 * kS));
}

TEST(ClockSync, HavingHeardNobodyItKeepsItsOwnClockWhenTheWaitEnds) {
  ClockSync c;
  c.begin("a", kT, false);
  EXPECT_FALSE(c.decide(kT + kS - 1, {}));
  EXPECT_EQ(c.decide(kT + kS, {}), std::optional<int64_t>(0));
}

// Nodes on a simulated network, each with its own clock (the shared time plus an offset it
// moves when it settles), as membership runs them.
class Clocks {
 public:
  explicit Clocks(uint64_t seed = 1) : net_(seed) {}
  size_t add(int64_t offset_ns, const std::vector<size_t>& seeds) {
    const size_t i = nodes_.size();
    offset_.push_back(offset_ns);
    moved_.push_back(0);
    nodes_.push_back(std::make_unique<Membership>(
        MembershipConfig{}, "node-" + std::to_string(i), addr(i), "127.0.0.1:1",
        net_.attach(addr(i),
                    [this, i](const std::string& from, const std::string& b) {
                      nodes_[i]->receive(from, b, clock(i));
                    }),
        i + 1));
    nodes_[i]->on_time_settled([this, i](int64_t d) {
      offset_[i] += d;
      moved_[i] += d;
    });
    std::vector<std::string> s;
    for (size_t j : seeds) s.push_back(addr(j));
    nodes_[i]->join(s, clock(i));
    return i;
  }
  void run_ms(int64_t ms) {
    for (const int64_t end = now_ + ms * kMs; now_ < end;) {
      now_ += 5 * kMs;
      net_.deliver_until(now_);
      for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->tick(clock(i));
    }
  }
  int64_t clock(size_t i) const { return kT + now_ + offset_[i]; }
  int64_t offset(size_t i) const { return offset_[i]; }
  int64_t moved(size_t i) const { return moved_[i]; }
  Membership& node(size_t i) { return *nodes_[i]; }

 private:
  static std::string addr(size_t i) { return "10.0.0." + std::to_string(i + 1) + ":7946"; }
  MemoryNetwork net_;
  int64_t now_ = 0;
  std::vector<int64_t> offset_, moved_;
  std::vector<std::unique_ptr<Membership>> nodes_;
};

// The case it is for: a node restarted after its machine's wall clock was stepped joins a
// cluster whose clocks slewed on; it takes their time before it serves anything.
TEST(ClockSync, ANodeRestartedOnASteppedClockTakesTheClustersTime) {
  for (int64_t step : {35 * kS, -21 * kS, 5 * kS}) {
    Clocks c;
    c.add(0, {0});
    c.add(0, {0});
    c.add(0, {0});
    c.run_ms(2000);
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(c.node(i).time_settled()) << i;
    const size_t late = c.add(step, {1, 2});
    EXPECT_FALSE(c.node(late).time_settled());
    c.run_ms(20);  // one round trip to a seed
    EXPECT_TRUE(c.node(late).time_settled());
    // Within half a step of this harness's 5 ms clock: the trip's asymmetry at most.
    EXPECT_LE(std::llabs(c.offset(late)), 3 * kMs) << step;
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(c.moved(i), 0) << i;
  }
}

// A cluster started together with one clock 30 s off: the others are the majority, and the
// odd one moves to them (whatever the order they heard each other in).
TEST(ClockSync, ANewClusterTakesTheMajoritysTime) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Clocks c(seed);
    c.add(0, {1});
    c.add(0, {0});
    c.add(0, {0});
    c.add(30 * kS, {0, 1});
    c.add(0, {1});
    c.run_ms(3000);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_TRUE(c.node(i).time_settled()) << "seed " << seed << " node " << i;
      EXPECT_LE(std::llabs(c.offset(i)), 60 * kMs) << "seed " << seed << " node " << i;
    }
  }
}

}  // namespace
}  // namespace fg
