// A Session in cluster mode over a hand-made routing snapshot: which commands run here,
// which are forwarded (and how their replies come back in order), -MOVED, the waits for
// arriving slots, and the CLUSTER commands' replies.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "forward.hpp"
#include "key_slot.hpp"
#include "session.hpp"
#include "wait_sink.hpp"

namespace fg {
namespace {

// Slots 0-5460 are ours and served, 5461-10922 belong to "n2", 10923-16383 are ours but
// their state is still arriving.
std::shared_ptr<Routing> make_routing() {
  auto r = std::make_shared<Routing>();
  r->epoch = 7;
  auto node = [](std::string id, int port, bool self) {
    RouteNode n;
    n.id = std::move(id);
    n.resp_host = "127.0.0.1";
    n.resp_port = port;
    n.peer_addr = "127.0.0.1:" + std::to_string(port + 10000);
    n.self = self;
    n.in_table = true;
    return n;
  };
  r->nodes = {node("n1", 7001, true), node("n2", 7002, false)};
  r->self_index = 0;
  for (uint32_t s = 0; s < kSlots; ++s) r->owner[s] = (s >= 5461 && s <= 10922) ? 1 : 0;
  for (uint32_t s = 0; s <= 5460; ++s) r->serving.set(s);
  for (uint32_t s = 10923; s < kSlots; ++s) r->awaiting.set(s);
  r->ranges = {{0, 5460, 0}, {5461, 10922, 1}, {10923, 16383, 0}};
  return r;
}

// A key whose slot falls in [lo, hi].
std::string key_in(uint32_t lo, uint32_t hi) {
  for (int i = 0;; ++i) {
    std::string k = "k" + std::to_string(i);
    const uint32_t s = key_slot(k);
    if (s >= lo && s <= hi) return k;
  }
}

class ClusterSessionTest : public ::testing::Test {
 protected:
  using Sink = WaitSink;

  void SetUp() override {
    svc_.clock = &clock_;
    svc_.policies = &policies_;
    svc_.clients = &clients_;
    svc_.routing = &hub_;
    ShardPoolConfig pc;
    pc.shards = 2;
    pc.cluster = true;
    pool_ = std::make_unique<ShardPool>(sys_, pc, &clock_);
    svc_.shards = pool_.get();
    // The shards serve what the routing says we serve.
    auto job = std::make_shared<SlotJob>();
    for (uint32_t s = 0; s <= 5460; ++s) job->slots.set(s);
    auto sink = std::make_shared<Sink>();
    job->done = [sink](SlotJob&) { sink->batch_done(); };
    pool_->install(job, {});
    wait(*sink);
    hub_.publish(make_routing());
    session_ = std::make_unique<Session>(svc_, clients_.add("127.0.0.1:1", "127.0.0.1:2", 0));
  }

  static void wait(Sink& s) { ASSERT_TRUE(s.wait()); }

  // Runs one process() over `input`; forwards are answered by `answer` (or fail) before
  // the batch completes. Returns the output.
  std::string run(const std::string& input, ProcessResult* result = nullptr,
                  const std::function<void(ForwardCall&)>& answer = nullptr) {
    auto batch = std::make_shared<Batch>();
    auto sink = std::make_shared<Sink>();
    forwards_.clear();
    ProcessResult r = session_->process(input.data(), input.size(), *batch, &forwards_);
    if (result) *result = r;
    if (r.submitted) {
      batch->sink = sink;
      pool_->submit(batch, static_cast<int>(forwards_.size()));
      for (ForwardCall& c : forwards_) {
        if (answer) answer(c);
        batch->finish_one();
      }
      wait(*sink);
      session_->complete(*batch, &forwards_);
    }
    std::string out;
    out.swap(session_->output());
    return out;
  }

  static std::string resp(std::vector<std::string> words) {
    std::string in = "*" + std::to_string(words.size()) + "\r\n";
    for (auto& w : words) in += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    return in;
  }

