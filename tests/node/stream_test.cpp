// Streams against the real thing: seeded command sequences (XADD with every option, the
// ranges, XDEL, XTRIM exact and approximate, XSETID, XREAD, XINFO, keys of another type,
// transactions; then the same with consumer groups: XGROUP, XREADGROUP, XACK, XPENDING,
// XCLAIM, XAUTOCLAIM) to redis-server (Debian's) and to a Floodgate node of several shards,
// every reply compared byte for byte; conversations with clients waiting in XREAD BLOCK and
// XREADGROUP BLOCK; and the bounds a stream is held to.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

class StreamGenerator {
 public:
  // `groups`: most commands are consumer groups' (on the same keys), the rest as without.
  explicit StreamGenerator(uint64_t seed, bool groups = false) : rng_(seed), groups_(groups) {}

  std::vector<std::string> next() {
    if (in_multi_ < 0 && pick(30) == 0) {
      in_multi_ = 1 + pick(4);
      return {"MULTI"};
    }
    if (in_multi_ == 0) {
      in_multi_ = -1;
      return {pick(5) == 0 ? "DISCARD" : "EXEC"};
    }
    if (in_multi_ > 0) --in_multi_;
    std::vector<std::string> w = command();
    if (pick(40) == 0 && w.size() > 1) w.pop_back();  // (arities, options cut short)
    return w;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  template <class T>
  const T& one(const std::vector<T>& v) {
    return v[static_cast<size_t>(pick(static_cast<int>(v.size())))];
  }
  std::string key() { return one<std::string>({"s:a", "s:b", "{t}s", "{t}x", "str"}); }
  // IDs near those already given, and bad ones (never "*": the two servers' clocks differ).
  std::string id() {
    const uint64_t ms = next_ms_ + static_cast<uint64_t>(pick(4)) - 2;
    switch (pick(12)) {
      case 0:
        return one<std::string>({"0-0", "0", "-", "+", "abc", "1-x", "",
                                 "18446744073709551615-18446744073709551615",
                                 "18446744073709551616", "-1", "+5", " 7", "007-1", "1-*"});
      case 1:
        return std::to_string(ms) + "-*";
      case 2:
        return std::to_string(ms);
      default:
        if (pick(3) == 0) ++next_ms_;
        return std::to_string(ms) + "-" + std::to_string(pick(4));
    }
  }
  std::string bound() {
    switch (pick(6)) {
      case 0:
        return one<std::string>(
            {"-", "+", "(0", "(+", "(-", "x", "0", "(18446744073709551615-18446744073709551615"});
      case 1:
        return "(" + id();
      default:
        return id();
    }
  }
  std::string count() { return one<std::string>({"0", "1", "2", "5", "-1", "x", "100"}); }
  void trim(std::vector<std::string>& w, bool must) {
    if (!must && pick(2) == 0) return;
    const bool len = pick(2) == 0;
    w.push_back(len ? one<std::string>({"MAXLEN", "maxlen"}) : "MINID");
    const int how = pick(3);
    if (how == 1) w.push_back("~");
    if (how == 2) w.push_back("=");
    w.push_back(len ? one<std::string>({"0", "1", "3", "7", "12", "-1", "x"}) : id());
    if (pick(4) == 0) {
      w.push_back("LIMIT");
      w.push_back(one<std::string>({"0", "1", "5", "-1", "x"}));
    }
    if (pick(30) == 0) w.push_back(one<std::string>({"MAXLEN", "MINID", "BOGUS"}));
  }
  std::string group() { return one<std::string>({"g1", "g1", "g2", "G"}); }
  std::string consumer() { return one<std::string>({"alice", "alice", "bob", "", "c3"}); }
  // (an idle time no entry reaches in a test, or none: both servers agree on either)
  std::string idle() { return one<std::string>({"0", "0", "3600000", "-5", "x"}); }
  std::vector<std::string> group_command() {
    switch (pick(11)) {
      case 0: {
        std::vector<std::string> w = {"XGROUP", one<std::string>({"CREATE", "create", "SETID"}),
                                      key(), group(), one<std::string>({"$", "0", "-", "+", "x"})};
        if (pick(3) == 0) w.back() = id();
        if (pick(3) == 0) w.push_back("MKSTREAM");
        if (pick(5) == 0)
          w.push_back("ENTRIESREAD"), w.push_back(one<std::string>({"0", "2", "-1", "-2", "x"}));
        return w;
      }
      case 1: {
        const std::string sub =
            one<std::string>({"DESTROY", "CREATECONSUMER", "DELCONSUMER", "BOGUS", "HELP"});
        std::vector<std::string> w = {"XGROUP", sub};
        if (sub == "HELP") return w;
        w.push_back(key());
        w.push_back(group());
        if (sub != "DESTROY") w.push_back(consumer());
        return w;
      }
      case 2:
      case 3:
      case 4: {
        std::vector<std::string> w = {"XREADGROUP", "GROUP", group(), consumer()};
        if (pick(2) == 0) w.push_back("COUNT"), w.push_back(count());
        if (pick(5) == 0) w.push_back("NOACK");
        if (pick(20) == 0) w.push_back("BOGUS");
        if (pick(25) == 0) w.erase(w.begin() + 1, w.begin() + 4);  // (no GROUP)
        w.push_back("STREAMS");
        const int n = 1 + pick(2);
        const bool same_slot = pick(2) == 0;
        for (int i = 0; i < n; ++i)
          w.push_back(same_slot ? one<std::string>({"{t}s", "{t}x"}) : key());
        for (int i = 0; i < n; ++i)
          w.push_back(pick(3) != 0 ? ">" : one<std::string>({"0", "$", "-"}));
        if (pick(4) == 0) w.back() = id();
        return w;
      }
      case 5: {
        std::vector<std::string> w = {"XACK", key(), group()};
        for (int n = 1 + pick(3); n > 0; --n) w.push_back(id());
        return w;
      }
      case 6: {
        std::vector<std::string> w = {"XPENDING", key(), group()};
        if (pick(3) == 0) return w;
        if (pick(3) == 0) w.push_back("IDLE"), w.push_back(idle());
        w.push_back(bound());
        w.push_back(bound());
        w.push_back(count());
        if (pick(2) == 0) w.push_back(consumer());
        return w;
      }
      case 7:
      case 8: {
        std::vector<std::string> w = {"XCLAIM", key(), group(), consumer(), idle()};
        for (int n = 1 + pick(3); n > 0; --n) w.push_back(id());
        for (int n = pick(3); n > 0; --n) {
          switch (pick(7)) {
            case 0:
              w.push_back("IDLE"), w.push_back(one<std::string>({"0", "5000000", "x"}));
              break;
            case 1:
              w.push_back("TIME"), w.push_back(one<std::string>({"1000", "-1", "x"}));
              break;
            case 2:
              w.push_back("RETRYCOUNT"), w.push_back(one<std::string>({"0", "7", "x"}));
              break;
            case 3:
              w.push_back("FORCE");
              break;
            case 4:
              w.push_back("JUSTID");
              break;
            case 5:
              w.push_back("LASTID"), w.push_back(id());
              break;
            default:
              w.push_back("BOGUS");
          }
        }
        return w;
      }
      case 9: {
        std::vector<std::string> w = {"XAUTOCLAIM", key(), group(), consumer(), idle(), bound()};
        if (pick(2) == 0) w.push_back("COUNT"), w.push_back(count());
        if (pick(3) == 0) w.push_back("JUSTID");
        return w;
      }
      default: {
        std::vector<std::string> w = {"XINFO", one<std::string>({"GROUPS", "CONSUMERS", "STREAM"}),
                                      key()};
        if (w[1] == "CONSUMERS") w.push_back(group());
        if (w[1] == "STREAM") w.push_back("FULL");
        return w;
      }
    }
  }
  std::vector<std::string> command() {
    if (groups_ && pick(5) < 3) return group_command();
    switch (pick(16)) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4: {
        std::vector<std::string> w = {"XADD", key()};
        if (pick(10) == 0) w.push_back("NOMKSTREAM");
        trim(w, false);
        w.push_back(id());
        for (int n = 1 + pick(3); n > 0; --n) {
          w.push_back(one<std::string>({"f", "g", "event", ""}));
          w.push_back(one<std::string>({"1", "v", "", "completed", std::string(50, 'x')}));
        }
        if (pick(25) == 0) w.push_back("odd");
        return w;
      }
      case 5:
        return {"XLEN", key()};
      case 6:
      case 7: {
        const bool rev = pick(2) == 0;
        std::vector<std::string> w = {rev ? "XREVRANGE" : "XRANGE", key(), bound(), bound()};
        if (pick(3) == 0)
          w.push_back(rev ? "+" : "-"), w.push_back(rev ? "-" : "+"),
              w.erase(w.begin() + 2, w.begin() + 4);
        if (pick(2) == 0) {
          w.push_back(one<std::string>({"COUNT", "count", "LIMIT"}));
          w.push_back(count());
        }
        return w;
      }
      case 8: {
        std::vector<std::string> w = {"XDEL", key()};
        for (int n = 1 + pick(3); n > 0; --n) w.push_back(id());
        return w;
      }
      case 9: {
        std::vector<std::string> w = {"XTRIM", key()};
        trim(w, pick(15) != 0);
        return w;
      }
      case 10: {
        std::vector<std::string> w = {"XSETID", key(), id()};
        if (pick(3) == 0)
          w.push_back("ENTRIESADDED"), w.push_back(one<std::string>({"0", "5", "100", "-1", "x"}));
        if (pick(3) == 0) w.push_back("MAXDELETEDID"), w.push_back(id());
        return w;
      }
      case 11:
      case 12: {
        std::vector<std::string> w = {"XREAD"};
        if (pick(2) == 0) w.push_back("COUNT"), w.push_back(count());
        if (pick(8) == 0) w.push_back(one<std::string>({"GROUP", "NOACK", "BOGUS"}));
        w.push_back("STREAMS");
        const int n = 1 + pick(2);
        const bool same_slot = pick(2) == 0;
        for (int i = 0; i < n; ++i)
          w.push_back(same_slot ? one<std::string>({"{t}s", "{t}x"}) : key());
        for (int i = 0; i < n; ++i)
          w.push_back(pick(4) == 0 ? one<std::string>({"$", ">", "0", "-"}) : id());
        if (pick(15) == 0) w.pop_back();
        return w;
      }
      case 13: {
        std::vector<std::string> w = {"XINFO", one<std::string>({"STREAM", "stream", "GROUPS"}),
                                      key()};
        if (pick(4) == 0) w.push_back("FULL");
        if (pick(6) == 0) w.push_back("COUNT"), w.push_back(count());
        return w;
      }
      case 14:
        return {one<std::string>({"TYPE", "DEL", "EXISTS"}), key()};
      default:
        if (pick(2) == 0) return {"SET", "str", "text"};
        return {"OBJECT", "ENCODING", key()};
    }
  }

