// Pub/sub against the real thing: the same conversation — subscribers in RESP2 and RESP3,
// a publisher, a user held to some channels — with redis-server (Debian's) and with a
// Floodgate node, every reply compared byte for byte. Then what Redis leaves to each
// server: a subscriber that stops reading, and (cluster_test.cpp) messages across nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

TEST(PubSubDiff, AConversationAnswersAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  const std::string lua = "return redis.call('publish', 'news', 'from a script')";
  const std::vector<Step> steps = {
      // 0: a RESP2 subscriber, 1: a RESP3 one, 2: a publisher, 3: a user held to news*.
      {0, {"SUBSCRIBE", "news", "sport"}, 2},
      {1, {"HELLO", "3"}, 1, 0, false},
      {1, {"SUBSCRIBE", "news"}, 1},
      {1, {"PSUBSCRIBE", "n*"}, 1},
      {1, {"PSUBSCRIBE", "n*"}, 1},  // (again: the count stays)
      {2, {"PUBLISH", "news", "hi"}, 1},
      {0, {}, 1},
      {1, {}, 2},
      {2, {"PUBLISH", "sport", "goal"}, 1},
      {0, {}, 1},
      {2, {"PUBLISH", "nobody", "x"}, 1},
      {2, {"PUBSUB", "NUMSUB", "news", "sport", "nobody"}, 1},
      {2, {"PUBSUB", "NUMSUB"}, 1},
      {2, {"PUBSUB", "NUMPAT"}, 1},
      {2, {"PUBSUB", "CHANNELS", "n*"}, 1},
      {2, {"PUBSUB", "CHANNELS", "nothing*"}, 1},
      {2, {"PUBSUB", "NUMPAT", "extra"}, 1},
      {2, {"PUBSUB", "NOSUCH"}, 1},
      {2, {"SUBSCRIBE"}, 1},
      {2, {"PUBLISH", "news"}, 1},
      // RESP2 and subscribed: only the (un)subscribes, PING, QUIT and RESET.
      {0, {"PING"}, 1},
      {0, {"PING", "hello"}, 1},
      {0, {"GET", "k"}, 1},
      {0, {"SET", "k", "v"}, 1},
      {0, {"SUBSCRIBE", "news"}, 1},
      // RESP3 subscribed: everything runs.
      {1, {"GET", "k"}, 1},
      {1, {"PING"}, 1},
      // A script publishes.
      {2, {"EVAL", lua, "0"}, 1},
      {0, {}, 1},
      {1, {}, 2},
      {0, {"UNSUBSCRIBE", "news"}, 1},
      {0, {"PUNSUBSCRIBE"}, 1},
      {0, {"UNSUBSCRIBE"}, 1},
      {0, {"GET", "k"}, 1},
      {0, {"UNSUBSCRIBE"}, 1},
      {0, {"UNSUBSCRIBE", "never"}, 1},
      // Shard channels: a namespace of their own, without patterns.
      {0, {"SSUBSCRIBE", "s1", "s1"}, 2},
      {2, {"SPUBLISH", "s1", "m"}, 1},
      {0, {}, 1},
      {2, {"PUBLISH", "s1", "m"}, 1},
      {2, {"PUBSUB", "SHARDCHANNELS"}, 1},
      {2, {"PUBSUB", "SHARDNUMSUB", "s1", "s2"}, 1},
      {0, {"SUNSUBSCRIBE"}, 1},
      {0, {"SUNSUBSCRIBE"}, 1},
      {1, {"UNSUBSCRIBE"}, 1},
      {1, {"PUNSUBSCRIBE", "n*", "m*"}, 2},
      {2, {"PUBLISH", "news", "nobody left"}, 1},
      // A user held to news*: channels by pattern, pattern subscriptions literally.
      {2, {"ACL", "SETUSER", "held", "on", "nopass", "~*", "+@all", "resetchannels", "&news*"}, 1},
      {3, {"AUTH", "held", "x"}, 1},
      {3, {"SUBSCRIBE", "sport"}, 1},
      {3, {"SUBSCRIBE", "news1", "sport"}, 1},
      {3, {"PSUBSCRIBE", "n*"}, 1},
      {3, {"PSUBSCRIBE", "news*"}, 1},
      {3, {"PUNSUBSCRIBE"}, 1},
      {3, {"PUBLISH", "sport", "x"}, 1},
      {3, {"PUBLISH", "news2", "x"}, 1},
      {3, {"SPUBLISH", "weather", "x"}, 1},
      {3, {"UNSUBSCRIBE", "sport"}, 1},
      {3, {"EVAL", "return redis.pcall('publish', 'sport', 'x')", "0"}, 1},
      {2, {"ACL", "DRYRUN", "held", "publish", "sport", "x"}, 1},
      {2, {"ACL", "DRYRUN", "held", "publish", "news", "x"}, 1},
  };
  expect_same_conversation(node.port(), redis.port(), 4, steps);
}

