// The RESP door over real shard actors with a frozen clock: commands, replies in order,
// errors worded as Redis words them, auth, RESP3.
#include <gtest/gtest.h>

#include <cmath>
#include <ctime>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "policy_ids.hpp"
#include "policy_store.hpp"
#include "test_node.hpp"

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override { start(""); }

  void start(const std::string& password) {
    conn_.reset();
    node_.reset();
    node_ = std::make_unique<TestNode>(sys_, clock_, false, nullptr, 30);
    ASSERT_TRUE(node_->acl.load({}, password, "test").ok());
    PolicyMap pm;
    pm["free"] = LimitSpec::window(Kind::kSlidingLog, 3, 60 * kS);
    pm["conns"] = LimitSpec::concurrency(2, 30 * kS);
    node_->policies.replace(pm);
    conn_ = std::make_unique<RespConn>(*node_);
  }

  std::string raw(const std::string& input) {
    std::string out = conn_->send(input);
    closed_ = conn_->closed();
    return out;
  }
  std::string cmd(const std::vector<std::string>& words) { return raw(RespConn::resp(words)); }

  caf::actor_system_config cfg_;
  caf::actor_system sys_{cfg_};
  ManualClock clock_;
  std::unique_ptr<TestNode> node_;
  std::unique_ptr<RespConn> conn_;
  bool closed_ = false;
};

