// Both doors give the same answer to the same request: each case runs once over RESP and
// once over the native protocol, against a two-node in-process cluster (the node the client
// talks to, and the owner of half the slots), and the two answers are compared field by
// field — healthy and forwarded, errors, leases and heartbeats, and the fail modes of named,
// pattern-mapped and overridden policies when the quorum is lost, the owner is dead or the
// owner does not answer.
#include <gtest/gtest.h>

#include "errors.hpp"
#include "test_node.hpp"

namespace fg {
namespace {

namespace pb = floodgate::native;
constexpr int64_t kS = 1'000'000'000;

int owner_of(uint32_t s) { return s < 8192 ? 0 : 1; }

// What both doors' answers are reduced to before they are compared.
struct Answer {
  std::string error;          // the text; empty when the request succeeded
  std::string code;           // the error's code word (RESP) or native code name
  std::vector<int64_t> ints;  // decision: allowed, limit, remaining, retry_ms, reset_ms;
                              // acquire: granted, held, limit, retry_ms; else: value
  bool lease = false;         // acquire: a lease was issued
  std::string mode;           // "fail_open" / "fail_closed" when the policy's mode answered
  bool operator==(const Answer& o) const {
    return error == o.error && code == o.code && ints == o.ints && lease == o.lease &&
           mode == o.mode;
  }
};

std::ostream& operator<<(std::ostream& os, const Answer& a) {
  os << "{error='" << a.error << "' code=" << a.code << " ints=[";
  for (auto v : a.ints) os << v << ",";
  return os << "] lease=" << a.lease << " mode=" << a.mode << "}";
}

enum class Shape { kDecision, kAcquire, kValue };

// A RESP reply as an Answer (only the shapes the limiter commands reply with).
Answer from_resp(const std::string& r, Shape shape) {
  Answer a;
  size_t p = 0;
  auto line = [&] {
    const size_t e = r.find("\r\n", p);
    std::string l = r.substr(p, e - p);
    p = e + 2;
    return l;
  };
  const std::string head = line();
  if (head[0] == '-') {
    a.error = head.substr(1);
    a.code = a.error.substr(0, a.error.find(' '));
    return a;
  }
  if (head[0] == ':') {
    a.ints.push_back(std::stoll(head.substr(1)));
    return a;
  }
  EXPECT_EQ(head[0], '*') << r;
  const int n = std::stoi(head.substr(1));
  for (int i = 0; i < n; ++i) {
    const std::string l = line();
    if (l[0] == ':') {
      a.ints.push_back(std::stoll(l.substr(1)));
    } else if (l[0] == '$' && l != "$-1") {
      const std::string bulk = line();
      if (shape == Shape::kAcquire && i == 1) {
        a.lease = true;
      } else {
        a.mode = bulk;
      }
    }
  }
  return a;
}

const char* code_name(int code) {
  switch (code) {
    case pb::ERR:
      return "ERR";
    case pb::WRONGTYPE:
      return "WRONGTYPE";
    case pb::MOVED:
      return "MOVED";
    case pb::TRYAGAIN:
      return "TRYAGAIN";
    case pb::CLUSTERDOWN:
      return "CLUSTERDOWN";
    case pb::NOTREPLICATED:
      return "TRYAGAIN";  // (RESP says TRYAGAIN for it)
    case pb::OOM:
      return "OOM";
    default:
      return "?";
  }
}

Answer from_native(const wire::ResultView& r, Shape shape) {
  Answer a;
  if (r.code != pb::OK) {
    a.error = std::string(r.error);
    a.code = code_name(r.code);
    return a;
  }
  a.mode = std::string(r.unavailable);
  switch (shape) {
    case Shape::kDecision:
      a.ints = {r.allowed ? 1 : 0, r.limit, r.remaining, r.retry_after_ms, r.reset_after_ms};
      break;
    case Shape::kAcquire:
      a.ints = {r.allowed ? 1 : 0, r.value, r.limit, r.retry_after_ms};
      a.lease = r.lease != 0;
      break;
    case Shape::kValue:
      a.ints = {r.value};
      break;
  }
  return a;
}

// One request, written for both doors. In the words and in `native`, @KEY stands for the
// door's own key (each door has keys of its own, in the same slot, so both see the same
// state), @HOLDER for its holder name and @LEASE (native: lease 1) for the last lease it was
// granted.
struct Case {
  std::string what;
  std::vector<std::string> resp;
  wire::RequestView native;
  Shape shape;
  std::string key;  // after the door's prefix; {L} local to the entry node, {R} remote
};

wire::RequestView op(int o) {
  wire::RequestView r;
  r.op = o;
  return r;
}
wire::RequestView named(int o, const char* policy) {
  wire::RequestView r = op(o);
  r.policy = policy;
  return r;
}
wire::RequestView inline_limit(int o, int kind, int64_t a, int64_t b, int64_t period_ms) {
  wire::RequestView r = op(o);
  r.has_limit = true;
  r.kind = kind;
  r.a = a;
  r.b = b;
  r.period_ms = period_ms;
  return r;
}
wire::RequestView with_cost(wire::RequestView r, int64_t cost) {
  r.has_cost = true;
  r.cost = cost;
  return r;
}
wire::RequestView with_holder(wire::RequestView r) {
  r.holder = "@HOLDER";
  return r;
}
wire::RequestView with_ttl(wire::RequestView r, int64_t ttl) {
  r.ttl_ms = ttl;
  return r;
}
// For the last lease the door was granted (@LEASE).
wire::RequestView on_last_lease(wire::RequestView r) {
  r.lease = 1;
  return r;
}
// The native protocol can set `bound` on any request; only an acquire gives it a meaning.
wire::RequestView bound(wire::RequestView r) {
  r.bound = true;
  return r;
}
wire::RequestView everywhere(wire::RequestView r) {
  r.cluster_wide = true;
  return r;
}

class DoorParity : public ::testing::Test {
 protected:
  void SetUp() override {
    local_tag_ = "{" + key_in(0, 8191, "l") + "}";
    remote_tag_ = "{" + key_in(8192, kSlotCount - 1, "r") + "}";
    PolicySet set;
    set.policies["free"] = LimitSpec::window(Kind::kSlidingLog, 3, 60 * kS);
    set.policies["open"] = LimitSpec::window(Kind::kFixedWindow, 2, kS);
    set.policies["open"].on_unavailable = FailMode::kOpen;
    set.policies["closed"] = LimitSpec::token_bucket(5, 1, kS);
    set.policies["closed"].on_unavailable = FailMode::kClosed;
    set.policies["gate"] = LimitSpec::gcra(4, 2, kS);
    set.policies["gate"].on_unavailable = FailMode::kClosed;
    set.policies["conns"] = LimitSpec::concurrency(2, 30 * kS);
    set.policies["conns"].on_unavailable = FailMode::kOpen;
    set.patterns = {{"*:pat:*", "open"}, {"*:pc:*", "conns"}, {"*:pg:*", "gate"}};
    for (const std::string& tag : {local_tag_, remote_tag_}) {
      for (const char* door : {"resp:", "nat:"}) {
        set.overrides[tag + door + "ovr"] = PolicyOverride{"closed", {}};
        set.overrides[tag + door + "x:pat:ovr"] = PolicyOverride{"closed", {}};
      }
    }
    set.sort_patterns();
    entry_.policies.replace(set);
    owner_.policies.replace(set);
  }