// RESET leaves a connection as a new one: no transaction, watches, subscriptions or name,
// RESP2, the default user, replies on; allowed inside MULTI and in subscribe mode, before
// AUTH too. Compared with redis-server reply for reply.
TEST(ConnectionDiff, ResetLeavesTheConnectionAsANewOneAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  const std::vector<Step> steps = {
      // 0 resets itself again and again; 1 writes and publishes.
      {0, {"CLIENT", "SETNAME", "app"}, 1},
      {0, {"CLIENT", "REPLY", "OFF"}, 0},
      {0, {"SET", "a", "1"}, 0},
      {0, {"RESET"}, 1},  // (answered: replies are on again)
      {0, {"CLIENT", "GETNAME"}, 1},
      {0, {"HELLO", "3"}, 1, 0, false},
      {0, {"HSET", "h", "f", "v"}, 1},
      {0, {"MULTI"}, 1},
      {0, {"SET", "a", "2"}, 1},
      {0, {"RESET"}, 1},
      {0, {"EXEC"}, 1},
      {0, {"GET", "a"}, 1},
      {0, {"HGETALL", "h"}, 1},  // (RESP2 again: an array, not a map)
      {0, {"WATCH", "a"}, 1},
      {0, {"RESET"}, 1},
      {1, {"SET", "a", "3"}, 1},
      {0, {"MULTI"}, 1},
      {0, {"GET", "a"}, 1},
      {0, {"EXEC"}, 1},  // (nothing watched any more: it runs)
      {0, {"SUBSCRIBE", "ch"}, 1},
      {0, {"PSUBSCRIBE", "c*"}, 1},
      {0, {"GET", "a"}, 1},  // (subscribe mode: refused)
      {0, {"RESET"}, 1},
      {1, {"PUBLISH", "ch", "x"}, 1},  // (nobody hears it)
      {0, {"PING"}, 1},
      {0, {"HELLO", "3"}, 1, 0, false},
      {0, {"SUBSCRIBE", "ch"}, 1},
      {0, {"RESET"}, 1},
      {1, {"PUBLISH", "ch", "y"}, 1},
      {0, {"PING"}, 1},
      {1, {"ACL", "SETUSER", "u", "on", ">pw", "~*", "&*", "+@all"}, 1},
      {1, {"ACL", "SETUSER", "default", "resetpass", ">secret"}, 1},
      {0, {"AUTH", "u", "pw"}, 1},
      {0, {"ACL", "WHOAMI"}, 1},
      {0, {"RESET"}, 1},  // (back to the default user, who now needs a password)
      {0, {"ACL", "WHOAMI"}, 1},
      {0, {"AUTH", "secret"}, 1},
      {0, {"ACL", "WHOAMI"}, 1},
      {0, {"CLIENT", "REPLY", "OFF"}, 0},
      {0, {"CLIENT", "REPLY", "ON"}, 1},  // (answered, as Redis answers it)
      {0, {"RESET", "now"}, 1},
  };
  expect_same_conversation(node.port(), redis.port(), 2, steps);
}

