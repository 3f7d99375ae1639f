// RESP sessions in the simulator: a client talks to a simulated cluster over an in-memory
// stream, served by the same connection shell as a socket (node/client_connection.hpp).
// Virtual time makes the connection's deadlines, seconds long, cost nothing to test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "world.hpp"

namespace fg::sim {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

std::string command(const std::vector<std::string>& words) {
  std::string out = "*" + std::to_string(words.size()) + "\r\n";
  for (const auto& w : words) out += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return out;
}

class SimSession : public ::testing::Test {
 protected:
  void start(size_t nodes) {
    world_ = std::make_unique<World>(7, static_cast<int>(nodes));
    for (size_t i = 0; i < nodes; ++i) world_->start(i);
    int64_t t = 0;
    while (!world_->formed() && t < 60 * kS) world_->run_until(t += 50 * kMs);
    ASSERT_TRUE(world_->formed());
  }
  void run_for(int64_t ns) { world_->run_until(world_->now() + ns); }
  // Sends, runs the world a little, and takes what the node wrote back.
  std::string ask(MemoryClient& c, const std::string& bytes) {
    c.send(bytes);
    run_for(20 * kMs);
    return c.take();
  }
  void TearDown() override {
    for (auto* c : clients_) c->close();
    if (world_) run_for(10 * kMs);
  }
  MemoryClient& client(size_t node, size_t window = 256 * 1024) {
    owned_.push_back(std::make_unique<MemoryClient>(window));
    clients_.push_back(owned_.back().get());
    world_->connect(node, *owned_.back());
    run_for(kMs);
    return *owned_.back();
  }
  std::unique_ptr<World> world_;
  std::vector<std::unique_ptr<MemoryClient>> owned_;
  std::vector<MemoryClient*> clients_;
};

TEST_F(SimSession, ACommandForAnyNodeIsAnsweredInOrder) {
  start(3);
  MemoryClient& c = client(0);
  EXPECT_EQ(ask(c, command({"PING"})), "+PONG\r\n");
  // Keys of every node: those node 0 does not own are forwarded to their owners.
  std::string pipeline, want;
  for (int i = 0; i < 12; ++i) {
    pipeline += command({"INCR", "sim:k" + std::to_string(i)});
    want += ":1\r\n";
  }
  pipeline += command({"INCR", "sim:k0"});
  want += ":2\r\n";
  EXPECT_EQ(ask(c, pipeline), want);
  bool elsewhere = false;
  for (int i = 0; i < 12; ++i) elsewhere |= world_->owner_of("sim:k" + std::to_string(i)) != 0;
  EXPECT_TRUE(elsewhere) << "no key of another node: nothing was forwarded";
  // A redis-cell limit: a burst of 5 (max_burst 4), then refused.
  std::string limited;  // CL.THROTTLE's first field: 0 allowed, 1 limited
  for (int i = 0; i < 6; ++i) {
    const std::string reply = ask(c, command({"CL.THROTTLE", "sim:user", "4", "10", "60"}));
    ASSERT_EQ(reply.substr(0, 5), "*5\r\n:");
    limited += reply[5];
  }
  EXPECT_EQ(limited, "000001");
  EXPECT_EQ(ask(c, command({"MULTI"}) + command({"INCR", "{t}a"}) + command({"INCR", "{t}b"}) +
                       command({"EXEC"})),
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:1\r\n");
}

TEST_F(SimSession, AnIdleClientIsClosedAtItsTimeoutInVirtualTime) {
  world_ = std::make_unique<World>(7, 1);
  world_->set_config([](NodeConfig& c) { c.timeout_s = 10; });
  world_->start(0);
  int64_t t = 0;
  while (!world_->formed() && t < 60 * kS) world_->run_until(t += 50 * kMs);
  MemoryClient& c = client(0);
  EXPECT_EQ(ask(c, command({"PING"})), "+PONG\r\n");
  run_for(8 * kS);
  EXPECT_FALSE(c.closed_by_node());
  EXPECT_EQ(ask(c, command({"PING"})), "+PONG\r\n");  // a request starts the count again
  run_for(9 * kS);
  EXPECT_FALSE(c.closed_by_node());
  run_for(3 * kS);
  EXPECT_TRUE(c.closed_by_node());
}

TEST_F(SimSession, AHalfSentCommandIsDroppedAtTheQueryDeadline) {
  start(1);
  MemoryClient& c = client(0);
  c.send("*2\r\n$4\r\nECHO\r\n$5\r\nhel");
  run_for(29 * kS);
  EXPECT_FALSE(c.closed_by_node());
  run_for(3 * kS);
  EXPECT_TRUE(c.closed_by_node());
  EXPECT_EQ(world_->node(0).node->services().counters.dropped_timeout.load(), 1);
}

TEST_F(SimSession, AClientThatStopsReadingIsDroppedAtTheOutputTimeout) {
  start(1);
  MemoryClient& c = client(0, 1024);  // its side takes 1 KiB of unread replies
  c.set_reading(false);
  std::string pings;
  for (int i = 0; i < 500; ++i) pings += command({"PING"});
  c.send(pings);
  run_for(25 * kS);
  EXPECT_FALSE(c.closed_by_node());
  run_for(7 * kS);
  EXPECT_TRUE(c.closed_by_node());
  EXPECT_EQ(world_->node(0).node->services().counters.dropped_slow.load(), 1);
}

TEST_F(SimSession, AClientThatReadsSlowlyGetsEveryReply) {
  start(1);
  MemoryClient& c = client(0, 1024);
  std::string pings;
  for (int i = 0; i < 500; ++i) pings += command({"PING"});
  c.send(pings);
  std::string got;
  for (int i = 0; i < 100 && got.size() < 500 * 7; ++i) {
    run_for(100 * kMs);
    got += c.take();
  }
  std::string want;
  for (int i = 0; i < 500; ++i) want += "+PONG\r\n";
  EXPECT_EQ(got, want);
  EXPECT_FALSE(c.closed_by_node());
}

}  // namespace
}  // namespace fg::sim
