// MemoryPeerHub and MemoryDatagramHub: peer requests and gossip datagrams between nodes of
// one process, with cuts, loss and delay on purpose.
#include "peer_net.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "datagram_net.hpp"

namespace fg {
namespace {

struct Outcome {
  std::optional<PeerStatus> status;
  std::string body;
};

PeerCallback into(Outcome& o) {
  return [&o](PeerStatus st, std::string body) {
    o.status = st;
    o.body = std::move(body);
  };
}

class MemoryPeerHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener = hub.node("b:1").listen(
        io_b, "b", 1, [this](uint32_t kind, std::string body, PeerRespond respond) {
          ++served;
          bodies.push_back(body);
          if (kind == 9) return held.push_back(std::move(respond));  // answered later, or never
          respond(PeerStatus::kOk, "echo " + body, {});
        });
    link = hub.node("a:1").connect(io_a, "b:1");
  }
  // Runs both ends until `o` has its outcome (at most `ms` of real time).
  void run_until(const Outcome& o, int ms = 2000) {
    for (int i = 0; i < ms && !o.status; ++i) {
      io_b.poll();
      io_a.run_for(std::chrono::milliseconds(1));
    }
  }

  MemoryPeerHub hub;
  asio::io_context io_a, io_b;
  // (kept running while idle: work posted later must still run)
  asio::executor_work_guard<asio::io_context::executor_type> keep_a{io_a.get_executor()},
      keep_b{io_b.get_executor()};
  std::unique_ptr<PeerListener> listener;
  std::shared_ptr<PeerLink> link;
  int served = 0;
  std::vector<std::string> bodies;  // as served
  std::vector<PeerRespond> held;
};

TEST_F(MemoryPeerHubTest, ACallIsServedOnTheListenersSideAndAnsweredOnTheCallers) {
  Outcome o;
  link->call(1, "hi", std::chrono::milliseconds(1000), into(o));
  EXPECT_EQ(served, 0);  // (nothing runs before the io_contexts do)
  run_until(o);
  ASSERT_TRUE(o.status);
  EXPECT_EQ(*o.status, PeerStatus::kOk);
  EXPECT_EQ(o.body, "echo hi");
  EXPECT_EQ(hub.calls(), 1u);
}

TEST_F(MemoryPeerHubTest, ACutCallerIsUnavailableAndACutAnswerTimesOut) {
  hub.cut("a:1", "b:1");
  Outcome refused;
  link->call(1, "x", std::chrono::milliseconds(1000), into(refused));
  run_until(refused);
  EXPECT_EQ(refused.status, PeerStatus::kUnavailable);
  EXPECT_EQ(served, 0);
  hub.heal();
  hub.cut("b:1", "a:1");  // the call arrives, its answer does not
  Outcome lost;
  link->call(1, "y", std::chrono::milliseconds(50), into(lost));
  run_until(lost);
  EXPECT_EQ(served, 1);
  EXPECT_EQ(lost.status, PeerStatus::kTimeout);
}

TEST_F(MemoryPeerHubTest, NoListenerIsUnavailableAndAbortedCallsEndAtOnce) {
  Outcome nobody;
  hub.node("a:1").connect(io_a, "c:1")->call(1, "x", std::chrono::milliseconds(1000), into(nobody));
  run_until(nobody);
  EXPECT_EQ(nobody.status, PeerStatus::kUnavailable);
  Outcome waiting;
  link->call(9, "never answered", std::chrono::seconds(60), into(waiting));
  for (int i = 0; i < 20; ++i) {
    io_b.poll();
    io_a.run_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(waiting.status);
  link->abort_calls();
  run_until(waiting, 100);
  EXPECT_EQ(waiting.status, PeerStatus::kTimeout);
  held.front()(PeerStatus::kOk, "too late", {});  // a late answer is dropped
  io_b.poll();
  io_a.poll();
  EXPECT_EQ(waiting.body, "");
}

TEST_F(MemoryPeerHubTest, AnAddressIsListenedAtOnceAndFreedWithItsListener) {
  EXPECT_THROW(hub.node("b:1").listen(io_b, "b", 1, [](uint32_t, std::string, PeerRespond) {}),
               std::system_error);
  listener.reset();
  EXPECT_NO_THROW(hub.node("b:1").listen(io_b, "b", 1, [](uint32_t, std::string, PeerRespond) {}));
}

TEST_F(MemoryPeerHubTest, DelayedCallsArriveLaterInTheOrderTheyWereMade) {
  hub.set_delay(std::chrono::milliseconds(30), 7);
  std::vector<Outcome> out(6);
  for (size_t i = 0; i < out.size(); ++i)
    link->call(1, std::to_string(i), std::chrono::milliseconds(1000), into(out[i]));
  io_a.poll();
  io_b.poll();
  EXPECT_EQ(served, 0);  // (on their way)
  run_until(out.back());
  ASSERT_EQ(bodies.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(bodies[i], std::to_string(i));  // one link keeps its order, as TCP does
    EXPECT_EQ(out[i].status, PeerStatus::kOk);
  }
  hub.set_delay(std::chrono::nanoseconds(0));
  Outcome now;
  link->call(1, "now", std::chrono::milliseconds(1000), into(now));
  io_a.poll();
  io_b.poll();
  EXPECT_EQ(bodies.back(), "now");  // no delay: delivered on the listener's next turn
}

TEST(MemoryDatagramHubTest, LossDropsAndDelayHoldsDatagrams) {
  MemoryDatagramHub hub;
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::vector<std::string> got;
  auto a = hub.open(io, "a", 1, nullptr, [](const std::string&, std::string_view) {});
  auto b = hub.open(io, "b", 1, nullptr, [&got](const std::string&, std::string_view bytes) {
    got.emplace_back(bytes);
  });
  hub.set_weather(1.0, std::chrono::nanoseconds(0), 3);  // everything lost
  for (int i = 0; i < 20; ++i) a->send("b:1", "lost");
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(got.empty());
  hub.set_weather(0, std::chrono::milliseconds(20), 3);  // all arrive, late
  for (int i = 0; i < 20; ++i) a->send("b:1", std::to_string(i));
  io.poll();
  EXPECT_LT(got.size(), 20u);
  for (int i = 0; i < 200 && got.size() < 20; ++i) io.run_for(std::chrono::milliseconds(1));
  EXPECT_EQ(got.size(), 20u);
  hub.set_weather(0.5, std::chrono::nanoseconds(0), 3);  // about half
  got.clear();
  for (int i = 0; i < 200; ++i) a->send("b:1", "x");
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_GT(got.size(), 50u);
  EXPECT_LT(got.size(), 150u);
}

}  // namespace
}  // namespace fg
