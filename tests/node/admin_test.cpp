// The operator's side of a real node: the admin HTTP port (/healthz, /readyz, /metrics,
// /cluster, /status, the page), FG.POLICY at runtime, key patterns and overrides, SIGHUP
// reloads and --check-config. Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include "node_process.hpp"

namespace fg::testing {
namespace {

// redis-cli's output, trailing newlines dropped.
std::string cli(int port, const std::string& args) {
  std::string out = run("redis-cli -p " + std::to_string(port) + " " + args + " 2>&1");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool starts(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The value of the first sample whose line starts with `series` (name and labels).
double sample(const std::string& metrics, const std::string& series) {
  size_t at = 0;
  while ((at = metrics.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || metrics[at - 1] == '\n') return std::atof(metrics.c_str() + at + series.size());
    ++at;
  }
  return -1;
}

TEST(Admin, HealthReadinessAndThePage) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  EXPECT_EQ(http_get(node.admin_port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(node.admin_port(), "/readyz").status, 200);  // standalone: at once
  const HttpReply page = http_get(node.admin_port(), "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<title>Floodgate cluster</title>"), std::string::npos);
  const HttpReply cluster = http_get(node.admin_port(), "/cluster");
  EXPECT_NE(cluster.body.find("\"cluster_enabled\":false"), std::string::npos) << cluster.body;
  // A standalone node's overview is itself, with its rings when asked.
  const HttpReply overview = http_get(node.admin_port(), "/overview?history=minutes");
  EXPECT_EQ(overview.status, 200);
  EXPECT_NE(
      overview.body.find("\"nodes\":[{\"id\":\"standalone\",\"state\":\"alive\",\"self\":true,"
                         "\"reachable\":true"),
      std::string::npos)
      << overview.body;
  EXPECT_NE(overview.body.find("\"minutes\":{\"step_s\":1,\"t\":["), std::string::npos);
  EXPECT_EQ(http_get(node.admin_port(), "/overview").body.find("\"minutes\""), std::string::npos);
  // A crowd asking the same thing shares gatherings: every member is asked a few times a
  // second at most, however many ask (each gathering asks every member of a cluster).
  const auto gathered = [&] {
    return sample(http_get(node.admin_port(), "/metrics").body,
                  "floodgate_admin_overviews_gathered_total");
  };
  const double before = gathered();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(http_get(node.admin_port(), "/overview?history=hour").status, 200);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(gathered() - before, 2 * seconds + 2) << "40 requests alike, " << seconds << " s";
  EXPECT_EQ(http_get(node.admin_port(), "/nothing").status, 404);
}

TEST(Admin, MetricsCoverRequestsDecisionsLatencyAndState) {
  const std::string cfg = temp_file("metrics.yaml",
                                    "policies:\n"
                                    "  free: {kind: sliding_log, limit: 3, window: 1m}\n"
                                    "  conns: {kind: concurrency, limit: 2, ttl: 1m}");
  NodeProcess node({"--config", cfg});
  ASSERT_TRUE(node.alive());
  for (int i = 0; i < 5; ++i) cli(node.port(), "FG.TAKE hot free");
  cli(node.port(), "FG.ACQUIRE c1 conns HOLDER app");
  cli(node.port(), "FG.TAKE k nosuchpolicy");
  const std::string m = http_get(node.admin_port(), "/metrics").body;
  EXPECT_EQ(sample(m, "floodgate_requests_total{command=\"fg.take\",result=\"allowed\"}"), 3) << m;
  EXPECT_EQ(sample(m, "floodgate_requests_total{command=\"fg.take\",result=\"denied\"}"), 2);
  EXPECT_EQ(sample(m, "floodgate_requests_total{command=\"fg.take\",result=\"error\"}"), 1);
  EXPECT_EQ(sample(m, "floodgate_decisions_total{policy=\"free\",decision=\"allowed\"}"), 3);
  EXPECT_EQ(sample(m, "floodgate_decisions_total{policy=\"free\",decision=\"denied\"}"), 2);
  EXPECT_EQ(sample(m, "floodgate_decisions_total{policy=\"conns\",decision=\"allowed\"}"), 1);
  EXPECT_EQ(sample(m, "floodgate_request_duration_seconds_count{command=\"fg.take\"}"), 6);
  EXPECT_EQ(sample(m, "floodgate_request_duration_seconds_bucket{command=\"fg.take\",le=\"+Inf\"}"),
            6);
  EXPECT_EQ(sample(m, "floodgate_leases"), 1);
  EXPECT_EQ(sample(m, "floodgate_keys"), 2);
  EXPECT_GE(sample(m, "floodgate_shard_mailbox_depth{shard=\"0\"}"), 0);
  EXPECT_GE(sample(m, "floodgate_unavailable_total{mode=\"fail_open\"}"), 0);
  EXPECT_GE(sample(m, "floodgate_forwards_total"), 0);
  const std::string status = http_get(node.admin_port(), "/status").body;
  EXPECT_NE(status.find("{\"key\":\"hot\",\"denials\":2}"), std::string::npos) << status;
}

TEST(Admin, PoliciesChangeAtRuntime) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  const int p = node.port();
  EXPECT_EQ(cli(p, "FG.POLICY SET trial fixed_window 2 60000"), "OK");
  EXPECT_TRUE(starts(cli(p, "FG.TAKE a trial"), "1\n2\n1\n-1\n"));
  EXPECT_EQ(cli(p, "FG.TAKE k"),
            "ERR no policy applies to this key: name one, or map a key pattern to one with "
            "FG.POLICY MAP");
  EXPECT_EQ(cli(p, "FG.POLICY MAP 'user:*' trial"), "OK");
  EXPECT_EQ(cli(p, "FG.POLICY MAP 'x:*' nosuch"), "ERR unknown policy 'nosuch'");
  EXPECT_TRUE(starts(cli(p, "FG.TAKE user:1"), "1\n2\n"));  // the pattern's policy
  // A per-key override wins over the named and the mapped policy.
  EXPECT_EQ(cli(p, "FG.POLICY OVERRIDE user:vip sliding_log 50 60000"), "OK");
  EXPECT_TRUE(starts(cli(p, "FG.TAKE user:vip"), "1\n50\n"));
  EXPECT_TRUE(starts(cli(p, "FG.TAKE user:vip trial"), "1\n50\n"));
  EXPECT_NE(cli(p, "FG.POLICY WHICH user:2").find("pattern user:*"), std::string::npos);
  EXPECT_NE(cli(p, "FG.POLICY WHICH user:vip").find("override"), std::string::npos);
  EXPECT_EQ(cli(p, "FG.POLICY DEL trial"),
            "ERR policy 'trial' is mapped from pattern 'user:*'; FG.POLICY UNMAP it first");
  EXPECT_EQ(cli(p, "FG.POLICY UNMAP 'user:*'"), "1");
  EXPECT_EQ(cli(p, "FG.POLICY UNOVERRIDE user:vip"), "1");
  EXPECT_EQ(cli(p, "FG.POLICY DEL trial"), "1");
  EXPECT_EQ(cli(p, "FG.POLICY DEL trial"), "0");
  EXPECT_EQ(cli(p, "FG.TAKE a trial"), "ERR unknown policy 'trial'");
  // Bad definitions get a reason; the node keeps serving.
  EXPECT_EQ(cli(p, "FG.POLICY SET gcra fixed_window 1 1000"),
            "ERR a policy may not be named like a limiter kind");
  EXPECT_TRUE(starts(cli(p, "FG.POLICY SET x fixed_window 0 1000"), "ERR "));
  EXPECT_EQ(cli(p, "FG.POLICY SET x fixed_window 1 1000 REPLICATION maybe"), "ERR syntax error");
  EXPECT_EQ(cli(p, "FG.POLICY SET x"), "ERR wrong number of arguments for 'fg.policy|set' command");
  EXPECT_EQ(cli(p, "PING"), "PONG");
}

// Shadow mode from both ends a user meets: a YAML policy with `shadow: true` and FG.POLICY SET
// ... SHADOW. It counts, always allows, and its would-be denials
// show in INFO, /metrics and /status; set back to enforcing, its counts are kept.
TEST(Admin, AShadowPolicyAllowsAndCountsWhatItWouldHaveDenied) {
  const std::string cfg =
      temp_file("shadow.yaml",
                "policies:\n"
                "  trial: {kind: fixed_window, limit: 2, window: 1h, shadow: true}\n"
                "  conns: {kind: concurrency, limit: 2, ttl: 1m}");
  NodeProcess node({"--config", cfg});
  ASSERT_TRUE(node.alive());
  const int p = node.port();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(starts(cli(p, "FG.TAKE t trial"), "1\n2\n")) << i;
  EXPECT_TRUE(starts(cli(p, "FG.POLICY GET trial"), "name\ntrial\nkind\nfixed_window\n"))
      << cli(p, "FG.POLICY GET trial");
  EXPECT_NE(cli(p, "FG.POLICY GET trial").find("shadow\n1"), std::string::npos);
  EXPECT_EQ(cli(p, "FG.POLICY SET api gcra 1 1 60000 SHADOW"), "OK");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(starts(cli(p, "FG.TAKE u2 api"), "1\n"));  // (burst 2)
  EXPECT_NE(cli(p, "INFO floodgate").find("policy_shadow_denied:trial=3,api=1"), std::string::npos)
      << cli(p, "INFO floodgate");
  const std::string m = http_get(node.admin_port(), "/metrics").body;
  EXPECT_EQ(sample(m, "floodgate_policy_shadow_denied_total{policy=\"trial\"}"), 3) << m;
  EXPECT_EQ(sample(m, "floodgate_policy_shadow_denied_total{policy=\"api\"}"), 1);
  EXPECT_EQ(sample(m, "floodgate_decisions_total{policy=\"trial\",decision=\"allowed\"}"), 5);
  const std::string status = http_get(node.admin_port(), "/status").body;
  EXPECT_NE(status.find("{\"policy\":\"trial\",\"shadow\":true,\"would_deny\":3}"),
            std::string::npos)
      << status;
  // Enforcing now: the window it counted is still full.
  EXPECT_EQ(cli(p, "FG.POLICY SET trial fixed_window 2 3600000"), "OK");
  EXPECT_TRUE(starts(cli(p, "FG.TAKE t trial"), "0\n2\n0\n"));
  EXPECT_NE(cli(p, "FG.POLICY GET trial").find("shadow\n0"), std::string::npos);
  // A concurrency limit cannot be a shadow one.
  EXPECT_EQ(cli(p, "FG.POLICY SET c concurrency 2 60000 SHADOW"),
            "ERR SHADOW is for rate limits: a concurrency limit would have to hand out leases "
            "past its limit");
  const std::string bad = temp_file("shadow-bad.yaml",
                                    "policies:\n"
                                    "  c: {kind: concurrency, limit: 2, ttl: 1m, shadow: true}");
  EXPECT_NE(run(std::string(FLOODGATE_BIN) + " --check-config " + bad + " 2>&1")
                .find("policies.c.shadow (line 2): SHADOW is for rate limits"),
            std::string::npos);
}

// A calendar window from the config file (period and tz), and the errors a user meets there.
TEST(Admin, CalendarWindowPoliciesFromTheConfigFile) {
  const std::string cfg =
      temp_file("calendar.yaml",
                "policies:\n"
                "  daily: {kind: calendar_window, limit: 2, period: day, tz: Europe/Berlin}\n"
                "  yearly: {kind: calendar_window, limit: 1000000, period: year}");
  NodeProcess node({"--config", cfg});
  ASSERT_TRUE(node.alive());
  const int p = node.port();
  EXPECT_TRUE(starts(cli(p, "FG.TAKE u daily"), "1\n2\n1\n-1\n"));
  EXPECT_TRUE(starts(cli(p, "FG.TAKE u daily"), "1\n2\n0\n-1\n"));
  EXPECT_TRUE(starts(cli(p, "FG.TAKE u daily"), "0\n2\n0\n"));
  EXPECT_NE(cli(p, "FG.POLICY GET yearly").find("period\nyear\ntz\nUTC"), std::string::npos)
      << cli(p, "FG.POLICY GET yearly");
  EXPECT_EQ(cli(p, "FG.POLICY SET monthly calendar_window 50000 month TZ America/New_York SHADOW"),
            "OK");
  EXPECT_NE(cli(p, "FG.POLICY GET monthly").find("period\nmonth\ntz\nAmerica/New_York\n"),
            std::string::npos)
      << cli(p, "FG.POLICY GET monthly");
  EXPECT_TRUE(starts(cli(p, "FG.TAKE m monthly"), "1\n50000\n49999\n"));
  EXPECT_EQ(cli(p, "FG.POLICY SET calendar_window fixed_window 1 1000"),
            "ERR a policy may not be named like a limiter kind");
  EXPECT_EQ(cli(p, "FG.POLICY SET m2 calendar_window 5 day TZ Nowhere"),
            "ERR unknown time zone (a name of the tz database, such as UTC or Europe/Berlin)");
  const std::string bad =
      temp_file("calendar-bad.yaml",
                "policies:\n"
                "  d: {kind: calendar_window, limit: 2, period: day, tz: Europe/Atlantis}");
  EXPECT_NE(run(std::string(FLOODGATE_BIN) + " --check-config " + bad + " 2>&1")
                .find("policies.d (line 2): unknown time zone"),
            std::string::npos)
      << run(std::string(FLOODGATE_BIN) + " --check-config " + bad + " 2>&1");
  const std::string bad2 = temp_file("calendar-bad2.yaml",
                                     "policies:\n"
                                     "  d: {kind: calendar_window, limit: 2, period: fortnight}");
  EXPECT_NE(run(std::string(FLOODGATE_BIN) + " --check-config " + bad2 + " 2>&1")
                .find("calendar_window's period must be day, week, month or year"),
            std::string::npos);
}

// With --admin-token-file, what shows keys and the cluster's layout (/cluster, /status)
// wants the bearer token, probes and scrapes do not; refusals are counted; SIGHUP puts a
// rotated token in force; --admin-bind moves the port to another address.
TEST(Admin, ClusterAndStatusWantTheTokenProbesAndMetricsDoNot) {
  const std::string file = temp_file("admin.token", "first-token-1234\n");
  NodeProcess node({"--admin-token-file", file, "--admin-bind", "127.0.0.2"});
  ASSERT_TRUE(node.alive());
  const int a = node.admin_port();
  EXPECT_EQ(http_get(a, "/healthz").status, 0);  // (not on 127.0.0.1: the port is elsewhere)
  auto get = [a](const std::string& path, const std::string& token = "") {
    const std::string headers = token.empty() ? "" : "Authorization: Bearer " + token + "\r\n";
    return http_get_at("127.0.0.2", a, path, headers);
  };
  EXPECT_EQ(get("/healthz").status, 200);
  EXPECT_EQ(get("/readyz").status, 200);
  EXPECT_EQ(get("/metrics").status, 200);
  EXPECT_EQ(get("/").status, 200);  // (the page holds no data)
  for (const char* path : {"/cluster", "/status", "/overview"}) {
    EXPECT_EQ(get(path).status, 401) << path;
    EXPECT_EQ(get(path, "wrong").status, 401) << path;
    EXPECT_EQ(get(path, "first-token-12345").status, 401) << path;
    EXPECT_EQ(get(path, "first-token-1234").status, 200) << path;
  }
  EXPECT_NE(get("/cluster", "first-token-1234").body.find("\"cluster_enabled\":false"),
            std::string::npos);
  EXPECT_EQ(sample(get("/metrics").body, "floodgate_admin_refused_total"), 9);
  temp_file("admin.token", "second-token\n");
  kill(node.pid(), SIGHUP);
  bool rotated = false;
  for (int i = 0; i < 100 && !rotated; ++i) {
    rotated = get("/status", "second-token").status == 200;
    if (!rotated) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(rotated);
  EXPECT_EQ(get("/status", "first-token-1234").status, 401);
  // A token file that cannot be read keeps a node from starting.
  const std::string out = run(std::string(FLOODGATE_BIN) + " --port 0 --admin-token-file " +
                              ::testing::TempDir() + "no-such-token 2>&1; echo rc=$?");
  EXPECT_NE(out.find("cannot read the admin token file"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
}

TEST(Admin, SighupReloadsPoliciesAndKeepsRuntimeOnesTheFileDidNotTouch) {
  const std::string cfg = temp_file("reload.yaml",
                                    "policies:\n"
                                    "  free: {kind: sliding_log, limit: 100, window: 1m}\n"
                                    "  old: {kind: sliding_log, limit: 1, window: 1m}");
  NodeProcess node({"--config", cfg});
  ASSERT_TRUE(node.alive());
  const int p = node.port();
  EXPECT_EQ(cli(p, "FG.POLICY SET runtime fixed_window 7 1000"), "OK");
  temp_file("reload.yaml",
            "policies:\n"
            "  free: {kind: sliding_log, limit: 200, window: 1m}\n"
            "patterns:\n"
            "  \"api:*\": free");
  kill(node.pid(), SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    reloaded = starts(cli(p, "FG.TAKE api:1"), "1\n200\n");
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(reloaded);
  EXPECT_EQ(cli(p, "FG.POLICY GET old"), "");      // dropped from the file: gone
  EXPECT_NE(cli(p, "FG.POLICY GET runtime"), "");  // set at runtime: kept
  // A broken file is refused; what runs stays.
  temp_file("reload.yaml", "policies:\n  free: {kind: sliding_log, limit: -1, window: 1m}");
  kill(node.pid(), SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(starts(cli(p, "FG.TAKE api:2"), "1\n200\n"));
  const std::string m = http_get(node.admin_port(), "/metrics").body;
  EXPECT_EQ(sample(m, "floodgate_config_reloads_total{result=\"ok\"}"), 1) << m;
  EXPECT_EQ(sample(m, "floodgate_config_reloads_total{result=\"failed\"}"), 1);
}

TEST(Admin, CheckConfigValidatesWithoutStarting) {
  const std::string good = temp_file("good.yaml",
                                     "port: 1\n"
                                     "policies:\n"
                                     "  free: {kind: sliding_log, limit: 100, window: 1m}\n"
                                     "patterns:\n"
                                     "  \"user:*\": free");
  const std::string out =
      run(std::string(FLOODGATE_BIN) + " --check-config " + good + "; echo rc=$?");
  EXPECT_NE(out.find("is a valid config (1 policies, 1 key patterns, 0 overrides, 1 users)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rc=0"), std::string::npos);
  const std::string bad = temp_file("bad.yaml",
                                    "policies:\n"
                                    "  free: {kind: sliding_log, limit: 100, window: 1m}\n"
                                    "patterns:\n"
                                    "  \"user:*\": fre");
  const std::string err =
      run(std::string(FLOODGATE_BIN) + " --check-config " + bad + " 2>&1; echo rc=$?");
  EXPECT_NE(err.find("bad config: patterns.user:* (line 4): no policy named 'fre' in this file"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rc=2"), std::string::npos);
  // Every example shipped in deploy/ is valid.
  for (const char* f : {"floodgate.example.yaml", "examples/api-tiers.yaml",
                        "examples/websocket.yaml", "examples/connection-caps.yaml"}) {
    const std::string r = run(std::string(FLOODGATE_BIN) + " --check-config " +
                              FLOODGATE_SOURCE_DIR + "/deploy/" + f + " 2>&1; echo rc=$?");
    EXPECT_NE(r.find("rc=0"), std::string::npos) << f << ": " << r;
  }
}

// A crowd of clients dripping their request one byte at a time (and more of them than the
// connection cap) cannot starve the probes: /healthz answers at once while they are open,
// each of them is closed at the request deadline, and no reply carries a wildcard CORS
// header.
TEST(Admin, SlowClientsCannotStarveTheProbes) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  const int a = node.admin_port();
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 150; ++i) {
    slow.push_back(std::make_unique<Client>(a, 6000));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->send("G"));
  }
  for (int round = 0; round < 5; ++round) {
    for (auto& c : slow) c->send("E");  // (those the cap closed may refuse: no matter)
    const auto t0 = std::chrono::steady_clock::now();
    const HttpReply r = http_get(a, "/healthz");
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_EQ(r.status, 200);
    EXPECT_LT(ms, 100) << "a probe waited behind slow clients";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // The request deadline (3 s from accept) has closed every one of them by now or soon.
  for (auto& c : slow) EXPECT_TRUE(c->closed_by_peer());
  const std::string m = http_get(a, "/metrics").body;
  EXPECT_GE(sample(m, "floodgate_admin_dropped_total"), 150) << m;
  Client raw(a);
  ASSERT_TRUE(raw.send("GET /status HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\n\r\n"));
  const std::string reply = raw.recv_all();
  EXPECT_EQ(reply.compare(0, 15, "HTTP/1.1 200 OK"), 0) << reply;
  EXPECT_EQ(reply.find("Access-Control-Allow-Origin"), std::string::npos) << reply;
  Client head(a);
  ASSERT_TRUE(head.send("HEAD /healthz HTTP/1.1\r\n\r\n"));
  const std::string h = head.recv_all();
  EXPECT_EQ(h.find("ok"), std::string::npos) << h;  // (headers only)
  EXPECT_NE(h.find("Content-Length: 3"), std::string::npos) << h;
  Client post(a);
  ASSERT_TRUE(post.send("POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(post.recv_all().compare(0, 12, "HTTP/1.1 405"), 0);
  Client huge(a);
  ASSERT_TRUE(huge.send("GET /" + std::string(16384 - 5, 'a')));  // (all of it read: no reset)
  EXPECT_EQ(huge.recv_all().compare(0, 12, "HTTP/1.1 431"), 0);
}

}  // namespace
}  // namespace fg::testing