  std::mt19937_64 rng_;
  bool groups_;
  uint64_t next_ms_ = 5;
  int in_multi_ = -1;
};

// What differs between two servers run side by side in a consumer group's replies: times
// (a pending entry's idle or delivery time, a consumer's idle or seen time) become "T".
std::string without_times(const std::string& reply) {
  static const std::regex pending(
      R"((\*[34]\r\n\$\d+\r\n[^\r]*\r\n(\$\d+\r\n[^\r]*\r\n)?):-?\d+\r\n)");
  static const std::regex named(R"(((idle|seen-time)\r\n):-?\d+\r\n)");
  return std::regex_replace(std::regex_replace(reply, pending, "$1:T\r\n"), named, "$1:T\r\n");
}

// XINFO STREAM's radix-tree-keys and -nodes count Redis's listpacks and tree nodes: those
// two numbers are Floodgate's own (its nodes hold entries, not bytes), the rest must agree.
std::string without_rax(std::string reply) {
  for (const char* field : {"radix-tree-keys", "radix-tree-nodes"}) {
    const std::string tag =
        std::string("$") + std::to_string(std::string(field).size()) + "\r\n" + field + "\r\n";
    const size_t at = reply.find(tag);
    if (at == std::string::npos) continue;
    const size_t value = at + tag.size(), end = reply.find("\r\n", value);
    reply.erase(value, end - value);
  }
  return reply;
}