// CLIENT LIST's sub=, psub=, ssub=, multi= and flags= of subscribed, transacting and blocked
// connections, field for field as redis-server shows them.
TEST(ConnectionDiff, ClientListShowsSubscriptionsTransactionsAndWaitsAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  const std::vector<Step> steps = {
      {0, {"SUBSCRIBE", "a", "b"}, 2},  {0, {"PSUBSCRIBE", "x*"}, 1},
      {1, {"SSUBSCRIBE", "s"}, 1},      {2, {"MULTI"}, 1},
      {2, {"SET", "k", "1"}, 1},        {2, {"GET", "k"}, 1},
      {3, {"BLPOP", "q", "5"}, 0, 100},
  };
  auto fields = [](const std::string& list) {  // per connection, in order: the fields compared
    std::vector<std::string> out;
    std::istringstream in(list);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("id=", 0) != 0) continue;  // (the bulk string's header)
      std::string got;
      for (const char* f : {" flags=", " sub=", " psub=", " ssub=", " multi="}) {
        const size_t at = line.find(f);
        if (at == std::string::npos) return std::vector<std::string>{"no" + std::string(f)};
        got += line.substr(at, line.find(' ', at + 1) - at);
      }
      out.push_back(got);
    }
    return out;
  };
  std::vector<std::vector<std::string>> seen;
  for (int port : {node.port(), redis.port()}) {
    std::vector<std::unique_ptr<Client>> conns;
    for (int i = 0; i < 5; ++i) conns.push_back(std::make_unique<Client>(port));
    ASSERT_TRUE(conns[4]->connected());
    converse(conns, steps);
    const std::string list = ask(*conns[4], {"CLIENT", "LIST"});
    seen.push_back(fields(list));
    ASSERT_EQ(seen.back().size(), 5u) << list;
  }
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_EQ(seen[0][0], " flags=P sub=2 psub=1 ssub=0 multi=-1");
}

// INFO errorstats and total_error_replies count the error replies clients get by their
// code, as redis-server does; CONFIG RESETSTAT starts them again.
TEST(ConnectionDiff, ErrorStatsCountAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  const std::vector<Step> steps = {
      {0, {"SET", "s", "1"}, 1},
      {0, {"LPUSH", "s", "x"}, 1},  // WRONGTYPE
      {0, {"CONFIG", "RESETSTAT"}, 1},
      {0, {"LPUSH", "s", "x"}, 1},
      {0, {"INCR", "nope", "x"}, 1},  // ERR wrong number of arguments
      {0, {"NOSUCHCOMMAND"}, 1},
      {0, {"EVAL", "return redis.error_reply('MY_ERR_CODE custom msg')", "0"}, 1},
      {0, {"EVAL", "return redis.error_reply('')", "0"}, 1},
      {0, {"EVALSHA", "0000000000000000000000000000000000000000", "0"}, 1},  // NOSCRIPT
      {0, {"CLIENT", "REPLY", "OFF"}, 0},
      {0, {"LPUSH", "s", "y"}, 0},  // (counted though not sent)
      {0, {"CLIENT", "REPLY", "ON"}, 1},
      {0, {"INFO", "errorstats"}, 1},
  };
  auto [fg, rc] = expect_same_conversation(node.port(), redis.port(), 1, steps);
  const auto total = [](Client& c) {
    const std::string info = ask(c, {"INFO", "stats"});
    const size_t at = info.find("total_error_replies:");
    return at == std::string::npos ? std::string("none")
                                   : info.substr(at, info.find('\r', at) - at);
  };
  EXPECT_EQ(total(*fg[0]), "total_error_replies:7");
  EXPECT_EQ(total(*fg[0]), total(*rc[0]));
  const auto lpush = [](Client& c) {  // its calls and failures (not its time)
    const std::string info = ask(c, {"INFO", "commandstats"});
    const size_t at = info.find("cmdstat_lpush:");
    if (at == std::string::npos) return std::string("none");
    const std::string line = info.substr(at, info.find('\r', at) - at);
    return line.substr(0, line.find(',')) + line.substr(line.find(",failed_calls"));
  };
  EXPECT_EQ(lpush(*fg[0]), "cmdstat_lpush:calls=2,failed_calls=2");
  EXPECT_EQ(lpush(*fg[0]), lpush(*rc[0]));
  // Codes a script makes up are bounded: past 128, new ones count together.
  for (int i = 0; i < 140; ++i) {
    ask(*fg[0],
        {"EVAL", "return redis.error_reply('C' .. ARGV[1] .. ' x')", "0", std::to_string(i)});
  }
  const std::string stats = ask(*fg[0], {"INFO", "errorstats"});
  EXPECT_NE(stats.find("errorstat_ERRORSTATS_OVERFLOW:count="), std::string::npos) << stats;
  size_t codes = 0;
  for (size_t at = stats.find("errorstat_"); at != std::string::npos;
       at = stats.find("errorstat_", at + 1))
    ++codes;
  EXPECT_EQ(codes, 129u) << stats;  // (128 codes and the overflow)
}

