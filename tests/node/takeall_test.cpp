// FG.TAKEALL on one node: every limit decided, charged only if all allow; COST; policies and
// inline limits; every refusal in words; ACL key rights; not inside MULTI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

int64_t remaining(Client& c, std::vector<std::string> peek) {
  const std::string r = ask(c, peek);
  const size_t at = r.find(':', r.find(':', r.find(':') + 1) + 1) + 1;
  return std::stoll(r.substr(at, r.find("\r\n", at) - at));
}

TEST(TakeAll, ChargedOnlyIfEveryLimitAllows) {
  const std::string cfg = temp_file("takeall.yaml",
                                    "policies:\n"
                                    "  per-user: {kind: token_bucket, capacity: 2, refill: 1, "
                                    "period: 1h}\n"
                                    "  per-room: {kind: sliding_log, limit: 5, window: 1h}\n");
  NodeProcess node({"--config", cfg});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  const std::vector<std::string> both = {"FG.TAKEALL", "u:1", "per-user", "room:1", "per-room"};
  EXPECT_EQ(ask(c, both),
            "*3\r\n:1\r\n*5\r\n:1\r\n:2\r\n:1\r\n:-1\r\n:3600000\r\n"
            "*5\r\n:1\r\n:5\r\n:4\r\n:-1\r\n:3600000\r\n");
  EXPECT_EQ(ask(c, both).substr(0, 7), "*3\r\n:1\r");
  // The user's bucket is empty: denied, and the room keeps its 3.
  const std::string denied = ask(c, both);
  EXPECT_EQ(denied.substr(0, 20), "*3\r\n:0\r\n*5\r\n:0\r\n:2\r\n") << denied;
  EXPECT_EQ(remaining(c, {"FG.PEEK", "room:1", "per-room", "COST", "0"}), 3);
  // COST, and inline limits beside a policy: the window would go past 5.
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "COST", "4", "room:1", "per-room", "x:1", "fixed_window", "100",
                    "60000"})
                .substr(0, 7),
            "*3\r\n:0\r");
  EXPECT_EQ(remaining(c, {"FG.PEEK", "x:1", "fixed_window", "100", "60000", "COST", "0"}), 100);
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "COST", "3", "room:1", "per-room", "x:1", "fixed_window", "100",
                    "60000"})
                .substr(0, 7),
            "*3\r\n:1\r");
  EXPECT_EQ(remaining(c, {"FG.PEEK", "x:1", "fixed_window", "100", "60000", "COST", "0"}), 97);
  EXPECT_EQ(remaining(c, {"FG.PEEK", "room:1", "per-room", "COST", "0"}), 0);
}

TEST(TakeAll, RefusalsAreClear) {
  NodeProcess node({"--user", "default on nopass ~* +@all", "--user", "app on >pw ~a:* +@all"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  EXPECT_EQ(ask(c, {"FG.TAKEALL"}), "-ERR wrong number of arguments for 'fg.takeall' command\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "COST", "2"}),
            "-ERR wrong number of arguments for 'fg.takeall' command\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "a:1"}),
            "-ERR wrong number of arguments for 'fg.takeall' command\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "a:1", "fixed_window", "5", "1000", "a:2"}),
            "-ERR syntax error\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "a:1", "nosuch"}), "-ERR unknown policy 'nosuch'\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "COST", "-1", "a:1", "fixed_window", "5", "1000"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "a:1", "concurrency", "5", "1000"}),
            "-ERR FG.TAKEALL is for rate limits: a concurrency limit is taken with FG.ACQUIRE\r\n");
  std::vector<std::string> many = {"FG.TAKEALL"};
  for (int i = 0; i < 65; ++i) {
    for (const std::string& w : {"k:" + std::to_string(i), std::string("fixed_window"),
                                 std::string("5"), std::string("1000")})
      many.push_back(w);
  }
  EXPECT_EQ(ask(c, many), "-ERR FG.TAKEALL takes 1 to 64 limits\r\n");
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKEALL", "a:1", "fixed_window", "5", "1000"}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}),
            "*1\r\n-ERR FG.TAKEALL is not allowed in a transaction or a script\r\n");
  // A user with rights on a:* only: any other key refuses the whole.
  Client app(node.port());
  EXPECT_EQ(ask(app, {"AUTH", "app", "pw"}), "+OK\r\n");
  EXPECT_EQ(ask(app, {"FG.TAKEALL", "a:1", "fixed_window", "5", "1000", "b:1", "fixed_window", "5",
                      "1000"}),
            "-NOPERM this user has no permissions to access one of the keys used as "
            "arguments\r\n");
  EXPECT_EQ(ask(app, {"FG.TAKEALL", "a:1", "fixed_window", "5", "1000"}).substr(0, 7),
            "*2\r\n:1\r");
  // Pipelined behind and before other commands, replies stay in order.
  c.send(encode({"PING"}) + encode({"FG.TAKEALL", "p:1", "fixed_window", "5", "1000"}) +
         encode({"ECHO", "after"}));
  EXPECT_EQ(read_value(c), "+PONG\r\n");
  EXPECT_EQ(read_value(c).substr(0, 7), "*2\r\n:1\r");
  EXPECT_EQ(read_value(c), "$5\r\nafter\r\n");
  // A long pipeline of them (batches start at most 16 at once): every one answered, in order.
  std::string many_in;
  for (int i = 0; i < 40; ++i) {
    many_in += encode({"FG.TAKEALL", "q:" + std::to_string(i % 3), "fixed_window", "100", "60000",
                       "q:x", "fixed_window", "100", "60000"});
  }
  c.send(many_in + encode({"PING"}));
  for (int i = 0; i < 40; ++i) {
    const std::string r = read_value(c);
    EXPECT_EQ(r.substr(0, 7), "*3\r\n:1\r") << i << " " << r;
  }
  EXPECT_EQ(read_value(c), "+PONG\r\n");
  EXPECT_EQ(remaining(c, {"FG.PEEK", "q:x", "fixed_window", "100", "60000", "COST", "0"}), 60);
}

}  // namespace
}  // namespace fg::testing