// Seeded sequences to both servers (FG_DIFF_SEED and FG_DIFF_COMMANDS pick others).
void diff_seeded(bool groups) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  // (small nodes, so approximate trims remove some)
  for (Client* c : {&fg, &rc}) {
    ASSERT_EQ(ask(*c, {"CONFIG", "SET", "stream-node-max-entries", "4"}), "+OK\r\n");
  }
  std::vector<uint64_t> seeds = {1, 2, 3, 77, 20261207};
  int commands = 2500;
  if (const char* s = std::getenv("FG_DIFF_SEED")) seeds = {std::strtoull(s, nullptr, 10)};
  if (const char* n = std::getenv("FG_DIFF_COMMANDS")) commands = std::atoi(n);
  for (uint64_t seed : seeds) {
    for (Client* c : {&fg, &rc}) ask(*c, {"FLUSHALL"});
    StreamGenerator gen(seed, groups);
    std::deque<std::string> recent;
    for (int i = 0; i < commands; ++i) {
      const std::vector<std::string> w = gen.next();
      if (recent.size() == 16) recent.pop_front();
      recent.push_back(printable(w));
      std::string a = ask(fg, w), b = ask(rc, w);
      ASSERT_FALSE(a.empty()) << "Floodgate closed the connection after " << printable(w);
      a = without_rax(a);
      b = without_rax(b);
      if (groups) {
        a = without_times(a);
        b = without_times(b);
      }
      if (a != b) {
        std::string before;
        for (const auto& c : recent) before += "\n    " + c;
        FAIL() << "seed " << seed << ", command " << i << ": " << printable(w)
               << "\n  floodgate: " << a << "\n  redis:     " << b << "\n  after:" << before;
      }
    }
  }
}

