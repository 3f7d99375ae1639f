// The blocking pops against the real thing: one conversation — a client that waits, others
// that push, time-outs, RESP3, a transaction, a pipeline behind a waiting command — with
// redis-server (Debian's) and with a Floodgate node of several shards (keys apart, so a wake
// and the pop that follows cross shards), every reply compared byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

TEST(BlockingDiff, WaitingClientsAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});
  ASSERT_TRUE(node.alive());
  const std::vector<Step> steps = {
      // 0 waits, 1 pushes, 2 speaks RESP3.
      {0, {"BLPOP", "q:a", "q:b", "q:c", "5"}, 0, 50},
      {1, {"RPUSH", "q:c", "x", "y"}, 1},
      {0, {}, 1},                            // [q:c, x]
      {0, {"BLPOP", "q:a", "q:c", "5"}, 1},  // (y is there: at once)
      {0, {"BRPOP", "q:a", "0.05"}, 1},      // times out: a null array
      {0, {"BLPOP", "q:a", "0.001"}, 1},     // (rounded up to 1 ms, as Redis: not 0, for good)
      {0, {"BZPOPMIN", "z:a", "z:b", "5"}, 0, 50},
      {1, {"ZADD", "z:b", "2", "two", "1", "one"}, 1},
      {0, {}, 1},  // [z:b, one, 1]
      {0, {"BZPOPMAX", "z:b", "0"}, 1},
      {0, {"BRPOPLPUSH", "src", "dst", "5"}, 0, 50},
      {1, {"LPUSH", "src", "m"}, 1},
      {0, {}, 1},
      {1, {"LRANGE", "dst", "0", "-1"}, 1},
      {0, {"BLMPOP", "5", "2", "k:1", "k:2", "RIGHT", "COUNT", "2"}, 0, 50},
      {1, {"RPUSH", "k:2", "a", "b", "c"}, 1},
      {0, {}, 1},  // [k:2, [c, b]]
      {0, {"BLMOVE", "k:2", "k:1", "LEFT", "LEFT", "5"}, 1},
      {0, {"BZMPOP", "0.05", "1", "z:none", "MIN"}, 1},
      // A pipeline behind a waiting command: its replies come after the pop's.
      {0, {"BLPOP", "p:1", "5"}, 0, 50},
      {0, {"PING"}, 0, 50},
      {1, {"LPUSH", "p:1", "v"}, 1},
      {0, {}, 2},
      // A key that turns into a string while a client waits keeps it waiting.
      {0, {"BLPOP", "w:1", "0.3"}, 0, 50},
      {1, {"MULTI"}, 1},
      {1, {"LPUSH", "w:1", "a"}, 1},
      {1, {"DEL", "w:1"}, 1},
      {1, {"SET", "w:1", "text"}, 1},
      {1, {"EXEC"}, 1},
      {0, {}, 1},  // times out
      // Errors, and a transaction (tried once).
      {0, {"BLPOP", "q:a", "-1"}, 1},
      {0, {"BLPOP", "q:a", "x"}, 1},
      {0, {"BLPOP", "w:1", "1"}, 1},  // WRONGTYPE at once
      {0, {"BLMPOP", "1", "0", "q:a", "LEFT"}, 1},
      {0, {"MULTI"}, 1},
      {0, {"BLPOP", "q:a", "0"}, 1},
      {0, {"BRPOPLPUSH", "q:a", "q:b", "0"}, 1},
      {0, {"EXEC"}, 1},
      {2, {"HELLO", "3"}, 1, 0, false},
      {2, {"BLPOP", "q:a", "0.05"}, 1},
      {2, {"BZPOPMIN", "z:none", "0"}, 0, 50},
      {1, {"ZADD", "z:none", "1.5", "m"}, 1},
      {2, {}, 1},
  };
  expect_same_conversation(node.port(), redis.port(), 3, steps);
}

// Many clients waiting on one key: each push is taken by one of them, each pop wakes the
// next, and none is left waiting while the key holds elements.
TEST(Blocking, ManyWaitersOnOneKeyAreEachServedOnce) {
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  constexpr int kWaiters = 20;
  std::vector<std::unique_ptr<Client>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<Client>(node.port()));
    ASSERT_TRUE(waiters.back()->send(encode({"BLPOP", "jobs", "10"})));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Client pusher(node.port());
  std::vector<std::string> push = {"RPUSH", "jobs"};
  for (int i = 0; i < kWaiters; ++i) push.push_back("j" + std::to_string(i));
  ASSERT_TRUE(pusher.send(encode(push)));
  EXPECT_EQ(read_value(pusher), ":" + std::to_string(kWaiters) + "\r\n");
  std::vector<std::string> got;
  for (auto& w : waiters) got.push_back(read_value(*w));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(std::unique(got.begin(), got.end()), got.end()) << "an element served twice";
  for (const auto& g : got) EXPECT_EQ(g.rfind("*2\r\n$4\r\njobs\r\n", 0), 0u) << g;
  ASSERT_TRUE(pusher.send(encode({"LLEN", "jobs"})));
  EXPECT_EQ(read_value(pusher), ":0\r\n");
}

}  // namespace
}  // namespace fg::testing
