// Config loading: durations, policies, and errors that name the key and the line.
#include "config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include "settings.hpp"

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
            "sliding_log, sliding_window, calendar_window or concurrency");
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

// --- the settings table --------------------------------------------------------------

namespace fg {
namespace {

// Every setting reads back what it was given, and refuses what is out of its range, in the
// same words from the file and from a flag (both call the same row).
TEST(Settings, EachRowReadsWhatItShowsAndRefusesOutOfRange) {
  std::set<std::string> keys, flags;
  for (const Setting& s : settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    EXPECT_EQ(std::string(s.flag).rfind("--", 0), 0u) << s.flag;
    EXPECT_TRUE(s.help && *s.help) << s.key;
    if (!s.get || s.list) continue;
    // The default, shown and read back, is the default again.
    NodeConfig c;
    const std::string shown = s.get(c);
    if (shown.empty() || shown[0] == '-') continue;  // (none; -1: counted from the port)
    NodeConfig d;
    EXPECT_TRUE(s.set(d, shown).ok()) << s.key << " = " << shown;
    EXPECT_EQ(s.get(d), shown) << s.key;
  }
  NodeConfig c;
  EXPECT_EQ(find_setting("port")->set(c, "70000").error(), "must be between 0 and 65535");
  EXPECT_EQ(find_setting("port")->set(c, "x").error(), "must be an integer");
  EXPECT_TRUE(find_setting("query-deadline")->set(c, "2m").ok());
  EXPECT_EQ(c.query_deadline_ms, 120'000);
  EXPECT_TRUE(find_setting("save-interval")->set(c, "off").ok());
  EXPECT_EQ(c.save_interval_ms, 0);
  EXPECT_FALSE(find_setting("query-deadline")->set(c, "off").ok());  // (not one that may be 0)
  EXPECT_EQ(find_setting("replication-lag")->set(c, "2s").error(),
            "must be between 1ms and 1000ms");
  EXPECT_EQ(find_setting("cluster-redirect")->set(c, "never").error(),
            "must be auto, moved or forward");
  EXPECT_EQ(find_setting("tls-native")->set(c, "perhaps").error(), "must be yes or no");
  EXPECT_EQ(load_error("replication-lag: 2s\n"),
            "replication-lag (line 1): must be between 1ms and 1000ms");
  // Secrets are not shown.
  for (const auto& [key, value] : config_values(c)) {
    EXPECT_NE(key, "requirepass");
    EXPECT_NE(key, "tls-key-file-pass");
  }
}

// node/SETTINGS.md's table of settings: each key its row names (a row may name several),
// with the row's cells after the first (flag, default, meaning).
std::map<std::string, std::vector<std::string>> settings_md_rows() {
  std::ifstream in(std::string(FLOODGATE_SOURCE_DIR) + "/node/SETTINGS.md");
  EXPECT_TRUE(in);
  std::map<std::string, std::vector<std::string>> rows;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Settings";
    if (in_section && !rows.empty() && line.rfind("|", 0) != 0) break;  // (its first table)
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    for (size_t a = 2, b; (b = line.find(" |", a)) != std::string::npos; a = b + 3)
      cells.push_back(line.substr(a, b - a));
    if (cells.size() < 3) continue;
    const std::string keys = cells[0];
    cells.erase(cells.begin());
    for (size_t p = keys.find('`'); p != std::string::npos;) {
      const size_t q = keys.find('`', p + 1);
      rows[keys.substr(p + 1, q - p - 1)] = cells;
      p = keys.find('`', q + 1);
    }
  }
  return rows;
}

// node/SETTINGS.md's table of settings names every setting of the table with its flag, and
// nothing else (besides the file's policies, patterns and overrides).
TEST(Settings, TheReadmeListsEverySettingWithItsFlag) {
  std::map<std::string, std::string> readme;  // key -> flag cell
  for (const auto& [key, cells] : settings_md_rows()) readme[key] = " " + cells[0] + " ";
  for (const Setting& s : settings()) {
    const auto it = readme.find(s.key);
    ASSERT_NE(it, readme.end()) << "node/SETTINGS.md does not list " << s.key;
    const bool same =
        it->second.find("same") != std::string::npos && std::string("--") + s.key == s.flag;
    EXPECT_TRUE(same || it->second.find(std::string("`") + s.flag + "`") != std::string::npos)
        << s.key << ": the README's flag is" << it->second << ", the table's " << s.flag;
    readme.erase(it);
  }
  for (const char* file_only : {"policies", "patterns", "overrides"}) readme.erase(file_only);
  for (const auto& [key, flag] : readme) ADD_FAILURE() << "node/SETTINGS.md lists " << key;
}

// node/SETTINGS.md's default for each setting is the one its row has (NodeConfig's
// initializer), read by the row itself: `10s` and `10000ms` are the same default. A cell
// that states its default in words (counted from another setting, OpenSSL's) is not a value;
// the rows whose default is not a value must say so in words, not in a value that differs.
TEST(Settings, TheReadmeStatesEachSettingsDefault) {
  std::map<std::string, std::string> defaults;  // key -> default cell
  for (const auto& [key, cells] : settings_md_rows()) defaults[key] = cells[1];
  size_t checked = 0;
  for (const Setting& s : settings()) {
    const auto it = defaults.find(s.key);
    if (it == defaults.end() || !s.set || !s.get || s.list) continue;
    const std::string& cell = it->second;
    std::string value;
    if (cell.size() >= 2 && cell.front() == '`' && cell.find('`', 1) != std::string::npos) {
      value = cell.substr(1, cell.find('`', 1) - 1);  // `10s` (words may follow)
    } else if (cell == "off" || cell == "on" || cell == "no" || cell == "yes") {
      value = cell;
    } else {
      continue;  // in words: "—", "RESP port + 1000", "OpenSSL's"
    }
    NodeConfig c;
    const Status st = s.set(c, value);
    EXPECT_TRUE(st) << s.key << ": node/SETTINGS.md's default " << cell
                    << " is not a value: " << (st ? "" : st.error());
    if (!st) continue;
    EXPECT_EQ(s.get(c), s.default_value()) << s.key << ": node/SETTINGS.md says the default is "
                                           << cell << ", the row " << s.default_value();
    ++checked;
  }
  EXPECT_GT(checked, 40u);
}

// node/SETTINGS.md's "At runtime" paragraph names exactly the settings CONFIG SET takes
// (the rows with an apply hook).
TEST(Settings, TheReadmeNamesEverySettingARunningNodeTakes) {
  std::ifstream in(std::string(FLOODGATE_SOURCE_DIR) + "/node/SETTINGS.md");
  ASSERT_TRUE(in);
  std::string para;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("**At runtime**", 0) == 0) {
      para = line;
    } else if (!para.empty() && line.empty()) {
      break;
    } else if (!para.empty()) {
      para += " " + line;
    }
  }
  ASSERT_FALSE(para.empty()) << "no **At runtime** paragraph in node/SETTINGS.md";
  para = para.substr(0, para.find("Every other setting"));
  std::set<std::string> named;
  for (size_t p = para.find('`'); p != std::string::npos;) {
    const size_t q = para.find('`', p + 1);
    const std::string word = para.substr(p + 1, q - p - 1);
    if (find_setting(word)) named.insert(word);
    p = para.find('`', q + 1);
  }
  std::set<std::string> live;
  for (const Setting& s : settings())
    if (s.apply) live.insert(s.key);
  EXPECT_EQ(named, live);
}

}  // namespace
}  // namespace fg