TEST(StreamDiff, SeededSequencesAnswerAsRedisServerDoes) { diff_seeded(false); }

TEST(StreamDiff, ConsumerGroupSequencesAnswerAsRedisServerDoes) { diff_seeded(true); }

// Keyspace notifications of streams and their groups: the same sequences, every message
// compared with redis-server's (redis_server.hpp).
TEST(StreamDiff, ConsumerGroupSequencesPublishAsRedisServerDoes) {
  for (uint64_t seed : {5, 6}) {
    StreamGenerator gen(seed, true);
    expect_same_notifications([&] { return gen.next(); }, 1500, "seed " + std::to_string(seed));
    if (HasFatalFailure()) return;
  }
}

// Clients waiting in XREAD BLOCK: "$" means what comes after the wait began, every reader
// of a stream is served by one XADD, a timeout is a null, RESP3 answers a map, a transaction
// tries once, and errors come before any wait.
TEST(StreamDiff, BlockedReadersAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});
  ASSERT_TRUE(node.alive());
  const std::vector<Step> steps = {
      {1, {"XADD", "ev", "1-1", "k", "old"}, 1},
      {0, {"XREAD", "BLOCK", "5000", "STREAMS", "none", "ev", "$", "$"}, 0, 50},
      {2, {"XREAD", "COUNT", "5", "BLOCK", "5000", "STREAMS", "ev", "$"}, 0, 50},
      {1, {"XADD", "ev", "2-1", "k", "new"}, 1},
      {0, {}, 1},  // [[ev, [[2-1, [k, new]]]]]: not 1-1
      {2, {}, 1},
      {0, {"XREAD", "BLOCK", "5000", "STREAMS", "none", "ev", "0", "2-1"}, 0, 50},
      {1, {"XADD", "none", "1-1", "a", "b"}, 1},
      {0, {}, 1},
      {0, {"XREAD", "BLOCK", "60", "STREAMS", "ev", "$"}, 1},  // times out: null
      {0, {"XREAD", "BLOCK", "0", "STREAMS", "ev", "0"}, 1},   // at once: something is there
      {0, {"XREAD", "BLOCK", "-1", "STREAMS", "ev", "$"}, 1},
      {0, {"XREAD", "BLOCK", "x", "STREAMS", "ev", "$"}, 1},
      {0, {"XREAD", "BLOCK", "10", "STREAMS", "ev"}, 1},
      {0, {"MULTI"}, 1},
      {0, {"XREAD", "BLOCK", "0", "STREAMS", "ev", "$"}, 1},
      {0, {"EXEC"}, 1},
      {0, {"SET", "str", "x"}, 1},
      {0, {"XREAD", "BLOCK", "10", "STREAMS", "str", "$"}, 1},  // WRONGTYPE at once
      {0,
       {"EVAL", "return redis.call('XREAD', 'BLOCK', '1', 'STREAMS', KEYS[1], '0')", "1", "ev"},
       1},
      {0, {"EVAL", "return redis.call('XREAD', 'STREAMS', KEYS[1], '0')", "1", "ev"}, 1},
      {2, {"HELLO", "3"}, 1, 0, false},
      {2, {"XREAD", "BLOCK", "5000", "STREAMS", "ev", "$"}, 0, 50},
      {1, {"XADD", "ev", "3-1", "k", "v"}, 1},
      {2, {}, 1},
      {2, {"XREAD", "BLOCK", "30", "STREAMS", "ev", "$"}, 1},
      {2, {"XINFO", "STREAM", "ev"}, 1},
      {0, {"XINFO", "BOGUS", "ev"}, 1},
      {0, {"XINFO", "GROUPS"}, 1},
      {0, {"XINFO", "HELP"}, 1},
      {0, {"XINFO", "CONSUMERS", "ev", "g"}, 1},
  };
  expect_same_conversation(node.port(), redis.port(), 3, steps);
}

