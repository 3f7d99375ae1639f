// The RESP door in cluster mode, two in-process nodes: which commands run here, which are
// forwarded to the owner (decoded, not as RESP) and how their replies keep their place,
// -MOVED, the waits for arriving slots, and the CLUSTER commands' replies.
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "errors.hpp"
#include "forward_codec.hpp"
#include "test_node.hpp"

namespace fg {
namespace {

// Slots 0-5460 are n1's and served, 5461-10922 are n2's, 10923-16383 are n1's but their state
// is still arriving.
int owner_of(uint32_t s) { return (s >= 5461 && s <= 10922) ? 1 : 0; }
SlotBits range(uint32_t lo, uint32_t hi) {
  SlotBits b;
  for (uint32_t s = lo; s <= hi; ++s) b.set(s);
  return b;
}

class ClusterSessionTest : public ::testing::Test {
 protected:
  std::string run(const std::string& input, ProcessResult* result = nullptr) {
    std::string out = conn_.send(input);
    if (result) *result = conn_.last();
    return out;
  }
  static std::string resp(const std::vector<std::string>& words) { return RespConn::resp(words); }

  TwoNodes nodes_{owner_of, range(10923, kSlotCount - 1)};
  MemoryForwarder& net_ = nodes_.net;
  TestNode& n1_ = nodes_.n1;
  TestNode& n2_ = nodes_.n2;
  RespConn conn_{n1_};
};

TEST_F(ClusterSessionTest, KeysServedHereRunHere) {
  const std::string k = key_in(0, 5460);
  EXPECT_EQ(run(resp({"CL.THROTTLE", k, "5", "10", "60"})),
            "*5\r\n:0\r\n:6\r\n:5\r\n:-1\r\n:6\r\n");
  EXPECT_TRUE(net_.sent().empty());
}

TEST_F(ClusterSessionTest, OtherNodesKeysAreForwardedAndTheirRepliesKeepTheirPlace) {
  const std::string here = key_in(0, 5460), there = key_in(5461, 10922);
  const std::string in = resp({"FG.TAKE", there, "fixed_window", "3", "1000"}) + resp({"PING"}) +
                         resp({"FG.TAKE", here, "fixed_window", "3", "1000"}) +
                         resp({"CL.THROTTLE", there, "1", "1", "1"});
  EXPECT_EQ(run(in),
            "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:1000\r\n"  // forwarded #1, run on n2
            "+PONG\r\n"                                 // local
            "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:1000\r\n"  // here
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");  // #2
  // One peer request for both, to their owner.
  const auto sent = net_.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].requests_size(), 2);
  EXPECT_EQ(n1_.svc.counters.forwarded.load(), 2u);
  EXPECT_EQ(n2_.svc.counters.forwards_served.load(), 2u);
}

// Sockets made ready by one poll are read by handlers queued together; each runs inside a
// Turn, as node/Connection's read handler does. A flight with forwards waits for the last
// of them, so three connections' requests for one owner take one peer request, and each is
// answered (as is a fourth connection's local request, which joined the waiting flight).
TEST_F(ClusterSessionTest, ForwardsOfOnePollsSocketsShareOnePeerRequest) {
  const std::string here = key_in(0, 5460);
  struct Sock : BatchWaiter {
    std::shared_ptr<RespSession> session;
    std::string out;
    bool answered = false;
    void batch_complete(Flight& f) override {
      session->complete(f);
      out.swap(session->output());
      answered = true;
    }
  };
  std::vector<std::shared_ptr<Sock>> socks;
  for (int i = 0; i < 4; ++i) {
    auto s = std::make_shared<Sock>();
    s->session =
        std::make_shared<RespSession>(n1_.svc, n1_.clients.add("127.0.0.1:9", "127.0.0.1:2", 0));
    socks.push_back(s);
  }
  std::vector<std::string> inputs;
  for (int i = 0; i < 3; ++i)
    inputs.push_back(resp({"INCR", key_in(5461, 10922, "f" + std::to_string(i) + "-")}));
  inputs.push_back(resp({"INCR", here}));
  n1_.run([&] {
    for (size_t i = 0; i < socks.size(); ++i) {
      asio::post(n1_.io, [&, i] {
        IoBatcher::Turn turn(*n1_.batcher);
        ProcessResult r =
            socks[i]->session->process(inputs[i].data(), inputs[i].size(), n1_.batcher->current());
        if (r.submitted) n1_.batcher->join(socks[i]);
      });
    }
  });
  // Until all four are answered (the forward travels through another node's thread): at
  // most 5 s, looking from the lane's own thread, which owns the sockets.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (bool all = false; !all && std::chrono::steady_clock::now() < until;) {
    n1_.run([&] {
      all = socks[0]->answered && socks[1]->answered && socks[2]->answered && socks[3]->answered;
    });
    if (!all) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(socks[static_cast<size_t>(i)]->out, ":1\r\n") << i;
  EXPECT_EQ(socks[3]->out, ":1\r\n");
  const auto sent = net_.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].requests_size(), 3);
}