  ManualClock clock_{1'000'000'000'000};
  PolicyRegistry policies_;
  ClientRegistry clients_{100};
  RoutingHub hub_;
  Services svc_;
  caf::actor_system_config cfg_;
  caf::actor_system sys_{cfg_};
  std::unique_ptr<ShardPool> pool_;
  std::unique_ptr<Session> session_;
  ForwardList forwards_;
};

TEST_F(ClusterSessionTest, KeysServedHereRunHere) {
  const std::string k = key_in(0, 5460);
  EXPECT_EQ(run(resp({"CL.THROTTLE", k, "5", "10", "60"})),
            "*5\r\n:0\r\n:6\r\n:5\r\n:-1\r\n:6\r\n");
  EXPECT_TRUE(forwards_.empty());
}

TEST_F(ClusterSessionTest, OtherNodesKeysAreForwardedAndTheirRepliesKeepTheirPlace) {
  const std::string here = key_in(0, 5460), there = key_in(5461, 10922);
  const std::string in = resp({"FG.TAKE", there, "fixed_window", "3", "1000"}) + resp({"PING"}) +
                         resp({"FG.TAKE", here, "fixed_window", "3", "1000"}) +
                         resp({"CL.THROTTLE", there, "1", "1", "1"});
  std::string sent;
  const std::string out = run(in, nullptr, [&](ForwardCall& c) {
    EXPECT_EQ(c.node_id, "n2");
    EXPECT_EQ(c.peer_addr, "127.0.0.1:17002");
    EXPECT_EQ(c.count, 2u);
    c.ok = true;
    c.replies = "*2\r\n:1\r\n$2\r\nhi\r\n-ERR second\r\n";  // two replies, back to back
  });
  ASSERT_EQ(forwards_.size(), 1u);
  EXPECT_EQ(out,
            "*2\r\n:1\r\n$2\r\nhi\r\n"                  // forwarded #1
            "+PONG\r\n"                                 // local
            "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:1000\r\n"  // here
            "-ERR second\r\n");                         // forwarded #2
}

TEST_F(ClusterSessionTest, ForwardedCommandsAreSentAsRespArrays) {
  const std::string there = key_in(5461, 10922);
  run(resp({"FG.RESET", there}), nullptr, [&](ForwardCall& c) {
    EXPECT_EQ(c.proto, 2);
    // send_forwards moves cmds into the request; here it is still in the call.
    EXPECT_EQ(c.cmds, resp({"FG.RESET", there}));
    c.ok = true;
    c.replies = ":0\r\n";
  });
}

TEST_F(ClusterSessionTest, AnUnansweredForwardIsATryAgainError) {
  const std::string there = key_in(5461, 10922);
  const std::string out = run(resp({"FG.RESET", there}), nullptr, [](ForwardCall& c) {
    c.ok = false;
    c.error = "timeout";
  });
  EXPECT_EQ(out, "-TRYAGAIN the key's owner (n2) did not answer: timeout\r\n");
  EXPECT_EQ(svc_.counters.forward_failures.load(), 1u);
}

TEST_F(ClusterSessionTest, ClientsThatAskedForTheTopologyGetMoved) {
  const std::string there = key_in(5461, 10922);
  run(resp({"CLUSTER", "SLOTS"}));
  const std::string out = run(resp({"FG.RESET", there}));
  EXPECT_EQ(out, "-MOVED " + std::to_string(key_slot(there)) + " 127.0.0.1:7002\r\n");
  EXPECT_TRUE(forwards_.empty());
}

TEST_F(ClusterSessionTest, ClusterNodesTypedAtAPromptDoesNotTurnOnRedirection) {
  const std::string there = key_in(5461, 10922);
  run(resp({"CLUSTER", "NODES"}));
  run(resp({"FG.RESET", there}), nullptr, [](ForwardCall& c) {
    c.ok = true;
    c.replies = ":0\r\n";
  });
  EXPECT_EQ(forwards_.size(), 1u);
}

TEST_F(ClusterSessionTest, RedirectAlwaysMovesEveryone) {
  svc_.settings.redirect = NodeSettings::Redirect::kAlways;
  const std::string there = key_in(5461, 10922);
  EXPECT_EQ(run(resp({"FG.COUNT", there})).substr(0, 7), "-MOVED ");
}

TEST_F(ClusterSessionTest, AKeyWhoseStateIsArrivingWaitsThenRuns) {
  const std::string here = key_in(0, 5460), arriving = key_in(10923, 16383);
  const std::string in =
      resp({"FG.TAKE", here, "fixed_window", "3", "1000"}) + resp({"FG.COUNT", arriving});
  ProcessResult r;
  std::string out = run(in, &r);
  EXPECT_EQ(out, "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:1000\r\n");  // the first only
  EXPECT_EQ(r.consumed, resp({"FG.TAKE", here, "fixed_window", "3", "1000"}).size());
  out = run(resp({"FG.COUNT", arriving}), &r);
  EXPECT_TRUE(r.stalled);
  EXPECT_EQ(r.consumed, 0u);
  EXPECT_EQ(out, "");
  // The state arrives: the shards serve the slots, then the routing says so.
  auto job = std::make_shared<SlotJob>();
  for (uint32_t s = 10923; s < kSlots; ++s) job->slots.set(s);
  auto sink = std::make_shared<Sink>();
  job->done = [sink](SlotJob&) { sink->batch_done(); };
  pool_->install(job, {});
  wait(*sink);
  auto rt = make_routing();
  rt->serving |= rt->awaiting;
  rt->awaiting.reset();
  hub_.publish(rt);
  EXPECT_EQ(run(resp({"FG.COUNT", arriving}), &r), ":0\r\n");
  EXPECT_FALSE(r.stalled);
}

TEST_F(ClusterSessionTest, ASlotTheShardsNoLongerServeIsATryAgain) {
  // The routing says "served here" but the shards already let the slot go (a request in
  // flight while its slot moved): refused, never run on state that is not ours.
  auto rt = make_routing();
  const std::string k = key_in(10923, 16383);
  rt->serving.set(key_slot(k));
  hub_.publish(rt);
  EXPECT_EQ(run(resp({"FG.COUNT", k})),
            "-TRYAGAIN the key's slot changed owner while the request was on its way; try "
            "again\r\n");
}

TEST_F(ClusterSessionTest, HeartbeatReachesEveryNodeAndAddsUpTheirCounts) {
  const std::string here = key_in(0, 5460);
  run(resp({"FG.ACQUIRE", here, "5", "60000", "HOLDER", "app-1"}));
  const std::string out =
      run(resp({"FG.HEARTBEAT", "app-1", "60000"}), nullptr, [](ForwardCall& c) {
        EXPECT_EQ(c.node_id, "n2");
        EXPECT_EQ(c.cmds, resp({"FG.HEARTBEAT", "app-1", "60000"}));
        c.ok = true;
        c.replies = ":3\r\n";
      });
  EXPECT_EQ(out, ":4\r\n");  // one lease here, three there
  // A node that does not answer adds nothing; the rest still count.
  EXPECT_EQ(run(resp({"FG.HEARTBEAT", "app-1", "60000"}), nullptr,
                [](ForwardCall& c) { c.error = "timeout"; }),
            ":1\r\n");
}

TEST_F(ClusterSessionTest, NoTableYetMeansClusterDown) {
  hub_.publish(std::make_shared<Routing>());
  EXPECT_EQ(run(resp({"FG.COUNT", "x"})), "-CLUSTERDOWN Hash slot not served\r\n");
}

TEST_F(ClusterSessionTest, AForwardedCommandWhoseSlotMovedOnTakesOneMoreHopAtMost) {
  const std::string there = key_in(5461, 10922);
  session_->set_forwarded(1);  // arrived from the node the client talks to
  const std::string out = run(resp({"FG.COUNT", there}), nullptr, [](ForwardCall& c) {
    EXPECT_EQ(c.hops, 2u);
    c.ok = true;
    c.replies = ":2\r\n";
  });
  EXPECT_EQ(out, ":2\r\n");
  EXPECT_NE(run(resp({"CLUSTER", "SLOTS"})), "");  // a forwarded session is never moved
  session_->set_forwarded(kMaxForwardHops);
  EXPECT_EQ(run(resp({"FG.COUNT", there})).substr(0, 10), "-TRYAGAIN ");
  EXPECT_TRUE(forwards_.empty());
}

TEST_F(ClusterSessionTest, ClusterCommandsDescribeTheRouting) {
  EXPECT_EQ(run(resp({"CLUSTER", "KEYSLOT", "{user}:1"})), ":5474\r\n");
  EXPECT_EQ(run(resp({"CLUSTER", "MYID"})), "$2\r\nn1\r\n");
  const std::string info = run(resp({"CLUSTER", "INFO"}));
  EXPECT_NE(info.find("cluster_state:ok\r\n"), std::string::npos);
  EXPECT_NE(info.find("cluster_known_nodes:2\r\n"), std::string::npos);
  EXPECT_NE(info.find("cluster_current_epoch:7\r\n"), std::string::npos);
  const std::string nodes = run(resp({"CLUSTER", "NODES"}));
  EXPECT_NE(nodes.find("n1 127.0.0.1:7001@17001 myself,master - 0 0 7 connected 0-5460 "
                       "10923-16383\n"),
            std::string::npos);
  EXPECT_NE(nodes.find("n2 127.0.0.1:7002@17002 master - 0 0 7 connected 5461-10922\n"),
            std::string::npos);
#define N1 "*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nn1\r\n*0\r\n"
#define N2 "*4\r\n$9\r\n127.0.0.1\r\n:7002\r\n$2\r\nn2\r\n*0\r\n"
  EXPECT_EQ(run(resp({"CLUSTER", "SLOTS"})),
            // Each range: its owner, then its replica (R = 2 by default).
            "*3\r\n"
            "*4\r\n:0\r\n:5460\r\n" N1 N2 "*4\r\n:5461\r\n:10922\r\n" N2 N1
            "*4\r\n:10923\r\n:16383\r\n" N1 N2);
#undef N1
#undef N2
  EXPECT_EQ(run(resp({"CLUSTER", "BOGUS"})),
            "-ERR unknown subcommand 'BOGUS'. Try CLUSTER HELP.\r\n");
  EXPECT_EQ(run(resp({"ASKING"})), "+OK\r\n");
  EXPECT_NE(run(resp({"HELLO", "3"})).find("$4\r\nmode\r\n$7\r\ncluster\r\n"), std::string::npos);
}

TEST(ClusterCommands, AreRefusedOutsideClusterMode) {
  ManualClock clock{0};
  PolicyRegistry policies;
  ClientRegistry clients(10);
  Services svc;
  svc.clock = &clock;
  svc.policies = &policies;
  svc.clients = &clients;
  Session s(svc, clients.add("a", "b", 0));
  Batch b;
  const std::string in = "CLUSTER SLOTS\r\nASKING\r\n";
  s.process(in.data(), in.size(), b);
  EXPECT_EQ(s.output(),
            "-ERR This instance has cluster support disabled\r\n"
            "-ERR This instance has cluster support disabled\r\n");
}

TEST(RespValueLength, FindsWholeRepliesAndOnlyWholeOnes) {
  auto len = [](const std::string& s) { return resp_value_length(s.data(), s.size()); };
  EXPECT_EQ(len(":12\r\n:3\r\n"), 5u);
  EXPECT_EQ(len("+OK\r\n"), 5u);
  EXPECT_EQ(len("-ERR x y\r\n"), 10u);
  EXPECT_EQ(len("$3\r\nabc\r\n"), 9u);
  EXPECT_EQ(len("$-1\r\n"), 5u);
  EXPECT_EQ(len("_\r\n"), 3u);
  EXPECT_EQ(len("*2\r\n:1\r\n$1\r\nx\r\n"), 15u);
  EXPECT_EQ(len("%1\r\n+a\r\n:1\r\n"), 12u);
  EXPECT_EQ(len("*-1\r\n"), 5u);
  EXPECT_EQ(len("$3\r\nab"), 0u);      // cut short
  EXPECT_EQ(len("*2\r\n:1\r\n"), 0u);  // missing element
  EXPECT_EQ(len("?what\r\n"), 0u);     // not RESP
  EXPECT_EQ(len("$99999999999999999999\r\n"), 0u);
}

}  // namespace
}  // namespace fg