// Clients waiting in XREADGROUP BLOCK (one a group, so who is served first is not a race):
// ">" waits for what the group has not delivered, an ID answers the history at once, a
// destroyed group, a deleted key and a key of another type end the wait with Redis's errors,
// a timeout is a null, a transaction tries once, a script may not block, and a transaction
// with an unknown subcommand is refused whole.
TEST(StreamDiff, BlockedGroupReadersAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});
  ASSERT_TRUE(node.alive());
  const std::string wait = "5000";
  const std::vector<Step> steps = {
      {1, {"XGROUP", "CREATE", "ev", "g", "$", "MKSTREAM"}, 1},
      {1, {"XGROUP", "CREATE", "ev", "g2", "$"}, 1},
      {0, {"XREADGROUP", "GROUP", "g", "alice", "BLOCK", wait, "STREAMS", "ev", ">"}, 0, 50},
      {2,
       {"XREADGROUP", "GROUP", "g2", "bob", "COUNT", "1", "BLOCK", wait, "STREAMS", "ev", ">"},
       0,
       50},
      {1, {"XADD", "ev", "1-1", "k", "v"}, 1},
      {0, {}, 1},
      {2, {}, 1},
      {1, {"XPENDING", "ev", "g"}, 1},
      {1, {"XINFO", "GROUPS", "ev"}, 1},
      {0, {"XREADGROUP", "GROUP", "g", "alice", "BLOCK", wait, "STREAMS", "ev", "0"}, 1},
      {0, {"XREADGROUP", "GROUP", "g", "alice", "BLOCK", wait, "STREAMS", "ev", ">"}, 0, 50},
      {1, {"XGROUP", "DESTROY", "ev", "g"}, 1},
      {0, {}, 1},  // -NOGROUP ... no longer exists
      {0, {"XREADGROUP", "GROUP", "g2", "carol", "BLOCK", wait, "STREAMS", "ev", ">"}, 0, 50},
      {1, {"DEL", "ev"}, 1},
      {0, {}, 1},  // -UNBLOCKED ...
      {1, {"XGROUP", "CREATE", "ev", "g", "$", "MKSTREAM"}, 1},
      {0, {"XREADGROUP", "GROUP", "g", "dan", "BLOCK", wait, "STREAMS", "ev", ">"}, 0, 50},
      {1, {"SET", "ev", "x"}, 1},
      {0, {}, 1},  // -UNBLOCKED ...
      {1, {"DEL", "ev"}, 1},
      {1, {"XGROUP", "CREATE", "ev", "g", "$", "MKSTREAM"}, 1},
      {0, {"XREADGROUP", "GROUP", "g", "dan", "BLOCK", "60", "STREAMS", "ev", ">"}, 1},
      {0, {"MULTI"}, 1},
      {0, {"XREADGROUP", "GROUP", "g", "dan", "BLOCK", "0", "STREAMS", "ev", ">"}, 1},
      {0, {"EXEC"}, 1},
      {0,
       {"EVAL",
        "return redis.call('XREADGROUP', 'GROUP', 'g', 'block', 'BLOCK', '1', 'STREAMS', "
        "KEYS[1], '>')",
        "1", "ev"},
       1},
      {0, {"XREADGROUP", "GROUP", "g", "dan", "BLOCK", "x", "STREAMS", "ev", ">"}, 1},
      {0, {"XREADGROUP", "GROUP", "nope", "dan", "BLOCK", "10", "STREAMS", "ev", ">"}, 1},
      {0, {"XGROUP", "HELP"}, 1},
      {0, {"XGROUP", "BOGUS"}, 1},
      {0, {"XGROUP", "CREATE", "ev"}, 1},
      {0, {"MULTI"}, 1},
      {0, {"XGROUP", "BOGUS", "ev", "g"}, 1},
      {0, {"XACK", "ev", "g", "1-1"}, 1},
      {0, {"EXEC"}, 1},
      {2, {"HELLO", "3"}, 1, 0, false},
      {2, {"XREADGROUP", "GROUP", "g", "erin", "BLOCK", wait, "STREAMS", "ev", ">"}, 0, 50},
      {1, {"XADD", "ev", "5-1", "a", "b"}, 1},
      {2, {}, 1},
      {2, {"XINFO", "CONSUMERS", "ev", "g"}, 1, 0, false},
      {2, {"XPENDING", "ev", "g"}, 1},
  };
  expect_same_conversation(node.port(), redis.port(), 3, steps);
}