// A flight's waiters hear back as soon as their own parts are back: a connection whose keys
// are all here is not held by another connection's forwards in the same flight (a flood's
// round trips to a slow owner would otherwise hold every caller of the node).
TEST_F(ClusterSessionTest, AConnectionIsNotHeldByAnothersForwardsInTheSameFlight) {
  struct Sock : BatchWaiter {
    std::shared_ptr<RespSession> session;
    std::string out;
    std::atomic<bool> answered{false};
    void batch_complete(Flight& f) override {
      session->complete(f);
      out.swap(session->output());
      answered = true;
    }
  };
  auto here = std::make_shared<Sock>(), there = std::make_shared<Sock>();
  for (auto* s : {&here, &there}) {
    (*s)->session =
        std::make_shared<RespSession>(n1_.svc, n1_.clients.add("127.0.0.1:9", "127.0.0.1:2", 0));
  }
  const std::string in_there = resp({"INCR", key_in(5461, 10922)});
  const std::string in_here = resp({"INCR", key_in(0, 5460)});
  net_.hold();
  n1_.run([&] {
    IoBatcher::Turn turn(*n1_.batcher);  // (one poll: both join one flight)
    for (auto [s, in] : {std::pair{there, &in_there}, std::pair{here, &in_here}}) {
      ProcessResult r = s->session->process(in->data(), in->size(), n1_.batcher->current());
      ASSERT_TRUE(r.submitted);
      n1_.batcher->join(s);
    }
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!here->answered && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(here->answered);
  EXPECT_FALSE(there->answered);  // its owner has not answered yet
  ASSERT_EQ(net_.sent().size(), 1u);
  net_.release();
  while (!there->answered && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  n1_.run([] {});
  EXPECT_EQ(here->out, ":1\r\n");
  EXPECT_EQ(there->out, ":1\r\n");
}

// The owner's side of the same: a forwarded batch is answered when its shards are done, not
// when the flight it joined there brings back that node's own forwards (two nodes' round
// trips would chain into each other).
TEST_F(ClusterSessionTest, AForwardedBatchIsNotHeldByTheOwnersOwnForwards) {
  struct Sock : BatchWaiter {
    std::shared_ptr<RespSession> session;
    std::atomic<bool> answered{false};
    void batch_complete(Flight& f) override {
      session->complete(f);
      answered = true;
    }
  };
  auto own = std::make_shared<Sock>();
  own->session =
      std::make_shared<RespSession>(n2_.svc, n2_.clients.add("127.0.0.1:9", "127.0.0.1:2", 0));
  const std::string to_n1 = resp({"INCR", key_in(0, 5460)});
  net_.hold();
  // n1's client asks for a key of n2's: the forward waits in the network.
  auto got = std::async(std::launch::async, [&] {
    return conn_.send(resp({"INCR", key_in(5461, 10922)}));
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (net_.sent().empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(net_.sent().size(), 1u);
  n2_.run([&] {
    // n1's batch reaches n2 (its job is queued on n2's lane), and n2's own client then asks
    // for a key of n1's: both join n2's next flight, whose forward to n1 is held.
    net_.release();
    net_.hold();
    asio::post(n2_.io, [&] {
      ProcessResult r = own->session->process(to_n1.data(), to_n1.size(), n2_.batcher->current());
      if (r.submitted) n2_.batcher->join(own);
    });
  });
  const bool answered = got.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  const bool own_was_answered = own->answered;
  net_.release();
  EXPECT_TRUE(answered) << "n1's forward waited for n2's own forward to n1";
  EXPECT_FALSE(own_was_answered);
  EXPECT_EQ(got.get(), ":1\r\n");
  // (n2's own forward leaves on n2's loop once released: not necessarily by now)
  while (net_.sent().size() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(net_.sent().size(), 2u);
  EXPECT_EQ(net_.sent()[1].requests_size(), 1);  // n2's own, sent while n1's was in its flight
  while (!own->answered && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(own->answered);
}

// The owner runs a forwarded batch as a socket's read handler runs: a batch of keys it
// holds is answered before the handler returns, not a turn of the event loop later from a
// posted flush (a turn that past capacity holds every other connection's work first).
TEST_F(ClusterSessionTest, AForwardedBatchOfKeysHereIsAnsweredInItsOwnHandler) {
  net_.hold();
  auto got = std::async(std::launch::async, [&] {
    return conn_.send(resp({"INCR", key_in(5461, 10922)}));
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (net_.sent().empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(net_.sent().size(), 1u);
  bool answered_before_next = false;
  n2_.run([&] {
    net_.release();  // the batch's job is queued on n2's lane, then this handler after it
    asio::post(n2_.io, [&] { answered_before_next = !net_.answered_on().empty(); });
  });
  n2_.run([] {});
  EXPECT_TRUE(answered_before_next);
  ASSERT_EQ(got.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(got.get(), ":1\r\n");
}

TEST_F(ClusterSessionTest, ForwardedRequestsTravelDecodedAndRunOnTheOwnersLane) {
  const std::string there = key_in(5461, 10922);
  EXPECT_EQ(run(resp({"FG.TAKE", there, "sliding_log", "5", "60000", "COST", "2"})),
            "*5\r\n:1\r\n:5\r\n:3\r\n:-1\r\n:60000\r\n");
  const auto sent = net_.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].hops(), 1u);
  std::deque<std::vector<std::string_view>> argvs;
  Result<Request> r = decode_forwarded(sent[0].requests(0), argvs);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->verb, Verb::kTake);
  EXPECT_EQ(r->key, there);
  EXPECT_EQ(r->spec.kind, Kind::kSlidingLog);
  EXPECT_EQ(r->spec.a, 5);
  EXPECT_EQ(r->spec.c, 60'000'000'000);
  EXPECT_EQ(r->cost, 2);
  // The owner ran it through its core on its I/O lane: no client connection, no session,
  // not counted as one of its own clients' requests.
  EXPECT_EQ(net_.answered_on(), std::set<std::thread::id>{n2_.lane_thread()});
  EXPECT_EQ(n2_.clients.count(), 0u);
}

TEST_F(ClusterSessionTest, AnUnansweredForwardIsATryAgainError) {
  const std::string there = key_in(5461, 10922);
  net_.cut("127.0.0.1:17002");
  EXPECT_EQ(run(resp({"FG.RESET", there})),
            "-TRYAGAIN the key's owner (n2) did not answer: unreachable\r\n");
  EXPECT_EQ(n1_.svc.counters.forward_failures.load(), 1u);
}

TEST_F(ClusterSessionTest, ClientsThatAskedForTheTopologyGetMoved) {
  const std::string there = key_in(5461, 10922);
  run(resp({"CLUSTER", "SLOTS"}));
  EXPECT_EQ(run(resp({"FG.RESET", there})),
            "-MOVED " + std::to_string(key_slot(there)) + " 127.0.0.1:7002\r\n");
  EXPECT_TRUE(net_.sent().empty());
}

TEST_F(ClusterSessionTest, ClusterNodesTypedAtAPromptDoesNotTurnOnRedirection) {
  const std::string there = key_in(5461, 10922);
  run(resp({"CLUSTER", "NODES"}));
  EXPECT_EQ(run(resp({"FG.RESET", there})), ":0\r\n");
  EXPECT_EQ(net_.sent().size(), 1u);
}

TEST_F(ClusterSessionTest, RedirectAlwaysMovesEveryone) {
  n1_.svc.settings.redirect = NodeSettings::Redirect::kAlways;
  const std::string there = key_in(5461, 10922);
  EXPECT_EQ(run(resp({"FG.COUNT", there})).substr(0, 7), "-MOVED ");
}

TEST_F(ClusterSessionTest, AKeyWhoseStateIsArrivingWaitsThenRuns) {
  const std::string here = key_in(0, 5460), arriving = key_in(10923, 16383);
  const std::string first = resp({"FG.TAKE", here, "fixed_window", "3", "1000"});
  ProcessResult r;
  std::string out = run(first + resp({"FG.COUNT", arriving}), &r);
  EXPECT_EQ(out, "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:1000\r\n");  // the first only
  EXPECT_TRUE(r.stalled);
  out = run(resp({"FG.COUNT", arriving}), &r);
  EXPECT_TRUE(r.stalled);
  EXPECT_EQ(r.consumed, 0u);
  EXPECT_EQ(out, "");
  // The state arrives: the shards serve the slots, then the routing says so.
  n1_.serve(range(10923, kSlotCount - 1));
  n1_.publish(make_routing(0, 2, owner_of));
  EXPECT_EQ(run(resp({"FG.COUNT", arriving}), &r), ":0\r\n");
  EXPECT_FALSE(r.stalled);
}

TEST_F(ClusterSessionTest, ASlotTheShardsNoLongerServeIsATryAgain) {
  // The routing says "served here" but the shards already let the slot go (a request in
  // flight while its slot moved): refused, never run on state that is not ours.
  const std::string k = key_in(10923, 16383);
  auto rt = make_routing(0, 2, owner_of, range(10923, kSlotCount - 1));
  rt->serving.set(key_slot(k));
  rt->awaiting.reset(key_slot(k));
  n1_.publish(rt);
  EXPECT_EQ(run(resp({"FG.COUNT", k})),
            "-TRYAGAIN the key's slot changed owner while the request was on its way; try "
            "again\r\n");
}

TEST_F(ClusterSessionTest, HeartbeatReachesEveryNodeAndAddsUpTheirCounts) {
  const std::string here = key_in(0, 5460);
  EXPECT_EQ(run(resp({"FG.ACQUIRE", here, "5", "60000", "HOLDER", "app-1"})).substr(0, 8),
            "*5\r\n:1\r\n");
  RespConn on_n2(n2_);
  for (int i = 0; i < 3; ++i) {
    const std::string there = key_in(5461, 10922, "t" + std::to_string(i) + "-");
    EXPECT_EQ(on_n2.cmd({"FG.ACQUIRE", there, "5", "60000", "HOLDER", "app-1"}).substr(0, 8),
              "*5\r\n:1\r\n");
  }
  EXPECT_EQ(run(resp({"FG.HEARTBEAT", "app-1", "60000"})), ":4\r\n");  // one here, 3 there
  // A member that cannot be reached: its share was not renewed, and the reply says so.
  net_.cut("127.0.0.1:17002");
  EXPECT_EQ(run(resp({"FG.HEARTBEAT", "app-1", "60000"})),
            "-TRYAGAIN n2 did not answer (unreachable): its leases of this holder were not "
            "reached\r\n");
  net_.heal();
  EXPECT_EQ(run(resp({"FG.RELEASEALL", "app-1"})), ":4\r\n");
  EXPECT_EQ(run(resp({"FG.HEARTBEAT", "app-1", "60000"})), ":0\r\n");
}

TEST_F(ClusterSessionTest, KeysAndHoldersOfAnyBytesTravel) {
  const std::string there = key_in(5461, 10922, std::string("\xff\0", 2));
  const std::string holder("\xfe\0\xff", 3);
  EXPECT_EQ(run(resp({"FG.ACQUIRE", there, "5", "60000", "HOLDER", holder})).substr(0, 8),
            "*5\r\n:1\r\n");
  EXPECT_EQ(run(resp({"FG.HEARTBEAT", holder, "60000"})), ":1\r\n");
  EXPECT_EQ(run(resp({"FG.COUNT", there})), ":1\r\n");
}

TEST_F(ClusterSessionTest, NoTableYetMeansClusterDown) {
  n1_.publish(std::make_shared<Routing>());
  EXPECT_EQ(run(resp({"FG.COUNT", "x"})), "-CLUSTERDOWN Hash slot not served\r\n");
}

TEST_F(ClusterSessionTest, AForwardedRequestWhoseSlotMovedOnTakesOneMoreHopAtMost) {
  // n2 thinks n1 owns everything now (its table is behind): what it forwards to n1 for a slot
  // n1 gives to n2 goes one hop further, back to n2, and no further.
  const std::string there = key_in(5461, 10922);
  struct Answer {
    Code code;
    std::string error;
    int64_t value;
  };
  auto ask_n1 = [&](uint32_t hops) {
    forward::ForwardBatch b;
    b.set_hops(hops);
    Request r;
    r.verb = Verb::kCount;
    r.key = there;
    encode_forwarded(r, {}, *b.add_requests());
    std::promise<std::string> p;
    serve_forwarded(n1_.svc, b.SerializeAsString(),
                    [&p](bool ok, std::string body) { p.set_value(ok ? body : "!" + body); });
    forward::ForwardOutcomes outs;
    EXPECT_TRUE(outs.ParseFromString(p.get_future().get()));
    Outcome o;
    std::deque<DataReply> replies;
    decode_outcome(outs.outcomes(0), Verb::kCount, o, replies);
    return Answer{o.code, std::string(o.error), o.value};  // (o's texts are views into outs)
  };
  Answer o = ask_n1(1);
  EXPECT_EQ(o.code, Code::kOk) << o.error;
  EXPECT_EQ(o.value, 0);
  ASSERT_EQ(net_.sent().size(), 1u);
  EXPECT_EQ(net_.sent()[0].hops(), 2u);
  o = ask_n1(kMaxForwardHops);
  EXPECT_EQ(o.code, Code::kTryAgain);
  EXPECT_EQ(o.error, err::kSlotMoving);
  EXPECT_EQ(net_.sent().size(), 1u);  // not sent on
}

// A forward names the user who asked, and the key's owner checks that user's rights again
// (as it knows the user): a forward is never worth more rights than its user has. One that
// names no user runs only as its sender's own upkeep.
TEST_F(ClusterSessionTest, TheOwnerChecksAForwardedRequestsUserAgain) {
  ASSERT_TRUE(n1_.acl
                  .set_user("app", {"on", "nopass", "~app:*", "+@limiter", "+@read", "+@write",
                                    "-@dangerous"})
                  .ok());
  ASSERT_TRUE(n1_.acl.set_user("ops", {"on", "nopass", "~*", "+@all"}).ok());
  const std::string theirs = "ops:{" + key_in(0, 5460) + "}",
                    mine = "app:{" + key_in(0, 5460) + "}";
  auto ask_n1 = [&](Request r, const std::string& user, const char* command, bool by_node) {
    forward::ForwardBatch b;
    b.set_hops(1);
    forward::ForwardedRequest& in = *b.add_requests();
    encode_forwarded(r, {}, in);
    in.set_user(user);
    in.set_command(command);
    in.set_by_node(by_node);
    std::promise<std::string> p;
    serve_forwarded(n1_.svc, b.SerializeAsString(),
                    [&p](bool ok, std::string body) { p.set_value(ok ? body : "!" + body); });
    forward::ForwardOutcomes outs;
    EXPECT_TRUE(outs.ParseFromString(p.get_future().get()));
    return outs.outcomes(0).code() == static_cast<uint32_t>(Code::kOk) ? std::string("ok")
                                                                       : outs.outcomes(0).error();
  };
  Request count;
  count.verb = Verb::kCount;
  count.key = theirs;
  const std::string no_key =
      "NOPERM this user has no permissions to access one of the keys used as arguments";
  EXPECT_EQ(ask_n1(count, "app", "fg.count", false), no_key);
  EXPECT_EQ(ask_n1(count, "app", "", false), no_key);  // (a verb's own command when unsaid)
  EXPECT_EQ(ask_n1(count, "ops", "fg.count", false), "ok");
  EXPECT_EQ(ask_n1(count, "nobody", "fg.count", false),
            "NOPERM the user 'nobody' is unknown to the key's owner");
  EXPECT_EQ(ask_n1(count, "", "", false), err::kForwardWithoutUser);  // "empty = all" no more
  EXPECT_EQ(ask_n1(count, "", "", true), "ok");  // (the sending node's own upkeep)
  count.key = mine;
  EXPECT_EQ(ask_n1(count, "app", "fg.count", false), "ok");
  // The command, too: app may count leases and take permits, not reset a key (@dangerous).
  Request reset;
  reset.verb = Verb::kReset;
  reset.key = mine;
  EXPECT_EQ(ask_n1(reset, "app", "fg.reset", false),
            "NOPERM this user has no permissions to run the 'fg.reset' command");
  EXPECT_EQ(ask_n1(reset, "ops", "fg.reset", false), "ok");
  const std::vector<std::string_view> set_theirs = {"set", theirs, "1"};
  Request data;
  data.verb = Verb::kData;
  data.data = DataCmd::kSet;
  data.args = &set_theirs;
  data.key = theirs;
  EXPECT_EQ(ask_n1(data, "app", "", false), no_key);
  EXPECT_EQ(ask_n1(data, "ops", "", false), "ok");
  const std::vector<std::string_view> set_mine = {"set", mine, "1"};
  data.args = &set_mine;
  data.key = mine;
  EXPECT_EQ(ask_n1(data, "app", "", false), "ok");
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
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  ManualClock clock{0};
  TestNode node(sys, clock, false);
  RespConn conn(node);
  EXPECT_EQ(conn.send("CLUSTER SLOTS\r\nASKING\r\n"),
            "-ERR This instance has cluster support disabled\r\n"
            "-ERR This instance has cluster support disabled\r\n");
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

// A data command travels as its words and comes back as its reply; a reply whose arrays
// do not hold what they announce is refused whole, so a door never writes half a value.
TEST(ForwardCodec, DataCommandsTravelAsWordsAndRepliesComeBackWhole) {
  const std::vector<std::string_view> words = {"SCAN", "0", "MATCH", "u:{7}:*"};
  Request r;
  r.verb = Verb::kData;
  r.data = DataCmd::kScan;
  r.resp3 = true;
  r.args = &words;
  forward::ForwardedRequest m;
  encode_forwarded(r, {}, m);
  std::deque<std::vector<std::string_view>> argvs;
  Result<Request> back = decode_forwarded(m, argvs);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back->args, words);
  EXPECT_TRUE(back->resp3);
  EXPECT_EQ(back->key, "u:{7}:*");  // (a tagged pattern routes by its tag)
  m.set_data(0);
  EXPECT_FALSE(decode_forwarded(m, argvs).ok());

  DataReply reply;
  reply.array(2);
  reply.bulk("0");
  reply.map(1);
  reply.bulk("f");
  reply.dbl(1.5);
  Outcome o;
  o.reply = &reply;
  forward::ForwardOutcome out;
  encode_outcome(o, Verb::kData, out);
  std::deque<DataReply> replies;
  Outcome got;
  decode_outcome(out, Verb::kData, got, replies);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got.reply->items.size(), reply.items.size());
  EXPECT_EQ(got.reply->items[4].s, "1.5");
  out.mutable_reply(2)->set_n(2);  // the map now announces more than follows
  Outcome bad;
  decode_outcome(out, Verb::kData, bad, replies);
  EXPECT_EQ(bad.code, Code::kError);
  EXPECT_EQ(bad.error, err::kMalformedReply);
}

}  // namespace
}  // namespace fg