TEST_F(SessionTest, ClThrottleLikeRedisCell) {
  EXPECT_EQ(cmd({"CL.THROTTLE", "user123", "15", "30", "60"}),
            "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n");
  EXPECT_EQ(cmd({"cl.throttle", "u", "0", "1", "10"}), "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:10\r\n");
  EXPECT_EQ(cmd({"cl.throttle", "u", "0", "1", "10"}), "*5\r\n:1\r\n:1\r\n:0\r\n:10\r\n:10\r\n");
  clock_.advance_ms(10'000);
  EXPECT_EQ(cmd({"cl.throttle", "u", "0", "1", "10"}), "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:10\r\n");
}

// RL.THROTTLE is CL.THROTTLE by another name: the same limiter, the same replies and errors
// (its own name in an arity error).
TEST_F(SessionTest, RlThrottleIsClThrottle) {
  EXPECT_EQ(cmd({"RL.THROTTLE", "user123", "15", "30", "60"}),
            "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n");
  EXPECT_EQ(cmd({"rl.throttle", "u", "0", "1", "10"}), "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:10\r\n");
  // (one key, whichever name took from it)
  EXPECT_EQ(cmd({"CL.THROTTLE", "u", "0", "1", "10"}), "*5\r\n:1\r\n:1\r\n:0\r\n:10\r\n:10\r\n");
  EXPECT_EQ(cmd({"RL.THROTTLE", "k", "1", "1"}),
            "-ERR wrong number of arguments for 'rl.throttle' command\r\n");
  EXPECT_EQ(cmd({"RL.THROTTLE", "k", "1", "1", "60", "1", "2"}),
            "-ERR wrong number of arguments for 'rl.throttle' command\r\n");
  EXPECT_EQ(cmd({"RL.THROTTLE", "k", "x", "30", "60"}),
            "-ERR value is not an integer or out of range\r\n");
}

TEST_F(SessionTest, ClThrottleRejectsBadArguments) {
  EXPECT_EQ(cmd({"CL.THROTTLE", "k", "x", "30", "60"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(cmd({"CL.THROTTLE", "k", "1", "0", "60"}),
            "-ERR value is out of range, must be positive\r\n");
  EXPECT_EQ(cmd({"CL.THROTTLE", "k", "-1", "1", "60"}),
            "-ERR value is out of range, must be positive\r\n");
  EXPECT_EQ(cmd({"CL.THROTTLE", "k", "1", "1", "60", "-2"}),
            "-ERR value is out of range, must be positive\r\n");
  EXPECT_EQ(cmd({"CL.THROTTLE", "k", "1", "1"}),
            "-ERR wrong number of arguments for 'cl.throttle' command\r\n");
  EXPECT_EQ(cmd({"CL.THROTTLE", "k", "1", "1", "99999999999999"}),
            "-ERR value is not an integer or out of range\r\n");
}

// GCRA, Redis's own command (redis/redis#14826): its reply and errors, modelled here on its
// code (gcra.c: the theoretical arrival time in microseconds, the emission interval rounded
// to one, seconds rounded up), over seeded calls at frozen instants; and the same state as
// CL.THROTTLE on the key.
TEST_F(SessionTest, GcraAnswersAsRedisGcraCode) {
  struct Model {  // gcra.c, step for step (integer microseconds)
    std::map<std::string, int64_t> tat;
    std::string call(const std::string& key, int64_t burst, int64_t per, double period,
                     int64_t tokens, int64_t now) {
      const int64_t max_burst = burst + 1;
      int64_t emission = static_cast<int64_t>(period * 1e6 / static_cast<double>(per) + 0.5);
      if (emission == 0) emission = 1;
      auto it = tat.find(key);
      if (it != tat.end() && it->second <= now) tat.erase(it);  // (its key expired at TAT)
      const int64_t t = tat.count(key) ? tat[key] : now;
      const int64_t variance = emission * max_burst, increment = emission * tokens;
      const int64_t next_tat = std::max(now, t) + increment;
      const int64_t diff = now - (next_tat - variance);
      int64_t limited, retry = -1, ttl;
      if (diff < 0) {
        limited = 1;
        if (increment <= variance) retry = static_cast<int64_t>(std::ceil(-diff / 1e6));
        ttl = t - now;
      } else {
        limited = 0;
        ttl = next_tat - now;
        tat[key] = next_tat;
      }
      const int64_t next = variance - ttl;
      const int64_t remaining = next > -emission ? next / emission : 0;
      const auto reset = static_cast<int64_t>(std::ceil(ttl / 1e6));
      return "*5\r\n:" + std::to_string(limited) + "\r\n:" + std::to_string(max_burst) +
             "\r\n:" + std::to_string(remaining) + "\r\n:" + std::to_string(retry) +
             "\r\n:" + std::to_string(reset) + "\r\n";
    }
  } model;
  std::mt19937_64 rng(20261207);
  int64_t now_us = clock_.now_ns() / 1000;
  // (periods whose emission interval is whole microseconds: redis-cell's float interval and
  // gcra.c's rounded one then agree)
  const std::vector<std::tuple<int64_t, int64_t, std::string>> limits = {
      {0, 1, "1"}, {4, 10, "2"}, {9, 5, "0.5"}, {2, 4, "60"}, {19, 100, "1.5"}};
  for (int i = 0; i < 600; ++i) {
    const auto& [burst, per, period] = limits[rng() % limits.size()];
    const std::string key = "g" + std::to_string(&limits[0] - &limits[0] + (rng() % 2)) + period;
    const int64_t tokens = rng() % 6 == 0 ? 1 + static_cast<int64_t>(rng() % (burst + 3)) : 1;
    std::vector<std::string> words = {"GCRA", key, std::to_string(burst), std::to_string(per),
                                      period};
    if (tokens != 1 || rng() % 4 == 0) {
      words.push_back(rng() % 2 ? "TOKENS" : "num_requests");
      words.push_back(std::to_string(tokens));
    }
    ASSERT_EQ(cmd(words), model.call(key, burst, per, std::stod(period), tokens, now_us))
        << "call " << i << ": " << RespConn::resp(words);
    const int64_t step_ms = static_cast<int64_t>(rng() % 700);
    clock_.advance_ms(step_ms);
    now_us += step_ms * 1000;
  }
  // The same state as CL.THROTTLE: what one takes, the other sees.
  EXPECT_EQ(cmd({"GCRA", "shared", "0", "1", "10"}), "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:10\r\n");
  EXPECT_EQ(cmd({"CL.THROTTLE", "shared", "0", "1", "10"}),
            "*5\r\n:1\r\n:1\r\n:0\r\n:10\r\n:10\r\n");
  // Its errors, in gcra.c's order and words.
  const std::vector<std::pair<std::vector<std::string>, std::string>> errors = {
      {{"GCRA", "k", "1", "1"}, "-ERR wrong number of arguments for 'gcra' command\r\n"},
      {{"GCRA", "k", "1", "1", "1", "TOKENS", "1", "x"},
       "-ERR wrong number of arguments for 'gcra' command\r\n"},
      {{"GCRA", "k", "x", "1", "1"}, "-ERR value is not an integer or out of range\r\n"},
      {{"GCRA", "k", "-1", "1", "1"}, "-ERR value is out of range, must be positive\r\n"},
      {{"GCRA", "k", "1", "0", "1"},
       "-ERR value is out of range, value must between 1 and 9223372036854775807\r\n"},
      {{"GCRA", "k", "1", "1", "x"}, "-ERR value is not a valid float\r\n"},
      {{"GCRA", "k", "1", "1", "0"}, "-ERR period must be > 0 and < 1e12\r\n"},
      {{"GCRA", "k", "1", "1", "-2.5"}, "-ERR period must be > 0 and < 1e12\r\n"},
      {{"GCRA", "k", "1", "1", "1e12"}, "-ERR period must be > 0 and < 1e12\r\n"},
      {{"GCRA", "k", "1", "1", "1", "COUNT", "2"}, "-ERR syntax error\r\n"},
      {{"GCRA", "k", "1", "1", "1", "TOKENS"}, "-ERR Missing TOKENS value\r\n"},
      {{"GCRA", "k", "1", "1", "1", "TOKENS", "0"},
       "-ERR value is out of range, value must between 1 and 9223372036854775807\r\n"},
      {{"SET", "str", "v"}, "+OK\r\n"},
      {{"GCRA", "str", "1", "1", "1"},
       "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
  };
  for (const auto& [words, want] : errors) EXPECT_EQ(cmd(words), want) << RespConn::resp(words);
}

TEST_F(SessionTest, TakeWithPolicyAndInline) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(cmd({"FG.TAKE", "user:1", "free"}),
              "*5\r\n:1\r\n:3\r\n:" + std::to_string(2 - i) + "\r\n:-1\r\n:60000\r\n");
  }
  EXPECT_EQ(cmd({"FG.TAKE", "user:1", "free"}), "*5\r\n:0\r\n:3\r\n:0\r\n:60000\r\n:60000\r\n");
  EXPECT_EQ(cmd({"FG.PEEK", "user:1", "free"}), "*5\r\n:0\r\n:3\r\n:0\r\n:60000\r\n:60000\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "token_bucket", "10", "5", "1000", "COST", "4"}),
            "*5\r\n:1\r\n:10\r\n:6\r\n:-1\r\n:800\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "token_bucket", "10", "5", "1000", "COST", "11"}),
            "*5\r\n:0\r\n:10\r\n:6\r\n:-1\r\n:800\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "token_bucket", "10", "5", "1000", "COST"}),
            "-ERR syntax error\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "nope"}), "-ERR unknown policy 'nope'\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "conns"}),
            "-ERR policy is a concurrency limit: use FG.ACQUIRE / FG.RELEASE\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "free"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_EQ(cmd({"FG.RESET", "ws:9"}), ":1\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "ws:9", "free"}), "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:60000\r\n");
}