// Many readers of one stream, each woken by the same XADD (nothing is taken: all of them
// get the entry at once, not one a second).
TEST(Streams, OneAddServesEveryBlockedReaderAtOnce) {
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  constexpr int kReaders = 12;
  std::vector<std::unique_ptr<Client>> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.push_back(std::make_unique<Client>(node.port()));
    ASSERT_TRUE(
        readers.back()->send(encode({"XREAD", "BLOCK", "10000", "STREAMS", "events", "$"})));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Client writer(node.port());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ask(writer, {"XADD", "events", "7-1", "job", "done"}), "$3\r\n7-1\r\n");
  for (auto& r : readers) {
    EXPECT_EQ(
        read_value(*r),
        "*1\r\n*2\r\n$6\r\nevents\r\n*1\r\n*2\r\n$3\r\n7-1\r\n*2\r\n$3\r\njob\r\n$4\r\ndone\r\n");
  }
  // (a reader left to its once-a-second retry would take a second)
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
}

// A stream is held to a cap of entries, refused past it (the cap's text), and weighs what it
// holds: past maxmemory an XADD is refused, an XDEL still runs.
TEST(Streams, AStreamIsBoundedAndCountedAgainstMaxmemory) {
  NodeProcess node({"--maxmemory", "4mb"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  std::string big(2000, 'x');
  std::string last;
  for (int i = 1; i <= 5000; ++i) {
    last = ask(c, {"XADD", "big", std::to_string(i) + "-1", "payload", big});
    if (last.rfind("-", 0) == 0) break;
  }
  EXPECT_EQ(last.rfind("-OOM", 0), 0u) << last;
  EXPECT_EQ(ask(c, {"XDEL", "big", "1-1"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"TYPE", "big"}), "+stream\r\n");
}

// A stream's consumer groups and a group's consumers are held to caps (the caps' texts), and
// what a refused command would have made is not made.
TEST(Streams, ConsumerGroupsAndConsumersAreBounded) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  auto pipeline = [&](int n, const std::function<std::vector<std::string>(int)>& words) {
    std::string all;
    for (int i = 0; i < n; ++i) all += encode(words(i));
    EXPECT_TRUE(c.send(all));
    std::string last;
    for (int i = 0; i < n; ++i) last = read_value(c);
    return last;
  };
  EXPECT_EQ(pipeline(1000,
                     [](int i) {
                       return std::vector<std::string>{
                           "XGROUP", "CREATE", "s", "g" + std::to_string(i), "$", "MKSTREAM"};
                     }),
            "+OK\r\n");
  EXPECT_EQ(ask(c, {"XGROUP", "CREATE", "s", "one-more", "$"}),
            "-ERR a stream holds at most 1000 consumer groups\r\n");
  EXPECT_EQ(pipeline(10000,
                     [](int i) {
                       return std::vector<std::string>{"XGROUP", "CREATECONSUMER", "s", "g0",
                                                       "c" + std::to_string(i)};
                     }),
            ":1\r\n");
  const std::string full = "-ERR a consumer group holds at most 10000 consumers\r\n";
  EXPECT_EQ(ask(c, {"XGROUP", "CREATECONSUMER", "s", "g0", "late"}), full);
  EXPECT_EQ(ask(c, {"XADD", "s", "1-1", "f", "v"}), "$3\r\n1-1\r\n");
  EXPECT_EQ(ask(c, {"XREADGROUP", "GROUP", "g0", "late", "STREAMS", "s", ">"}), full);
  EXPECT_EQ(ask(c, {"XCLAIM", "s", "g0", "late", "0", "1-1", "FORCE"}), full);
  EXPECT_EQ(ask(c, {"XINFO", "GROUPS", "s"}).rfind("*1000\r\n", 0), 0u);
  EXPECT_EQ(ask(c, {"XPENDING", "s", "g0"}), "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
  // (an existing consumer still reads)
  EXPECT_EQ(ask(c, {"XREADGROUP", "GROUP", "g0", "c7", "STREAMS", "s", ">"}),
            "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
}

}  // namespace
}  // namespace fg::testing
