// FG.TAKE ... WAIT against a real node: a take that would be allowed within its wait is
// answered allowed when it is due (the replies after it on the connection wait too), in
// arrival order, never before its turn; one that could not be is denied at once. Waiters are
// bounded per key (max-waiters-per-key) and a connection that closes gives its place back.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "floodgate/client.hpp"
#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

using Clock = std::chrono::steady_clock;
int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// One token, one more every 200 ms.
const std::vector<std::string> kBucket = {"token_bucket", "1", "1", "200"};
std::vector<std::string> take(const std::string& key, std::vector<std::string> more = {}) {
  std::vector<std::string> w = {"FG.TAKE", key};
  w.insert(w.end(), kBucket.begin(), kBucket.end());
  w.insert(w.end(), more.begin(), more.end());
  return w;
}
std::string first_line(const std::string& reply) { return reply.substr(0, reply.find("\r\n", 5)); }

TEST(Wait, TakesAreAnsweredWhenDueInArrivalOrder) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client a(node.port()), b(node.port()), c(node.port());
  EXPECT_EQ(first_line(ask(a, take("w"))), "*5\r\n:1");  // (the one token)
  // a waits for the next token (due in ~200 ms); the PING behind it waits with it.
  const auto t0 = Clock::now();
  a.send(encode(take("w", {"WAIT", "1000"})) + encode({"PING"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // b comes later: its turn is after a's (~400 ms); c does not wait and does not jump ahead.
  b.send(encode(take("w", {"WAIT", "1000"})));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string denied = ask(c, take("w"));
  EXPECT_EQ(first_line(denied), "*5\r\n:0") << denied;
  EXPECT_LT(ms_since(t0), 150);  // (c was answered at once)
  const std::string ra = read_value(a);
  const int64_t at_a = ms_since(t0);
  EXPECT_EQ(ra.substr(0, 16), "*5\r\n:1\r\n:1\r\n:0\r\n") << ra;  // (as it is when due)
  EXPECT_EQ(read_value(a), "+PONG\r\n");
  const std::string rb = read_value(b);
  const int64_t at_b = ms_since(t0);
  EXPECT_EQ(first_line(rb), "*5\r\n:1") << rb;
  EXPECT_GE(at_a, 170);  // (due ~200 ms after the first token was taken)
  EXPECT_GE(at_b, 370);  // (~400 ms: the token after a's)
  EXPECT_GT(at_b, at_a);
  // A take that would not be allowed within its wait is denied at once, with its retry-after.
  const auto t1 = Clock::now();
  EXPECT_EQ(first_line(ask(c, take("w", {"WAIT", "10"}))), "*5\r\n:0");
  EXPECT_LT(ms_since(t1), 150);
}

// (Scripts cannot call FG.* commands at all.)
TEST(Wait, BadWaitsAreRefusedAndTransactionsDoNotWait) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client a(node.port());
  const std::string range = "-ERR WAIT must be between 0 and 60000 milliseconds\r\n";
  EXPECT_EQ(ask(a, take("e", {"WAIT", "-1"})), range);
  EXPECT_EQ(ask(a, take("e", {"WAIT", "60001"})), range);
  EXPECT_EQ(ask(a, take("e", {"WAIT", "soon"})), range);
  EXPECT_EQ(ask(a, {"FG.TAKE", "e2", "fixed_window", "1", "1000", "WAIT", "100"}),
            "-ERR WAIT is for token_bucket and gcra limits (their debt keeps the waiters in "
            "order)\r\n");
  EXPECT_EQ(ask(a, {"FG.PEEK", "e", "token_bucket", "1", "1", "200", "WAIT", "100"}),
            "-ERR syntax error\r\n");
  EXPECT_EQ(first_line(ask(a, take("e", {"WAIT", "0"}))), "*5\r\n:1");  // (WAIT 0: no wait)
  // In a transaction it is decided at once, as a blocking command is there.
  EXPECT_EQ(ask(a, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(a, take("e", {"WAIT", "1000"})), "+QUEUED\r\n");
  const auto t0 = Clock::now();
  const std::string exec = ask(a, {"EXEC"});
  EXPECT_EQ(exec.substr(0, 11), "*1\r\n*5\r\n:0\r") << exec;
  EXPECT_LT(ms_since(t0), 150);
}

// A waiter whose connection closes gives its place back; past max-waiters-per-key the take
// is refused (and its place given back at once).
TEST(Wait, PlacesAreBoundedAndGivenBack) {
  NodeProcess node({"--max-waiters-per-key", "1"});
  ASSERT_TRUE(node.alive());
  Client a(node.port());
  auto remaining = [&](const std::string& key) {
    const std::string r = ask(a, {"FG.PEEK", key, "token_bucket", "1", "1", "200", "COST", "0"});
    const size_t at = r.find(":", r.find(":", r.find(":") + 1) + 1) + 1;
    return std::stoll(r.substr(at, r.find("\r\n", at) - at));
  };
  EXPECT_EQ(first_line(ask(a, take("p"))), "*5\r\n:1");
  {
    Client gone(node.port());
    gone.send(encode(take("p", {"WAIT", "5000"})));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(remaining("p"), -1);  // (its place: the next token)
    // Only one may wait on the key: a second waiter is refused, and its place given back.
    Client second(node.port());
    EXPECT_EQ(ask(second, take("p", {"WAIT", "5000"})),
              "-ERR too many requests are waiting here (max-waiters, max-waiters-per-key)\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(remaining("p"), -1);
  }  // (closed while waiting)
  bool back = false;
  for (int i = 0; i < 50 && !back; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    back = remaining("p") >= 0;
  }
  EXPECT_TRUE(back) << "the closed connection's place was not given back";
  EXPECT_EQ(info_field(a.request({"INFO", "floodgate"}), "waiting_takes"), "0");
}

TEST(Wait, TheNativeClientWaitsToo) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  floodgate::Client::Options opt;
  opt.seeds = {"127.0.0.1:" + std::to_string(node.native_port())};
  floodgate::Client c(opt);
  const auto bucket = floodgate::Limit::token_bucket(1, 1, 200);
  ASSERT_TRUE(c.take("n", bucket)->allowed);
  const auto t0 = Clock::now();
  auto waited = c.take_waiting("n", bucket, std::chrono::milliseconds(1000));
  ASSERT_TRUE(waited.ok()) << waited.error();
  EXPECT_TRUE(waited->allowed);
  EXPECT_GE(ms_since(t0), 170);
  auto no = c.take_waiting("n", bucket, std::chrono::milliseconds(10));
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->allowed);
  EXPECT_GT(no->retry_after_ms, 10);
  auto wrong =
      c.take_waiting("nw", floodgate::Limit::sliding_log(1, 1000), std::chrono::milliseconds(100));
  EXPECT_EQ(wrong.error(),
            "ERR WAIT is for token_bucket and gcra limits (their debt keeps the waiters in order)");
  auto range = c.take_waiting("n", bucket, std::chrono::milliseconds(70000));
  EXPECT_EQ(range.error(), "ERR WAIT must be between 0 and 60000 milliseconds");
}

}  // namespace
}  // namespace fg::testing
