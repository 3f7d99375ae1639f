// The node as an object (node/node.hpp): what the executable runs, run here in the test's
// own process — two of them at once, sharing one actor system.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <thread>

#include "key_slot.hpp"
#include "node.hpp"
#include "node_process.hpp"

namespace fg::testing {
namespace {

// One per test, outliving its nodes (a static one trips over CAF's own teardown at exit).
caf::actor_system_config& actor_config() {
  static caf::actor_system_config c;
  c.set("scheduler.max-threads", size_t{2});
  c.set("logger.verbosity", caf::atom("quiet"));
  return c;
}

NodeConfig cluster_member(const std::string& id, int bus, int seed_bus, const std::string& secret) {
  NodeConfig c;
  c.bind = "127.0.0.1";
  c.port = 0;
  c.native_port = 0;
  c.admin_port = -1;  // (with port 0: a free one)
  c.cluster_enabled = true;
  c.node_id = id;
  c.cluster_port = bus;
  c.seeds = {"127.0.0.1:" + std::to_string(seed_bus)};
  c.cluster_secret_file = secret;
  c.io_threads = 1;
  c.shard_threads = 1;
  c.shards = 2;
  resolve_defaults(c);
  return c;
}

// Every one of `nodes` sees all of them in one table and serves its slots (up to 20 s).
bool formed(const std::vector<Node*>& nodes) {
  for (int i = 0; i < 400; ++i) {
    bool all = true;
    for (Node* n : nodes) {
      Client c(n->port(), 1000);
      const std::string info = c.request({"CLUSTER", "INFO"});
      all = all && info_field(info, "cluster_size") == std::to_string(nodes.size()) &&
            info_field(info, "cluster_slots_awaited_here") == "0";
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// `n` keys `prefix`0, `prefix`1, … whose slots `node` serves (fewer if 5000 tries find fewer).
std::vector<std::string> keys_owned_by(Node& node, const std::string& prefix, size_t n) {
  std::vector<std::string> out;
  const auto rt = node.services().routing->get();
  for (int i = 0; out.size() < n && i < 5000; ++i) {
    const std::string k = prefix + std::to_string(i);
    if (rt->owner[key_slot(k)] == rt->self_index) out.push_back(k);
  }
  return out;
}

TEST(NodeObject, TwoNodesInOneProcessFormAClusterAndServeEachOthersKeys) {
  spdlog::set_level(spdlog::level::warn);
  caf::actor_system sys{actor_config()};
  const int bus_a = free_port(), bus_b = free_port();
  const std::string secret =
      temp_file("node-object.secret", "node-object-secret-" + std::to_string(getpid()) + "\n");
  Node a(cluster_member("obj-a", bus_a, bus_a, secret), sys);
  Node b(cluster_member("obj-b", bus_b, bus_a, secret), sys);
  std::string why;
  ASSERT_EQ(a.start(why), 0) << why;
  ASSERT_EQ(b.start(why), 0) << why;
  EXPECT_EQ(a.cluster_port(), bus_a);
  ASSERT_TRUE(formed({&a, &b}));
  // Keys of both owners, counted through one node and read through the other.
  Client via_a(a.port()), via_b(b.port());
  for (int i = 0; i < 20; ++i) {
    const std::string key = "object:" + std::to_string(i);
    EXPECT_EQ(via_a.request({"INCRBY", key, std::to_string(i + 1)}), ":" + std::to_string(i + 1));
    EXPECT_EQ(via_b.request({"GET", key}), std::to_string(i + 1)) << key;
  }
  // Each node counts the requests its own clients sent, though they share a process.
  const std::string ma = http_get(a.admin_port(), "/metrics").body;
  const std::string mb = http_get(b.admin_port(), "/metrics").body;
  EXPECT_NE(ma.find("floodgate_requests_total{command=\"incrby\",result=\"ok\"} 20\n"),
            std::string::npos)
      << ma;
  EXPECT_EQ(ma.find("command=\"get\""), std::string::npos) << ma;
  EXPECT_NE(mb.find("floodgate_requests_total{command=\"get\",result=\"ok\"} 20\n"),
            std::string::npos)
      << mb;
  EXPECT_EQ(mb.find("command=\"incrby\""), std::string::npos) << mb;
  // SHUTDOWN asks the node's owner to stop it; stop() hands its slots to the other.
  EXPECT_FALSE(a.stop_requested());
  via_a.request({"SHUTDOWN", "NOSAVE"});
  for (int i = 0; i < 100 && !a.stop_requested(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(a.stop_requested());
  a.stop();
  Client after(b.port());
  for (int i = 0; i < 20; ++i) {
    const std::string key = "object:" + std::to_string(i);
    EXPECT_EQ(after.request({"GET", key}), std::to_string(i + 1)) << key;
  }
  b.stop();
  std::remove(secret.c_str());
}

// Membership, the table's settling and the graces read the node's clock, not the machine's:
// on a clock that stands still, two nodes meet but never settle a table together; moved on,
// they do.
TEST(NodeObject, AClusterKeepsTheTimeOfTheClockItIsGiven) {
  spdlog::set_level(spdlog::level::warn);
  caf::actor_system sys{actor_config()};
  ManualClock clock;
  const int bus_a = free_port(), bus_b = free_port();
  const std::string secret =
      temp_file("node-clock.secret", "node-clock-secret-" + std::to_string(getpid()) + "\n");
  Node a(cluster_member("clk-a", bus_a, bus_a, secret), sys, clock);
  Node b(cluster_member("clk-b", bus_b, bus_a, secret), sys, clock);
  std::string why;
  ASSERT_EQ(a.start(why), 0) << why;
  ASSERT_EQ(b.start(why), 0) << why;
  auto size_seen_by = [](Node& n) {
    Client c(n.port(), 1000);
    return info_field(c.request({"CLUSTER", "INFO"}), "cluster_size");
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // (settle-ms is 1 s)
  EXPECT_NE(size_seen_by(a), "2");
  EXPECT_NE(size_seen_by(b), "2");
  bool formed = false;
  for (int i = 0; i < 400 && !formed; ++i) {
    clock.advance_ms(20);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    formed = size_seen_by(a) == "2" && size_seen_by(b) == "2";
  }
  EXPECT_TRUE(formed);
  // A leave waits on answers paced by the node's clock (and, where it stands still, on the
  // machine's for up to 30 s): the clock goes on while the nodes stop.
  std::atomic<bool> stopping{true};
  std::thread ticking([&] {
    while (stopping) {
      clock.advance_ms(10);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  b.stop();
  a.stop();
  stopping = false;
  ticking.join();
  std::remove(secret.c_str());
}

// Peer requests (hand-offs, replication, forwards) go over the network the node is given:
// here one in memory, whose cut of one direction fails that direction's forwards only.
TEST(NodeObject, PeerRequestsTravelTheNetworkTheNodeIsGiven) {
  spdlog::set_level(spdlog::level::err);
  caf::actor_system sys{actor_config()};
  MemoryPeerHub hub;
  const int bus_a = free_port(), bus_b = free_port();
  const std::string addr_a = "127.0.0.1:" + std::to_string(bus_a);
  const std::string addr_b = "127.0.0.1:" + std::to_string(bus_b);
  const std::string secret =
      temp_file("node-net.secret", "node-net-secret-" + std::to_string(getpid()) + "\n");
  Node a(cluster_member("net-a", bus_a, bus_a, secret), sys, SystemClock::process(),
         {&hub.node(addr_a), nullptr});
  Node b(cluster_member("net-b", bus_b, bus_a, secret), sys, SystemClock::process(),
         {&hub.node(addr_b), nullptr});
  std::string why;
  ASSERT_EQ(a.start(why), 0) << why;
  ASSERT_EQ(b.start(why), 0) << why;
  ASSERT_TRUE(formed({&a, &b}));
  // A key b owns, counted through a: a forward over the hub.
  const auto owned = keys_owned_by(b, "net:", 1);
  ASSERT_EQ(owned.size(), 1u);
  const std::string key = owned[0];
  Client via_a(a.port(), 5000), via_b(b.port(), 5000);
  const uint64_t before = hub.calls();
  EXPECT_EQ(via_a.request({"INCR", key}), ":1");
  EXPECT_GT(hub.calls(), before);
  // a's calls to b cut: a cannot forward; b, asked directly, still counts.
  hub.cut(addr_a, addr_b);
  EXPECT_EQ(via_a.request({"INCR", key}).substr(0, 1), "-");
  EXPECT_EQ(via_b.request({"INCR", key}), ":2");
  hub.heal();
  EXPECT_EQ(via_a.request({"INCR", key}), ":3");
  b.stop();
  a.stop();
  std::remove(secret.c_str());
}

// Three nodes whose gossip and peer requests all travel in memory: one is cut off both
// ways, the other two declare it dead and serve its keys from their copies; healed, it
// comes back and serves them again, with their counts.
TEST(NodeObject, AClusterInMemoryRidesOutAPartition) {
  spdlog::set_level(spdlog::level::err);
  caf::actor_system sys{actor_config()};
  MemoryPeerHub peers;
  MemoryDatagramHub datagrams;
  const std::string secret =
      temp_file("node-part.secret", "node-part-secret-" + std::to_string(getpid()) + "\n");
  std::vector<std::string> addrs;
  std::vector<std::unique_ptr<Node>> nodes;
  for (int i = 0; i < 3; ++i) {
    const int bus = 7001 + i;  // (in memory: no port is bound)
    addrs.push_back("127.0.0.1:" + std::to_string(bus));
    nodes.push_back(std::make_unique<Node>(
        cluster_member("part-" + std::to_string(i), bus, 7001, secret), sys, SystemClock::process(),
        NodeNets{&peers.node(addrs.back()), &datagrams}));
    std::string why;
    ASSERT_EQ(nodes.back()->start(why), 0) << why;
  }
  auto seen = [&](size_t i, const std::string& field) {
    Client c(nodes[i]->port(), 1000);
    return info_field(c.request({"INFO", "cluster"}) + c.request({"CLUSTER", "INFO"}), field);
  };
  auto wait_for = [&](const std::vector<size_t>& which, const std::string& field,
                      const std::string& want) {
    for (int t = 0; t < 400; ++t) {
      bool all = true;
      for (size_t i : which) all = all && seen(i, field) == want;
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  ASSERT_TRUE(wait_for({0, 1, 2}, "cluster_size", "3"));
  ASSERT_TRUE(wait_for({0, 1, 2}, "cluster_slots_awaited_here", "0"));
  ASSERT_TRUE(wait_for({0, 1, 2}, "replication_copies_pending", "0"));
  EXPECT_GT(datagrams.delivered(), 0u);
  // Keys the third node owns, counted through the first.
  const auto keys = keys_owned_by(*nodes[2], "part:", 5);
  ASSERT_EQ(keys.size(), 5u);
  Client via0(nodes[0]->port(), 5000);
  for (const auto& k : keys) EXPECT_EQ(via0.request({"INCRBY", k, "7"}), ":7");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // (past Δ: on the replicas)
  datagrams.isolate(addrs[2]);
  for (int i = 0; i < 2; ++i) {
    peers.cut(addrs[i], addrs[2]);
    peers.cut(addrs[2], addrs[i]);
  }
  ASSERT_TRUE(wait_for({0, 1}, "cluster_size", "2"));
  ASSERT_TRUE(wait_for({0, 1}, "cluster_slots_awaited_here", "0"));
  for (const auto& k : keys) EXPECT_EQ(via0.request({"GET", k}), "7") << k;
  datagrams.heal();
  peers.heal();
  ASSERT_TRUE(wait_for({0, 1, 2}, "cluster_size", "3"));
  ASSERT_TRUE(wait_for({0, 1, 2}, "cluster_slots_awaited_here", "0"));
  Client via2(nodes[2]->port(), 5000);
  for (const auto& k : keys) EXPECT_EQ(via2.request({"GET", k}), "7") << k;
  for (auto& n : nodes) n->stop();
  std::remove(secret.c_str());
}

TEST(NodeObject, APortInUseFailsTheStartWithWhy) {
  spdlog::set_level(spdlog::level::warn);
  caf::actor_system sys{actor_config()};
  NodeConfig c;
  c.bind = "127.0.0.1";
  c.port = 0;
  c.native_port = 0;
  c.admin_port = 0;
  c.io_threads = 1;
  c.shard_threads = 1;
  resolve_defaults(c);
  Node first(c, sys);
  std::string why;
  ASSERT_EQ(first.start(why), 0) << why;
  c.port = first.port();
  Node second(c, sys);
  EXPECT_EQ(second.start(why), 1);
  EXPECT_NE(why.find("cannot listen on 127.0.0.1 port " + std::to_string(first.port())),
            std::string::npos)
      << why;
  Client ok(first.port());
  EXPECT_EQ(ok.request({"PING"}), "+PONG");
}

// A handler that does not come back (an I/O thread stuck in one call): /healthz and /readyz
// say which thread and for how long, within the bound (3 s), and go back to 200 once it
// returns. The thread is held here by hand; nothing a client sends may do it.
TEST(NodeObject, AThreadThatDoesNotComeBackFailsHealthAndReadiness) {
  spdlog::set_level(spdlog::level::warn);
  caf::actor_system sys{actor_config()};
  NodeConfig c;
  c.bind = "127.0.0.1";
  c.port = 0;
  c.native_port = 0;
  c.admin_port = -1;
  c.io_threads = 2;
  c.shard_threads = 1;
  resolve_defaults(c);
  Node node(c, sys);
  std::string why;
  ASSERT_EQ(node.start(why), 0) << why;
  ASSERT_EQ(http_get(node.admin_port(), "/healthz").status, 200);
  std::atomic<bool> release{false};
  asio::post(*node.services().lanes.at(1).io, [&release] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  HttpReply health, ready;
  for (int i = 0; i < 100 && health.status != 503; ++i) {  // (up to 10 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    health = http_get(node.admin_port(), "/healthz");
  }
  ready = http_get(node.admin_port(), "/readyz");
  release = true;
  EXPECT_EQ(health.status, 503);
  EXPECT_NE(health.body.find("unhealthy: I/O thread 1 has not come back to its loop for"),
            std::string::npos)
      << health.body;
  EXPECT_EQ(ready.status, 503) << ready.body;
  for (int i = 0; i < 50 && health.status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    health = http_get(node.admin_port(), "/healthz");
  }
  EXPECT_EQ(health.status, 200) << health.body;
  node.stop();
}

}  // namespace
}  // namespace fg::testing
