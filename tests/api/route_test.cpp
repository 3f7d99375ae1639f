// The route step, case by case: every way a keyed request can go, from a hand-made snapshot.
#include "route.hpp"

#include <gtest/gtest.h>

#include "errors.hpp"
#include "flight.hpp"

namespace fg {
namespace {

using A = RouteDecision::Action;

// Three nodes; slot 1 is ours (served), 2 is n2's, 3 is n3's (dead), 4 is ours but not served,
// 5 has no owner.
Routing snapshot() {
  Routing r;
  r.epoch = 3;
  for (int i = 0; i < 3; ++i) {
    RouteNode n;
    n.id = "n" + std::to_string(i + 1);
    n.self = i == 0;
    n.in_table = true;
    r.nodes.push_back(n);
  }
  r.nodes[2].state = MemberState::kDead;
  r.self_index = 0;
  r.owner[1] = 0;
  r.owner[2] = 1;
  r.owner[3] = 2;
  r.owner[4] = 0;
  r.serving.set(1);
  return r;
}

struct Case {
  const char* what;
  uint32_t slot;
  RouteMode mode;
  uint32_t hops;
  A action;
  Code code;
  std::string error;
};

TEST(Route, EveryCase) {
  const Case cases[] = {
      {"ours and served", 1, RouteMode::kForward, 0, A::kServe, Code::kOk, ""},
      {"ours, forwarded to us", 1, RouteMode::kForward, 1, A::kServe, Code::kOk, ""},
      {"another's, plain client", 2, RouteMode::kForward, 0, A::kForward, Code::kOk, ""},
      {"another's, cluster-aware client", 2, RouteMode::kMove, 0, A::kMove, Code::kOk, ""},
      {"another's, one hop already: on once more", 2, RouteMode::kForward, 1, A::kForward,
       Code::kOk, ""},
      {"another's, a forwarded request is never moved", 2, RouteMode::kMove, 1, A::kForward,
       Code::kOk, ""},
      {"another's, hops used up", 2, RouteMode::kForward, kMaxForwardHops, A::kRefuse,
       Code::kTryAgain, err::kSlotMoving},
      {"a dead owner", 3, RouteMode::kForward, 0, A::kUnavailable, Code::kTryAgain,
       err::owner_down("n3")},
      {"a dead owner, cluster-aware client too", 3, RouteMode::kMove, 0, A::kUnavailable,
       Code::kTryAgain, err::owner_down("n3")},
      {"ours in the table, not served by the shards", 4, RouteMode::kForward, 0, A::kRefuse,
       Code::kTryAgain, err::kSlotMoving},
      {"no owner", 5, RouteMode::kForward, 0, A::kUnavailable, Code::kClusterDown,
       err::kClusterDown},
  };
  const Routing rt = snapshot();
  for (const Case& c : cases) {
    const RouteDecision d = route(rt, c.slot, c.mode, c.hops, 0);
    EXPECT_EQ(d.action, c.action) << c.what;
    EXPECT_EQ(d.code, c.code) << c.what;
    EXPECT_EQ(d.error, c.error) << c.what;
    if (c.action == A::kForward || c.action == A::kMove) {
      EXPECT_EQ(d.node, 1) << c.what;
    }
  }
}

TEST(Route, NoQuorumOrAStallStopsEverythingButTheTable) {
  Routing rt = snapshot();
  rt.quorum = false;
  for (uint32_t slot : {1u, 2u, 4u}) {
    const RouteDecision d = route(rt, slot, RouteMode::kForward, 0, 0);
    EXPECT_EQ(d.action, A::kUnavailable);
    EXPECT_EQ(d.error, err::kNoQuorum);
  }
  rt.quorum = true;
  auto pulse = std::make_shared<std::atomic<int64_t>>(1'000'000'000);
  rt.pulse_ns = pulse;
  EXPECT_EQ(route(rt, 1, RouteMode::kForward, 0, 1'000'000'000 + kStallNs - 1).action, A::kServe);
  EXPECT_EQ(route(rt, 1, RouteMode::kForward, 0, 1'000'000'000 + kStallNs).error, err::kNoQuorum);
  rt.epoch = 0;  // no table adopted yet
  EXPECT_EQ(route(rt, 1, RouteMode::kForward, 0, 0).error, err::kClusterDown);
}

TEST(Route, OnlyOwnedSlotsWhoseStateIsArrivingWait) {
  Routing rt = snapshot();
  rt.awaiting.set(4);
  rt.awaiting.set(2);  // (not ours: never waits here)
  EXPECT_TRUE(must_wait(rt, 4));
  EXPECT_FALSE(must_wait(rt, 2));
  EXPECT_FALSE(must_wait(rt, 1));
  rt.serving.set(4);
  EXPECT_FALSE(must_wait(rt, 4));
}

// A slot of ours with no copy of its state reachable (its grace before serving from empty):
// no waiting, the policy's fail mode, else -TRYAGAIN saying why; served once the grace ends.
TEST(Route, OurSlotsWithNoCopyAnswerTheFailModeUntilServed) {
  Routing rt = snapshot();
  rt.lost.set(4);
  EXPECT_FALSE(must_wait(rt, 4));
  const RouteDecision d = route(rt, 4, RouteMode::kForward, 0, 0);
  EXPECT_EQ(d.action, A::kUnavailable);
  EXPECT_EQ(d.code, Code::kTryAgain);
  EXPECT_EQ(d.error, err::kSlotLost);
  rt.lost.reset(4);
  rt.serving.set(4);
  EXPECT_EQ(route(rt, 4, RouteMode::kForward, 0, 0).action, A::kServe);
}

// A flight's forward calls are handed out again after clear(), the same objects, with
// nothing left of the previous flight: a call that failed must not read as answered, a
// request must not be sent twice, an old answer must not be decoded for a new call.
TEST(ForwardCallsReuse, AReusedCallStartsEmpty) {
  ForwardCalls calls;
  ForwardCall& c = calls.emplace_back();
  c.node_id = "n1";
  c.peer_addr = "127.0.0.1:1";
  c.batch().set_hops(1);
  c.batch().add_requests()->set_key("k");
  c.specs.emplace_back();
  c.ok = true;
  c.body = "answer";
  c.decoded = true;
  c.outcomes().add_outcomes()->set_allowed(true);
  EXPECT_EQ(calls.size(), 1u);
  const ForwardCall* first = &c;
  calls.clear();
  EXPECT_TRUE(calls.empty());
  ForwardCall& d = calls.emplace_back();
  EXPECT_EQ(&d, first);  // the same object, with what it allocated
  EXPECT_TRUE(d.node_id.empty());
  EXPECT_TRUE(d.peer_addr.empty());
  EXPECT_EQ(d.batch().hops(), 0u);
  EXPECT_EQ(d.batch().requests_size(), 0);
  EXPECT_TRUE(d.specs.empty());
  EXPECT_FALSE(d.ok);
  EXPECT_TRUE(d.body.empty());
  EXPECT_FALSE(d.decoded);
  EXPECT_EQ(d.outcomes().outcomes_size(), 0);
  size_t n = 0;
  for (const ForwardCall& x : calls) n += &x == first;
  EXPECT_EQ(n, 1u);
}

}  // namespace
}  // namespace fg