// A subscriber that stops reading is closed at client-output-buffer-limit's pubsub hard
// limit, as Redis closes it; the publisher and everyone else go on.
TEST(PubSub, ASubscriberThatStopsReadingIsClosedAtThePubsubHardLimit) {
  NodeProcess node({"--client-output-buffer-limit", "pubsub 256kb 0 0"});
  ASSERT_TRUE(node.alive());
  Client stuck(node.port());
  stuck.send(encode({"SUBSCRIBE", "feed"}));
  ASSERT_EQ(read_value(stuck), "*3\r\n$9\r\nsubscribe\r\n$4\r\nfeed\r\n:1\r\n");
  Client pub(node.port());
  const std::string payload(8192, 'x');
  // (the kernel's buffers take some megabytes first: 8000 × 8 KB is well past them)
  bool closed = false;
  for (int i = 0; i < 8000 && !closed; ++i) {
    pub.send(encode({"PUBLISH", "feed", payload}));
    const std::string r = read_value(pub);
    ASSERT_TRUE(r == ":1\r\n" || r == ":0\r\n") << r;
    closed = r == ":0\r\n";
  }
  EXPECT_TRUE(closed) << "the subscriber was never let go";
  pub.send(encode({"PUBSUB", "NUMSUB", "feed"}));
  EXPECT_EQ(read_value(pub), "*2\r\n$4\r\nfeed\r\n:0\r\n");
  // Another subscriber is served as before.
  Client fresh(node.port());
  fresh.send(encode({"SUBSCRIBE", "feed"}));
  ASSERT_EQ(read_value(fresh), "*3\r\n$9\r\nsubscribe\r\n$4\r\nfeed\r\n:1\r\n");
  pub.send(encode({"PUBLISH", "feed", "after"}));
  EXPECT_EQ(read_value(pub), ":1\r\n");
  EXPECT_EQ(read_value(fresh), "*3\r\n$7\r\nmessage\r\n$4\r\nfeed\r\n$5\r\nafter\r\n");
}

// Subscribers are silent by design: the idle timeout does not close them (Redis's rule),
// while a silent plain client goes.
TEST(PubSub, ASubscriberOutlivesTheIdleTimeout) {
  NodeProcess node({"--timeout", "1"});
  ASSERT_TRUE(node.alive());
  Client sub(node.port()), idle(node.port());
  sub.send(encode({"SUBSCRIBE", "c"}));
  ASSERT_EQ(read_value(sub), "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n");
  idle.send(encode({"PING"}));
  ASSERT_EQ(read_value(idle), "+PONG\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  Client pub(node.port());
  pub.send(encode({"PUBLISH", "c", "still here"}));
  EXPECT_EQ(read_value(pub), ":1\r\n");
  EXPECT_EQ(read_value(sub), "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$10\r\nstill here\r\n");
  EXPECT_EQ(idle.recv_n(1), "");  // (closed)
}

}  // namespace
}  // namespace fg::testing