TEST_F(SessionTest, LeasesAndHeartbeat) {
  std::string a = cmd({"FG.ACQUIRE", "conn:u1", "conns", "HOLDER", "app-1"});
  ASSERT_EQ(a.substr(0, 13), "*5\r\n:1\r\n$16\r\n") << a;
  const std::string lease = a.substr(13, 16);
  EXPECT_EQ(cmd({"FG.ACQUIRE", "conn:u1", "2", "30000", "HOLDER", "app-1"}).substr(0, 8),
            "*5\r\n:1\r\n");
  EXPECT_EQ(cmd({"FG.ACQUIRE", "conn:u1", "conns"}), "*5\r\n:0\r\n$-1\r\n:2\r\n:2\r\n:30000\r\n");
  EXPECT_EQ(cmd({"FG.COUNT", "conn:u1"}), ":2\r\n");
  clock_.advance_ms(20'000);
  EXPECT_EQ(cmd({"FG.HEARTBEAT", "app-1", "30000"}), ":2\r\n");
  EXPECT_EQ(cmd({"FG.RENEW", "conn:u1", lease, "30000"}), ":1\r\n");
  EXPECT_EQ(cmd({"FG.RELEASE", "conn:u1", lease}), ":1\r\n");
  EXPECT_EQ(cmd({"FG.RELEASE", "conn:u1", lease}), ":0\r\n");
  EXPECT_EQ(cmd({"FG.COUNT", "conn:u1"}), ":1\r\n");
  clock_.advance_ms(30'000);  // no heartbeat: the last permit comes back
  EXPECT_EQ(cmd({"FG.COUNT", "conn:u1"}), ":0\r\n");
  EXPECT_EQ(cmd({"FG.RENEW", "conn:u1", "zz", "1000"}), "-ERR invalid lease id\r\n");
  EXPECT_EQ(cmd({"FG.HEARTBEAT", "app-1", "0"}),
            "-ERR value is out of range, must be positive\r\n");
}

TEST_F(SessionTest, PipelinedRepliesStayInOrder) {
  std::string in;
  std::string want;
  for (int i = 0; i < 50; ++i) {
    in += "*2\r\n$4\r\nECHO\r\n$" + std::to_string(std::to_string(i).size()) + "\r\n" +
          std::to_string(i) + "\r\n";
    want += "$" + std::to_string(std::to_string(i).size()) + "\r\n" + std::to_string(i) + "\r\n";
    in += "*5\r\n$11\r\nCL.THROTTLE\r\n$2\r\nk" + std::to_string(i % 7) +
          "\r\n$1\r\n9\r\n$1\r\n1\r\n$1\r\n1\r\n";
    const int nth = i / 7;  // how many times this key was hit before
    want += "*5\r\n:0\r\n:10\r\n:" + std::to_string(9 - nth) +
            "\r\n:-1\r\n:" + std::to_string(nth + 1) + "\r\n";
  }
  EXPECT_EQ(raw(in), want);
}

TEST_F(SessionTest, UnknownCommandsAndArity) {
  EXPECT_EQ(cmd({"FOO", "a", "b"}),
            "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n");
  EXPECT_EQ(cmd({"ECHO"}), "-ERR wrong number of arguments for 'echo' command\r\n");
  EXPECT_EQ(cmd({"SELECT", "1"}), "-ERR DB index is out of range\r\n");
  EXPECT_EQ(cmd({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(cmd({"CLIENT", "NOPE"}), "-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n");
}

TEST_F(SessionTest, EachCommandIsLookedUpByItsOwnName) {
  // Known, unknown, the known one again, another case, a name longer than any command.
  const std::string long_name(40, 'p');
  EXPECT_EQ(
      raw("PING\r\nPONG\r\nPING\r\nping\r\n" + long_name + "\r\n" + long_name + "\r\nPING\r\n"),
      "+PONG\r\n-ERR unknown command 'PONG', with args beginning with: \r\n+PONG\r\n"
      "+PONG\r\n-ERR unknown command '" +
          long_name + "', with args beginning with: \r\n-ERR unknown command '" + long_name +
          "', with args beginning with: \r\n+PONG\r\n");
}

TEST_F(SessionTest, ProtocolErrorAnswersEarlierCommandsThenCloses) {
  EXPECT_EQ(raw("PING\r\n*1\r\n$x\r\nPING\r\n"),
            "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n");
  EXPECT_TRUE(closed_);
}

TEST_F(SessionTest, AuthAndHello) {
  start("sekret");
  EXPECT_EQ(cmd({"PING"}), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(cmd({"AUTH", "wrong"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(cmd({"HELLO", "3"}).substr(0, 7), "-NOAUTH");
  std::string hello = cmd({"HELLO", "3", "AUTH", "default", "sekret", "SETNAME", "me"});
  EXPECT_EQ(hello.substr(0, 4), "%7\r\n") << hello;
  EXPECT_NE(hello.find("floodgate"), std::string::npos);
  EXPECT_EQ(cmd({"CLIENT", "GETNAME"}), "$2\r\nme\r\n");
  EXPECT_EQ(cmd({"FG.ACQUIRE", "c", "conns"}).substr(0, 8), "*5\r\n:1\r\n");
  EXPECT_EQ(cmd({"FG.ACQUIRE", "c", "1", "1000"}), "*5\r\n:0\r\n_\r\n:1\r\n:1\r\n:30000\r\n");
  EXPECT_EQ(cmd({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
}

TEST_F(SessionTest, AuthWithoutPasswordConfigured) {
  EXPECT_EQ(cmd({"AUTH", "x"}),
            "-ERR AUTH <password> called without any password configured for the default user. "
            "Are you sure your configuration is correct?\r\n");
}

TEST_F(SessionTest, KeyCapAnswersOom) {
  int oom = 0;
  for (int i = 0; i < 200; ++i) {
    std::string r = cmd({"FG.TAKE", "key" + std::to_string(i), "token_bucket", "1", "1", "60000"});
    if (r.rfind("-OOM", 0) == 0) ++oom;
  }
  EXPECT_GT(oom, 150);  // 30 keys across 3 shards, then a clear error
  EXPECT_LE(node_->pool->keys(), 30);
  EXPECT_EQ(cmd({"PING"}), "+PONG\r\n");
}

TEST_F(SessionTest, InfoAndConfigForClientHandshakes) {
  std::string info = cmd({"INFO"});
  EXPECT_NE(info.find("loading:0"), std::string::npos);
  EXPECT_NE(info.find("redis_version:"), std::string::npos);
  EXPECT_EQ(cmd({"CONFIG", "GET", "save"}), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  EXPECT_EQ(cmd({"CONFIG", "GET", "appendonly"}), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
  EXPECT_EQ(cmd({"CLIENT", "SETINFO", "LIB-NAME", "node-redis"}), "+OK\r\n");
  EXPECT_EQ(cmd({"COMMAND", "COUNT"}).substr(0, 1), ":");
  EXPECT_EQ(cmd({"DBSIZE"}), ":0\r\n");
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

TEST_F(SessionTest, DbsizeInAPipelineSeesTheCommandsBeforeIt) {
  std::string in;
  for (int i = 0; i < 20; ++i) {
    const std::string k = "p" + std::to_string(i);
    in += "*6\r\n$7\r\nFG.TAKE\r\n$" + std::to_string(k.size()) + "\r\n" + k +
          "\r\n$12\r\ntoken_bucket\r\n$1\r\n5\r\n$1\r\n1\r\n$5\r\n60000\r\n";
  }
  in += "*1\r\n$6\r\nDBSIZE\r\n";
  const std::string out = raw(in);
  EXPECT_EQ(out.substr(out.size() - 5), ":20\r\n");
}

// A shadow policy counts as the enforcing one would, but allows: FG.TAKE and CL.THROTTLE say
// allowed past the limit (the state still says how full it is), each would-be denial is
// counted for the policy, and switching it to enforcing keeps its counts.
TEST_F(SessionTest, AShadowPolicyCountsButAllowsAndSwitchingKeepsItsCounts) {
  PolicyMap pm;
  LimitSpec trial = LimitSpec::window(Kind::kFixedWindow, 2, 60 * kS);
  trial.policy = PolicyIds::get().id_of("trial");
  trial.shadow = true;
  pm["trial"] = trial;
  node_->policies.replace(pm);
  auto would_deny = [&] { return node_->svc.metrics->counts().policy[trial.policy][2]; };
  auto head = [](const std::string& r) { return r.substr(0, r.rfind(':')); };  // (not reset)
  const uint64_t before = would_deny();
  EXPECT_EQ(head(cmd({"FG.TAKE", "t:1", "trial"})), "*5\r\n:1\r\n:2\r\n:1\r\n:-1\r\n");
  EXPECT_EQ(head(cmd({"FG.TAKE", "t:1", "trial"})), "*5\r\n:1\r\n:2\r\n:0\r\n:-1\r\n");
  EXPECT_EQ(would_deny(), before);
  // Past the limit: allowed, nothing left, no retry-after; counted as a would-be denial.
  EXPECT_EQ(head(cmd({"FG.TAKE", "t:1", "trial"})), "*5\r\n:1\r\n:2\r\n:0\r\n:-1\r\n");
  EXPECT_EQ(would_deny(), before + 1);
  EXPECT_EQ(cmd({"FG.PEEK", "t:1", "trial"}).substr(0, 8), "*5\r\n:1\r\n");
  EXPECT_EQ(would_deny(), before + 1);  // (a peek decides nothing)
  // Enforcing now: the same window, still full.
  trial.shadow = false;
  pm["trial"] = trial;
  node_->policies.replace(pm);
  EXPECT_EQ(cmd({"FG.TAKE", "t:1", "trial"}).substr(0, 8), "*5\r\n:0\r\n");
  EXPECT_EQ(would_deny(), before + 1);
  clock_.advance_ms(60'000);  // (a new window)
  EXPECT_EQ(cmd({"FG.TAKE", "t:1", "trial"}).substr(0, 8), "*5\r\n:1\r\n");
}

// A calendar window: counted until local midnight in its zone, whatever the day's length;
// its retry-after and reset are exactly the time until then.
TEST_F(SessionTest, ACalendarWindowEndsAtLocalMidnight) {
  const std::vector<std::string> day = {"calendar_window", "2", "day", "TZ", "Europe/Berlin"};
  auto take = [&](const std::string& key, std::vector<std::string> more = {}) {
    std::vector<std::string> w = {"FG.TAKE", key};
    w.insert(w.end(), day.begin(), day.end());
    w.insert(w.end(), more.begin(), more.end());
    return cmd(w);
  };
  clock_.set_ns(int64_t{1792879200 - 10} * kS);  // 2026-10-24 23:59:50 CEST
  EXPECT_EQ(take("cal"), "*5\r\n:1\r\n:2\r\n:1\r\n:-1\r\n:10000\r\n");
  EXPECT_EQ(take("cal"), "*5\r\n:1\r\n:2\r\n:0\r\n:-1\r\n:10000\r\n");
  EXPECT_EQ(take("cal"), "*5\r\n:0\r\n:2\r\n:0\r\n:10000\r\n:10000\r\n");
  clock_.advance_ms(10'000);  // midnight: 2026-10-25 has 25 hours (CEST to CET)
  EXPECT_EQ(take("cal"), "*5\r\n:1\r\n:2\r\n:1\r\n:-1\r\n:90000000\r\n");
  EXPECT_EQ(take("cal2", {"COST", "2"}), "*5\r\n:1\r\n:2\r\n:0\r\n:-1\r\n:90000000\r\n");
  // Without TZ: UTC (2026-10-24 22:00Z: two hours to go).
  EXPECT_EQ(cmd({"FG.TAKE", "utc", "calendar_window", "5", "DAY"}),
            "*5\r\n:1\r\n:5\r\n:4\r\n:-1\r\n:7200000\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "cal", "fixed_window", "2", "1000"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "x", "calendar_window", "5", "day", "TZ", "Mars/Olympus"}),
            "-ERR unknown time zone (a name of the tz database, such as UTC or Europe/Berlin)\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "x", "calendar_window", "5", "day", "TZ", "../../etc/passwd"}),
            "-ERR unknown time zone (a name of the tz database, such as UTC or Europe/Berlin)\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "x", "calendar_window", "5", "fortnight"}),
            "-ERR calendar_window's period must be day, week, month or year\r\n");
  EXPECT_EQ(cmd({"FG.TAKE", "x", "calendar_window", "5"}),
            "-ERR calendar_window needs 2 parameters\r\n");
  EXPECT_EQ(cmd({"EXISTS", "x"}), ":0\r\n");
  // As a policy, written as a command writes it.
  std::vector<std::string_view> words = {"calendar_window",  "50000", "month", "TZ",
                                         "America/New_York", "SHADOW"};
  Result<LimitSpec> monthly = parse_definition(words, 0);
  ASSERT_TRUE(monthly.ok()) << monthly.error();
  EXPECT_EQ(policy_definition(*monthly), "calendar_window 50000 month TZ America/New_York SHADOW");
  PolicyMap pm;
  pm["monthly"] = *monthly;
  node_->policies.replace(pm);
  EXPECT_EQ(cmd({"FG.TAKE", "m", "monthly"}).substr(0, 24), "*5\r\n:1\r\n:50000\r\n:49999\r\n");
}

// FG.ADJUST: a cost known afterwards, charged into debt (remaining below zero; nobody is
// admitted until it is repaid) or refunded; its reply is the state after, as FG.PEEK's.
TEST_F(SessionTest, AdjustChargesIntoDebtAndRefunds) {
  const std::vector<std::string> tb = {"token_bucket", "3", "1", "1000"};  // 3, 1 per second
  auto expect_head = [](const std::string& r, const std::string& want) {
    EXPECT_EQ(r.substr(0, want.size()), want);
  };
  auto with = [](std::vector<std::string> w, const std::vector<std::string>& more) {
    w.insert(w.end(), more.begin(), more.end());
    return w;
  };
  EXPECT_EQ(cmd(with({"FG.TAKE", "b"}, tb)), "*5\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:1000\r\n");
  // 5 more than was there: 3 owed.
  EXPECT_EQ(cmd(with(with({"FG.ADJUST", "b"}, tb), {"5"})),
            "*5\r\n:0\r\n:3\r\n:-3\r\n:4000\r\n:6000\r\n");
  EXPECT_EQ(cmd(with({"FG.PEEK", "b"}, tb)), "*5\r\n:0\r\n:3\r\n:-3\r\n:4000\r\n:6000\r\n");
  clock_.advance_ms(3500);  // (still half a token owed)
  expect_head(cmd(with({"FG.TAKE", "b"}, tb)), "*5\r\n:0\r\n");
  clock_.advance_ms(500);  // repaid: one token there
  EXPECT_EQ(cmd(with({"FG.TAKE", "b"}, tb)), "*5\r\n:1\r\n:3\r\n:0\r\n:-1\r\n:3000\r\n");
  // A refund, never past full.
  EXPECT_EQ(cmd(with(with({"FG.ADJUST", "b"}, tb), {"-100"})),
            "*5\r\n:1\r\n:3\r\n:3\r\n:-1\r\n:0\r\n");
  // A fixed window in debt stays shut for the rest of its window.
  const std::vector<std::string> fw = {"fixed_window", "10", "60000"};
  expect_head(cmd(with(with({"FG.ADJUST", "w"}, fw), {"15"})), "*5\r\n:0\r\n:10\r\n:-5\r\n");
  expect_head(cmd(with(with({"FG.ADJUST", "w"}, fw), {"-20"})), "*5\r\n:1\r\n:10\r\n:10\r\n");
  // Debt is bounded: charges of the most one may ask, again and again, never wrap around.
  for (int i = 0; i < 10; ++i) cmd(with(with({"FG.ADJUST", "w2"}, fw), {"1099511627776"}));
  expect_head(cmd(with({"FG.TAKE", "w2"}, fw)), "*5\r\n:0\r\n:10\r\n:-1099511627776\r\n");
  for (int i = 0; i < 10; ++i) cmd(with(with({"FG.ADJUST", "b2"}, tb), {"1099511627776"}));
  expect_head(cmd(with({"FG.TAKE", "b2"}, tb)), "*5\r\n:0\r\n:3\r\n:-");
  // A sliding log keeps at most its limit: no debt.
  expect_head(cmd({"FG.ADJUST", "l", "sliding_log", "5", "60000", "9"}),
              "*5\r\n:0\r\n:5\r\n:0\r\n");
  expect_head(cmd({"FG.ADJUST", "l", "sliding_log", "5", "60000", "-2"}),
              "*5\r\n:1\r\n:5\r\n:2\r\n");
  // GCRA (CL.THROTTLE's): owed requests show as remaining below zero there too.
  expect_head(cmd({"FG.ADJUST", "g", "gcra", "4", "10", "1000", "20"}),
              "*5\r\n:0\r\n:5\r\n:-15\r\n");
  expect_head(cmd({"CL.THROTTLE", "g", "4", "10", "1"}), "*5\r\n:1\r\n:5\r\n:-15\r\n");
  // A refund of a key that holds nothing creates none.
  EXPECT_EQ(cmd(with(with({"FG.ADJUST", "none"}, tb), {"-2"})),
            "*5\r\n:1\r\n:3\r\n:3\r\n:-1\r\n:0\r\n");
  EXPECT_EQ(cmd({"EXISTS", "none"}), ":0\r\n");
  EXPECT_EQ(cmd({"FG.ADJUST", "c", "concurrency", "2", "1000", "1"}),
            "-ERR FG.ADJUST is for rate limits: a concurrency limit's leases are given back with "
            "FG.RELEASE\r\n");
  EXPECT_EQ(cmd(with(with({"FG.ADJUST", "b"}, tb), {"x"})),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(cmd(with(with({"FG.ADJUST", "b"}, tb), {"2000000000000"})),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(cmd({"FG.ADJUST", "b"}), "-ERR wrong number of arguments for 'fg.adjust' command\r\n");
}

// RANDOMKEY asks every shard (three here) and answers one live key, every key in turn over
// enough draws, never an expired one; null when there are none, as redis-server.
TEST_F(SessionTest, RandomKeyAnswersEveryLiveKeyAndNeverAnExpiredOne) {
  EXPECT_EQ(cmd({"RANDOMKEY"}), "$-1\r\n");
  std::set<std::string> keys;
  for (int i = 0; i < 12; ++i) {
    const std::string k = "k" + std::to_string(i);
    keys.insert(k);
    ASSERT_EQ(cmd({"SET", k, "v"}), "+OK\r\n");
  }
  ASSERT_EQ(cmd({"SET", "gone", "v", "PX", "100"}), "+OK\r\n");
  clock_.advance_ms(200);
  std::set<std::string> seen;
  for (int i = 0; i < 600 && seen.size() < keys.size(); ++i) {
    const std::string r = cmd({"RANDOMKEY"});
    ASSERT_EQ(r.substr(0, 1), "$") << r;
    const std::string key = r.substr(r.find("\r\n") + 2, r.size() - r.find("\r\n") - 4);
    ASSERT_TRUE(keys.count(key)) << r;
    seen.insert(key);
  }
  EXPECT_EQ(seen, keys);
  EXPECT_EQ(cmd({"RANDOMKEY", "x"}), "-ERR wrong number of arguments for 'randomkey' command\r\n");
  EXPECT_EQ(cmd({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(cmd({"RANDOMKEY"}), "$-1\r\n");
}

// A socket's read handler holds an IoBatcher::Turn: what joins meanwhile is sent when the
// Turn closes, on the I/O thread, with no handler posted (the event loop's next poll may
// then sleep), and a waiter that joins again as it completes is served in the same loop.
// FG.DEADLINE: input that reached the host longer ago than the connection's deadline has its
// limiter commands refused undecided — each one, in order among the other replies, nothing
// charged — while every other command runs; a fresh read, no deadline, or none known when
// the input came are decided as ever.
TEST_F(SessionTest, LimiterCommandsPastTheirDeadlineAreRefusedUndecided) {
  auto wall_ns = [] {
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<int64_t>(t.tv_sec) * kS + t.tv_nsec;
  };
  const std::string take = RespConn::resp({"CL.THROTTLE", "late", "9", "1", "60"});
  EXPECT_EQ(cmd({"FG.DEADLINE"}), ":0\r\n");
  EXPECT_EQ(cmd({"FG.DEADLINE", "20"}), "+OK\r\n");
  EXPECT_EQ(cmd({"FG.DEADLINE"}), ":20\r\n");
  EXPECT_EQ(cmd({"FG.DEADLINE", "-1"}), "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(cmd({"FG.DEADLINE", "86400001"}), "-ERR value is not an integer or out of range\r\n");

  // Waited 50 ms: the run of takes is refused (the fast path), PING and SET run between
  // them, FG.TAKE after them is refused too, a take with the wrong arity gets its own error.
  conn_->client().received_ns = wall_ns() - 50'000'000;
  const std::string busy = "-BUSY waited 50 ms, past its 20 ms deadline: not decided\r\n";
  const std::string got =
      raw(take + take + RespConn::resp({"PING"}) + RespConn::resp({"SET", "s", "1"}) + take +
          RespConn::resp({"FG.TAKE", "late2", "token_bucket", "5", "1"}) +
          RespConn::resp({"CL.THROTTLE", "late"}) + take);
  // (a millisecond may pass between the stamp and the check)
  std::string want = busy + busy + "+PONG\r\n+OK\r\n" + busy + busy +
                     "-ERR wrong number of arguments for 'cl.throttle' command\r\n" + busy;
  if (got != want) {
    const std::string busy51 = "-BUSY waited 51 ms, past its 20 ms deadline: not decided\r\n";
    for (size_t at; (at = want.find(busy)) != std::string::npos;)
      want.replace(at, busy.size(), busy51);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(node_->svc.counters.past_deadline.load(), 5u);
  EXPECT_EQ(cmd({"GET", "s"}), "$1\r\n1\r\n");

  // Fresh input is decided; nothing was charged before (9 + 1 remain, then 8 + 1).
  conn_->client().received_ns = wall_ns();
  EXPECT_EQ(raw(take), "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:60\r\n");
  // No receive time known: decided.
  conn_->client().received_ns = 0;
  EXPECT_EQ(raw(take), "*5\r\n:0\r\n:10\r\n:8\r\n:-1\r\n:120\r\n");
  // Inside MULTI the take is queued and runs at EXEC, late or not.
  conn_->client().received_ns = wall_ns() - 50'000'000;
  EXPECT_EQ(raw(RespConn::resp({"MULTI"}) + take + RespConn::resp({"EXEC"})),
            "+OK\r\n+QUEUED\r\n*1\r\n*5\r\n:0\r\n:10\r\n:7\r\n:-1\r\n:180\r\n");
  // No deadline (0), then RESET back to the node's (none here): decided.
  EXPECT_EQ(cmd({"FG.DEADLINE", "0"}), "+OK\r\n");
  EXPECT_EQ(raw(take), "*5\r\n:0\r\n:10\r\n:6\r\n:-1\r\n:240\r\n");
  EXPECT_EQ(cmd({"FG.DEADLINE", "20"}), "+OK\r\n");
  EXPECT_EQ(cmd({"RESET"}), "+RESET\r\n");
  EXPECT_EQ(cmd({"FG.DEADLINE"}), ":0\r\n");
  EXPECT_EQ(raw(take), "*5\r\n:0\r\n:10\r\n:5\r\n:-1\r\n:300\r\n");
  EXPECT_EQ(node_->svc.counters.past_deadline.load(), 5u);
}

struct TurnWaiter : BatchWaiter, std::enable_shared_from_this<TurnWaiter> {
  std::shared_ptr<RespSession> session;
  IoBatcher* batcher = nullptr;
  std::vector<std::string> inputs;  // one submitted command each, in order
  size_t next = 0;
  int completions = 0;
  void submit() {
    ProcessResult r =
        session->process(inputs[next].data(), inputs[next].size(), batcher->current());
    ASSERT_TRUE(r.submitted);
    ++next;
    batcher->join(shared_from_this());
  }
  void batch_complete(Flight& f) override {
    session->complete(f);
    ++completions;
    if (next < inputs.size()) submit();  // as a pipelining connection does
  }
};

TEST_F(SessionTest, ATurnSendsItsRequestsWhenItClosesWithoutAPost) {
  auto w = std::make_shared<TurnWaiter>();
  w->session = std::make_shared<RespSession>(node_->svc,
                                             node_->clients.add("127.0.0.1:5", "127.0.0.1:6", 0));
  w->batcher = node_->batcher.get();
  for (int i = 0; i < 3; ++i) w->inputs.push_back(RespConn::resp({"INCR", "turn"}));
  int during = -1, after = -1;
  bool queued = true;
  node_->run([&] {
    {
      IoBatcher::Turn turn(*node_->batcher);
      w->submit();
      during = w->completions;  // nothing leaves before the Turn closes
    }
    // All three, one after another, before this handler returns: no posted handler of
    // this (single) I/O thread could have run meanwhile.
    after = w->completions;
    queued = node_->batcher->flush_queued();
  });
  EXPECT_EQ(during, 0);
  EXPECT_EQ(after, 3);
  EXPECT_FALSE(queued);
  EXPECT_EQ(w->session->output(), ":1\r\n:2\r\n:3\r\n");

  // Without a Turn the flight leaves in a posted handler, after the caller's own returns.
  w->inputs = {RespConn::resp({"INCR", "turn"})};
  w->next = 0;
  w->completions = 0;
  w->session->output().clear();
  node_->run([&] {
    w->submit();
    during = w->completions;
    queued = node_->batcher->flush_queued();
  });
  EXPECT_TRUE(queued);
  EXPECT_EQ(during, 0);
  for (int i = 0; i < 200 && w->completions == 0; ++i) node_->run([] {});
  EXPECT_EQ(w->completions, 1);
  EXPECT_EQ(w->session->output(), ":4\r\n");
}

// Fair reading: connections with a backlog take their turns from the I/O thread's queue, a
// slice (500 us) at a time, so a handler that became ready meanwhile — a quiet connection's
// read — runs after one slice, not after every backlog's turn; one that queues again during
// its turn waits for the next slice.
struct SlowTurn : Backlogged {
  ManualClock* clock = nullptr;
  IoBatcher* batcher = nullptr;
  std::vector<int>* order = nullptr;
  std::shared_ptr<SlowTurn> again;  // queued once more during its turn
  int id = 0;
  void take_turn() override {
    order->push_back(id);
    clock->advance_ns(300'000);  // (a turn's work: two make a slice)
    if (again) batcher->queue_backlog(std::move(again));
  }
};

TEST(FairReading, AQuietConnectionWaitsOneSliceNotEveryBacklog) {
  asio::io_context io;
  ManualClock clock;
  Services svc;
  svc.clock = &clock;
  IoBatcher batcher(io, svc, 4096);
  std::vector<int> order;
  for (int i = 0; i < 10; ++i) {
    auto c = std::make_shared<SlowTurn>();
    c->clock = &clock;
    c->batcher = &batcher;
    c->order = &order;
    c->id = i;
    if (i == 0) c->again = c;
    batcher.queue_backlog(c);
  }
  asio::post(io, [&] { order.push_back(-1); });  // the quiet connection's read handler
  io.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, -1, 2, 3, 4, 5, 6, 7, 8, 9, 0}));
}
}  // namespace
}  // namespace fg