  std::string key(const Case& c, const char* door) const {
    std::string k = c.key;
    const size_t l = k.find("{L}");
    if (l != std::string::npos) k.replace(l, 3, local_tag_ + door);
    const size_t r = k.find("{R}");
    if (r != std::string::npos) k.replace(r, 3, remote_tag_ + door);
    return k;
  }

  // Runs `c` through both doors and compares the answers; returns the RESP one.
  Answer both(const Case& c, bool native_forward = true) {
    const std::string rk = key(c, "resp:"), nk = key(c, "nat:");
    std::vector<std::string> words = c.resp;
    for (auto& w : words) {
      if (w == "@KEY") w = rk;
      if (w == "@HOLDER") w = "h-resp";
      if (w == "@LEASE") w = resp_lease_;
    }
    const std::string reply = resp_.cmd(words);
    Answer r = from_resp(reply, c.shape);
    if (c.shape == Shape::kAcquire && r.lease) {
      const size_t at = reply.find("$16\r\n");
      resp_lease_ = reply.substr(at + 5, 16);
    }
    wire::RequestView q = c.native;
    q.key = c.key.empty() ? std::string_view() : std::string_view(nk);
    if (q.holder == "@HOLDER") q.holder = "h-nat";
    if (q.lease == 1) q.lease = native_lease_;
    q.forward = native_forward;
    const wire::ResultView res = native_.one(q);
    Answer n = from_native(res, c.shape);
    if (c.shape == Shape::kAcquire && res.lease) native_lease_ = res.lease;
    EXPECT_EQ(r, n) << c.what << "\n  RESP: " << reply;
    return r;
  }

