// Config loading: durations, policies, and errors that name the key and the line.
#include "config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace fg {
namespace {

// Each test runs in a process of its own, in parallel with others: the pid keeps their
// files apart.
std::string write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& text) {
  NodeConfig cfg;
  try {
    load_config_file(write("cfg.yaml", text), cfg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, Durations) {
  int64_t ms;
  EXPECT_TRUE(parse_duration_ms("250ms", ms));
  EXPECT_EQ(ms, 250);
  EXPECT_TRUE(parse_duration_ms("30s", ms));
  EXPECT_EQ(ms, 30000);
  EXPECT_TRUE(parse_duration_ms("1m", ms));
  EXPECT_EQ(ms, 60000);
  EXPECT_TRUE(parse_duration_ms("2h", ms));
  EXPECT_TRUE(parse_duration_ms("1500", ms));
  EXPECT_EQ(ms, 1500);
  for (const char* bad : {"", "m", "1.5s", "-1s", "10 s", "3w", "99999999999999999d"})
    EXPECT_FALSE(parse_duration_ms(bad, ms)) << bad;
}

TEST(Config, TheShippedExampleLoads) {
  NodeConfig cfg;
  load_config_file(std::string(FLOODGATE_SOURCE_DIR) + "/deploy/floodgate.example.yaml", cfg);
  ASSERT_EQ(cfg.policies.count("free"), 1u);
  EXPECT_EQ(cfg.policies["free"].kind, Kind::kSlidingLog);
  EXPECT_EQ(cfg.policies["free"].a, 100);
  EXPECT_EQ(cfg.policies["starter"].a, 3000);
  EXPECT_EQ(cfg.policies["ws_messages"].kind, Kind::kTokenBucket);
  EXPECT_EQ(cfg.policies["subscriptions"].a, 10);
  EXPECT_EQ(cfg.policies["slowmode"].c, 30'000'000'000);
  EXPECT_EQ(cfg.policies["connections"].kind, Kind::kConcurrency);
  EXPECT_EQ(cfg.policies["connections"].a, 5);
}

TEST(Config, ErrorsNameKeyAndLine) {
  EXPECT_EQ(load_error("port: 70000\n"), "port (line 1): must be between 0 and 65535");
  EXPECT_EQ(load_error("prot: 1\n"), "prot (line 1): unknown setting");
  EXPECT_EQ(load_error("io-idle-poll-us: 5000\n"),
            "io-idle-poll-us (line 1): must be between 0 and 1000");
  EXPECT_EQ(load_error("policies:\n  free:\n    kind: leaky\n"),
            "policies.free.kind (line 3): must be token_bucket, gcra, fixed_window, "
            "sliding_log, sliding_window or concurrency");
  EXPECT_EQ(load_error("policies:\n  free:\n    kind: sliding_log\n    limit: 5\n"),
            "policies.free (line 3): kind sliding_log needs 'window'");
  EXPECT_EQ(load_error("policies:\n  free: {kind: sliding_log, limit: 5, window: 1m, burst: 3}\n"),
            "policies.free.burst (line 2): is not a setting of a sliding_log policy");
  EXPECT_EQ(load_error("policies:\n  gcra: {kind: gcra, max_burst: 1, count: 1, period: 1s}\n"),
            "policies.gcra (line 2): a policy may not be named like a limiter kind");
  EXPECT_NE(load_error("port: [1\n").find("cfg.yaml"), std::string::npos);
}

TEST(Config, ClusterSettings) {
  NodeConfig cfg;
  load_config_file(write("cluster.yaml",
                         "cluster-enabled: yes\n"
                         "cluster-port: 17001\n"
                         "node-id: edge-1\n"
                         "seeds: [10.0.0.1:16380, \"10.0.0.2:16380\"]\n"
                         "cluster-redirect: moved\n"
                         "cluster-forward-timeout: 2s\n"
                         "data-replication: sync\n"),
                   cfg);
  EXPECT_TRUE(cfg.cluster_enabled);
  EXPECT_EQ(cfg.cluster_port, 17001);
  EXPECT_EQ(cfg.node_id, "edge-1");
  EXPECT_EQ(cfg.seeds, (std::vector<std::string>{"10.0.0.1:16380", "10.0.0.2:16380"}));
  EXPECT_EQ(cfg.cluster_redirect, "moved");
  EXPECT_EQ(cfg.cluster_forward_timeout_ms, 2000);
  EXPECT_EQ(cfg.data_replication, "sync");
  EXPECT_EQ(load_error("data-replication: maybe\n"),
            "data-replication (line 1): must be async or sync");

  EXPECT_EQ(load_error("seeds: 10.0.0.1\n"),
            "seeds (line 1): must be a list of host:port cluster addresses");
  EXPECT_EQ(load_error("seeds: [a:1, b:99999]\n"),
            "seeds (line 1): must be a list of host:port cluster addresses");
  EXPECT_EQ(load_error("node-id: \"has space\"\n"),
            "node-id (line 1): may hold only letters, digits, '-', '_' and '.'");
  EXPECT_EQ(load_error("cluster-redirect: sometimes\n"),
            "cluster-redirect (line 1): must be auto, moved or forward");
  EXPECT_EQ(load_error("cluster-enabled: perhaps\n"),
            "cluster-enabled (line 1): must be yes or no");
}

TEST(Config, SeedLists) {
  std::vector<std::string> out;
  EXPECT_TRUE(parse_seeds("a:1, b:2,c:3", out));
  EXPECT_EQ(out, (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  for (const char* bad : {"a", "a:", ":1", "a:x", "a:0", "a:70000"}) {
    std::vector<std::string> v;
    EXPECT_FALSE(parse_seeds(bad, v)) << bad;
  }
}

}  // namespace
}  // namespace fg