  void run(const std::vector<Case>& cases) {
    for (const Case& c : cases) both(c);
  }

  TwoNodes nodes_{owner_of};
  MemoryForwarder& net_ = nodes_.net;
  TestNode& entry_ = nodes_.n1;  // the node the clients talk to
  TestNode& owner_ = nodes_.n2;  // the owner of the {R} keys
  RespConn resp_{entry_};
  NativeConn native_{entry_};
  std::string local_tag_, remote_tag_;
  std::string resp_lease_;
  uint64_t native_lease_ = 0;
};

// Rate limits and their errors, on a key this node serves and on one it forwards.
std::vector<Case> rate_cases(const std::string& where) {
  const std::string k = where;
  return {
      {"named policy",
       {"FG.TAKE", "@KEY", "free"},
       named(pb::TAKE, "free"),
       Shape::kDecision,
       k + "named"},
      {"named policy again",
       {"FG.TAKE", "@KEY", "free"},
       named(pb::TAKE, "free"),
       Shape::kDecision,
       k + "named"},
      {"peek", {"FG.PEEK", "@KEY", "free"}, named(pb::PEEK, "free"), Shape::kDecision, k + "named"},
      {"cost 2, denied",
       {"FG.TAKE", "@KEY", "free", "COST", "2"},
       with_cost(named(pb::TAKE, "free"), 2),
       Shape::kDecision,
       k + "named"},
      {"key pattern", {"FG.TAKE", "@KEY"}, op(pb::TAKE), Shape::kDecision, k + "x:pat:1"},
      {"override wins over the named policy",
       {"FG.TAKE", "@KEY", "free"},
       named(pb::TAKE, "free"),
       Shape::kDecision,
       k + "ovr"},
      {"override wins over the pattern",
       {"FG.TAKE", "@KEY"},
       op(pb::TAKE),
       Shape::kDecision,
       k + "x:pat:ovr"},
      {"inline token bucket",
       {"FG.TAKE", "@KEY", "token_bucket", "10", "5", "1000", "COST", "4"},
       with_cost(inline_limit(pb::TAKE, pb::TOKEN_BUCKET, 10, 5, 1000), 4),
       Shape::kDecision,
       k + "tb"},
      {"adjust into debt",
       {"FG.ADJUST", "@KEY", "token_bucket", "10", "5", "1000", "12"},
       with_cost(inline_limit(pb::ADJUST, pb::TOKEN_BUCKET, 10, 5, 1000), 12),
       Shape::kDecision,
       k + "adj"},
      {"adjust refunds",
       {"FG.ADJUST", "@KEY", "token_bucket", "10", "5", "1000", "-7"},
       with_cost(inline_limit(pb::ADJUST, pb::TOKEN_BUCKET, 10, 5, 1000), -7),
       Shape::kDecision,
       k + "adj"},
      {"adjust, named policy",
       {"FG.ADJUST", "@KEY", "free", "3"},
       with_cost(named(pb::ADJUST, "free"), 3),
       Shape::kDecision,
       k + "named"},
      {"inline gcra",
       {"FG.TAKE", "@KEY", "gcra", "5", "10", "60000"},
       inline_limit(pb::TAKE, pb::GCRA, 5, 10, 60000),
       Shape::kDecision,
       k + "gcra"},
      {"inline fixed window",
       {"FG.TAKE", "@KEY", "fixed_window", "3", "1000"},
       inline_limit(pb::TAKE, pb::FIXED_WINDOW, 3, 0, 1000),
       Shape::kDecision,
       k + "fw"},
      {"inline sliding log",
       {"FG.TAKE", "@KEY", "sliding_log", "3", "1000"},
       inline_limit(pb::TAKE, pb::SLIDING_LOG, 3, 0, 1000),
       Shape::kDecision,
       k + "sl"},
      {"inline sliding window",
       {"FG.TAKE", "@KEY", "sliding_window", "3", "1000"},
       inline_limit(pb::TAKE, pb::SLIDING_WINDOW, 3, 0, 1000),
       Shape::kDecision,
       k + "sw"},
      {"a bound flag on a take",
       {"FG.TAKE", "@KEY", "gcra", "5", "10", "60000"},
       bound(inline_limit(pb::TAKE, pb::GCRA, 5, 10, 60000)),
       Shape::kDecision,
       k + "gcra"},
      {"evaluate only",
       {"FG.TAKE", "@KEY", "sliding_window", "3", "1000", "COST", "0"},
       with_cost(inline_limit(pb::TAKE, pb::SLIDING_WINDOW, 3, 0, 1000), 0),
       Shape::kDecision,
       k + "sw"},
      {"unknown policy",
       {"FG.TAKE", "@KEY", "nope"},
       named(pb::TAKE, "nope"),
       Shape::kDecision,
       k + "e1"},
      {"no policy applies", {"FG.TAKE", "@KEY"}, op(pb::TAKE), Shape::kDecision, k + "e2"},
      {"bad parameters",
       {"FG.TAKE", "@KEY", "token_bucket", "0", "1", "1000"},
       inline_limit(pb::TAKE, pb::TOKEN_BUCKET, 0, 1, 1000),
       Shape::kDecision,
       k + "e3"},
      {"log too long",
       {"FG.TAKE", "@KEY", "sliding_log", "100001", "1000"},
       inline_limit(pb::TAKE, pb::SLIDING_LOG, 100001, 0, 1000),
       Shape::kDecision,
       k + "e4"},
      {"a concurrency policy taken",
       {"FG.TAKE", "@KEY", "conns"},
       named(pb::TAKE, "conns"),
       Shape::kDecision,
       k + "e5"},
      {"negative cost",
       {"FG.TAKE", "@KEY", "free", "COST", "-1"},
       with_cost(named(pb::TAKE, "free"), -1),
       Shape::kDecision,
       k + "e6"},
      {"another kind",
       {"FG.TAKE", "@KEY", "fixed_window", "3", "1000"},
       inline_limit(pb::TAKE, pb::FIXED_WINDOW, 3, 0, 1000),
       Shape::kDecision,
       k + "named"},
      {"reset", {"FG.RESET", "@KEY"}, op(pb::RESET), Shape::kValue, k + "named"},
      {"reset again", {"FG.RESET", "@KEY"}, op(pb::RESET), Shape::kValue, k + "named"},
      {"after the reset",
       {"FG.TAKE", "@KEY", "fixed_window", "3", "1000"},
       inline_limit(pb::TAKE, pb::FIXED_WINDOW, 3, 0, 1000),
       Shape::kDecision,
       k + "named"},
  };
}

std::vector<Case> lease_cases(const std::string& where) {
  const std::string k = where;
  return {
      {"acquire, named",
       {"FG.ACQUIRE", "@KEY", "conns", "HOLDER", "@HOLDER"},
       with_holder(named(pb::ACQUIRE, "conns")),
       Shape::kAcquire,
       k + "c"},
      {"acquire, pattern",
       {"FG.ACQUIRE", "@KEY", "HOLDER", "@HOLDER"},
       with_holder(op(pb::ACQUIRE)),
       Shape::kAcquire,
       k + "x:pc:1"},
      {"acquire, inline",
       {"FG.ACQUIRE", "@KEY", "2", "30000", "HOLDER", "@HOLDER"},
       with_holder(inline_limit(pb::ACQUIRE, pb::CONCURRENCY, 2, 0, 30000)),
       Shape::kAcquire,
       k + "c"},
      {"acquire, full",
       {"FG.ACQUIRE", "@KEY", "conns"},
       named(pb::ACQUIRE, "conns"),
       Shape::kAcquire,
       k + "c"},
      {"count", {"FG.COUNT", "@KEY"}, op(pb::COUNT), Shape::kValue, k + "c"},
      {"renew",
       {"FG.RENEW", "@KEY", "@LEASE", "30000"},
       on_last_lease(with_ttl(op(pb::RENEW), 30000)),
       Shape::kValue,
       k + "c"},
      {"renew, ttl 0",
       {"FG.RENEW", "@KEY", "@LEASE", "0"},
       on_last_lease(op(pb::RENEW)),
       Shape::kValue,
       k + "c"},
      {"release",
       {"FG.RELEASE", "@KEY", "@LEASE"},
       on_last_lease(op(pb::RELEASE)),
       Shape::kValue,
       k + "c"},
      {"release again",
       {"FG.RELEASE", "@KEY", "@LEASE"},
       on_last_lease(op(pb::RELEASE)),
       Shape::kValue,
       k + "c"},
      {"acquire with a rate policy",
       {"FG.ACQUIRE", "@KEY", "free"},
       named(pb::ACQUIRE, "free"),
       Shape::kAcquire,
       k + "c2"},
      {"acquire, limit 0",
       {"FG.ACQUIRE", "@KEY", "0", "1000"},
       inline_limit(pb::ACQUIRE, pb::CONCURRENCY, 0, 0, 1000),
       Shape::kAcquire,
       k + "c2"},
  };
}

TEST_F(DoorParity, KeysServedHere) {
  run(rate_cases("{L}"));
  run(lease_cases("{L}"));
}

// A take sent with the native `bound` flag is an ordinary take: no holder of the connection's
// is made for the node to renew (a renewal round for nothing, each third of a TTL).
TEST_F(DoorParity, ABoundFlagBindsOnlyAnAcquire) {
  run({rate_cases("{L}")[0]});
  ASSERT_TRUE(entry_.bound().due(1).empty());
  wire::RequestView q = bound(inline_limit(pb::TAKE, pb::GCRA, 5, 10, 60000));
  const std::string k = key({"", {}, {}, Shape::kDecision, "{L}bound"}, "nat:");
  q.key = k;
  EXPECT_EQ(native_.one(q).code, pb::OK);
  q = bound(inline_limit(pb::TAKE, pb::FIXED_WINDOW, 3, 0, 1000));
  EXPECT_EQ(native_.one(q).code, pb::OK);
  entry_.bound().due(1);  // a holder just bound is fresh; a TTL later it would be due
  EXPECT_TRUE(entry_.bound().due(int64_t{1} << 50).empty());
}

TEST_F(DoorParity, KeysForwardedToTheirOwner) {
  run(rate_cases("{R}"));
  run(lease_cases("{R}"));
  // Everything that passed the entry's checks went to the owner and was answered there.
  EXPECT_GT(entry_.svc.counters.forwarded.load(), 40u);
  EXPECT_EQ(owner_.svc.counters.forwards_served.load(), entry_.svc.counters.forwarded.load());
  EXPECT_EQ(entry_.svc.counters.forward_failures.load(), 0u);
}

TEST_F(DoorParity, HeartbeatsAndReleasesCountEveryNode) {
  const std::vector<Case> cases = {
      {"lease here",
       {"FG.ACQUIRE", "@KEY", "5", "30000", "HOLDER", "@HOLDER"},
       with_holder(inline_limit(pb::ACQUIRE, pb::CONCURRENCY, 5, 0, 30000)),
       Shape::kAcquire,
       "{L}h"},
      {"lease there",
       {"FG.ACQUIRE", "@KEY", "5", "30000", "HOLDER", "@HOLDER"},
       with_holder(inline_limit(pb::ACQUIRE, pb::CONCURRENCY, 5, 0, 30000)),
       Shape::kAcquire,
       "{R}h"},
      {"another there",
       {"FG.ACQUIRE", "@KEY", "5", "30000", "HOLDER", "@HOLDER"},
       with_holder(inline_limit(pb::ACQUIRE, pb::CONCURRENCY, 5, 0, 30000)),
       Shape::kAcquire,
       "{R}h"},
      {"heartbeat",
       {"FG.HEARTBEAT", "@HOLDER", "30000"},
       everywhere(with_holder(with_ttl(op(pb::HEARTBEAT), 30000))),
       Shape::kValue,
       ""},
      {"heartbeat, ttl 0",
       {"FG.HEARTBEAT", "@HOLDER", "0"},
       everywhere(with_holder(op(pb::HEARTBEAT))),
       Shape::kValue,
       ""},
      {"release all",
       {"FG.RELEASEALL", "@HOLDER"},
       everywhere(with_holder(op(pb::RELEASE_ALL))),
       Shape::kValue,
       ""},
  };
  for (const Case& c : cases) both(c);
  EXPECT_EQ(both(cases[3]).ints, std::vector<int64_t>{0});  // all released, everywhere
}

// No quorum at the node the client asks: every policy's on_unavailable answers, for keys it
// names, keys a pattern maps and keys an override sets; without one, the error.
TEST_F(DoorParity, FailModesWithoutAQuorum) {
  auto down = make_routing(0, 2, owner_of);
  down->quorum = false;
  entry_.publish(down);
  for (const char* where : {"{L}", "{R}"}) {
    const std::string k = where;
    const std::vector<Case> cases = {
        {"named, fail_open",
         {"FG.TAKE", "@KEY", "open"},
         named(pb::TAKE, "open"),
         Shape::kDecision,
         k + "a"},
        {"pattern, fail_open", {"FG.TAKE", "@KEY"}, op(pb::TAKE), Shape::kDecision, k + "x:pat:2"},
        {"override, fail_closed",
         {"FG.TAKE", "@KEY"},
         op(pb::TAKE),
         Shape::kDecision,
         k + "x:pat:ovr"},
        {"named, gcra fail_closed",
         {"FG.TAKE", "@KEY", "gate"},
         named(pb::TAKE, "gate"),
         Shape::kDecision,
         k + "g"},
        {"pattern, peek", {"FG.PEEK", "@KEY"}, op(pb::PEEK), Shape::kDecision, k + "x:pg:1"},
        {"named without a mode",
         {"FG.TAKE", "@KEY", "free"},
         named(pb::TAKE, "free"),
         Shape::kDecision,
         k + "b"},
        {"inline",
         {"FG.TAKE", "@KEY", "fixed_window", "3", "1000"},
         inline_limit(pb::TAKE, pb::FIXED_WINDOW, 3, 0, 1000),
         Shape::kDecision,
         k + "c"},
        {"acquire, pattern fail_open",
         {"FG.ACQUIRE", "@KEY", "HOLDER", "@HOLDER"},
         with_holder(op(pb::ACQUIRE)),
         Shape::kAcquire,
         k + "x:pc:2"},
        {"count", {"FG.COUNT", "@KEY"}, op(pb::COUNT), Shape::kValue, k + "d"},
    };
    for (const Case& c : cases) {
      const Answer a = both(c);
      if (c.what.find("fail_open") != std::string::npos) {
        EXPECT_EQ(a.mode, "fail_open") << c.what;
      }
      if (c.what.find("fail_closed") != std::string::npos) {
        EXPECT_EQ(a.mode, "fail_closed") << c.what;
      }
    }
  }
  EXPECT_GT(entry_.svc.counters.fail_open.load(), 0u);
  EXPECT_GT(entry_.svc.counters.fail_closed.load(), 0u);
}

// The owner is declared dead (its replica not serving yet), or alive but silent.
TEST_F(DoorParity, FailModesWhenTheOwnerIsDeadOrSilent) {
  const std::vector<Case> cases = {
      {"pattern, fail_open", {"FG.TAKE", "@KEY"}, op(pb::TAKE), Shape::kDecision, "{R}x:pat:3"},
      {"override, fail_closed",
       {"FG.TAKE", "@KEY", "free"},
       named(pb::TAKE, "free"),
       Shape::kDecision,
       "{R}ovr"},
      {"named without a mode",
       {"FG.TAKE", "@KEY", "free"},
       named(pb::TAKE, "free"),
       Shape::kDecision,
       "{R}f"},
      {"acquire, fail_open",
       {"FG.ACQUIRE", "@KEY", "conns"},
       named(pb::ACQUIRE, "conns"),
       Shape::kAcquire,
       "{R}c"},
      {"reset", {"FG.RESET", "@KEY"}, op(pb::RESET), Shape::kValue, "{R}f"},
      {"served here all the same",
       {"FG.TAKE", "@KEY"},
       op(pb::TAKE),
       Shape::kDecision,
       "{L}x:pat:3"},
  };
  auto dead = make_routing(0, 2, owner_of);
  dead->nodes[1].state = MemberState::kDead;
  entry_.publish(dead);
  for (const Case& c : cases) {
    const Answer a = both(c);
    if (c.what == "named without a mode") {
      EXPECT_EQ(a.error, err::owner_down("n2"));
    }
  }
  entry_.publish(nodes_.healthy());
  net_.cut("127.0.0.1:17002");
  for (const Case& c : cases) {
    const Answer a = both(c);
    if (c.what == "named without a mode") {
      EXPECT_EQ(a.error, err::owner_silent("n2", "unreachable"));
    }
    if (c.what == "pattern, fail_open") {
      EXPECT_EQ(a.mode, "fail_open");
    }
  }
}

// A client that knows the topology is sent to the owner, by either door (the ports differ:
// each names its own protocol's port).
TEST_F(DoorParity, ClientsThatKnowTheTopologyAreSentToTheOwner) {
  RespConn aware(entry_);
  aware.cmd({"CLUSTER", "SLOTS"});
  const std::string k = remote_tag_ + "m";
  const std::string reply = aware.cmd({"FG.TAKE", k, "free"});
  wire::RequestView q = named(pb::TAKE, "free");
  q.key = k;
  const wire::ResultView res = native_.one(q);
  const std::string slot = std::to_string(key_slot(k));
  EXPECT_EQ(reply, "-MOVED " + slot + " 127.0.0.1:7002\r\n");
  EXPECT_EQ(res.code, pb::MOVED);
  EXPECT_EQ(res.slot, key_slot(k));
  EXPECT_EQ(res.node, "n2");
  EXPECT_EQ(res.error, "MOVED " + slot + " 127.0.0.1:8002");
}

}  // namespace
}  // namespace fg
