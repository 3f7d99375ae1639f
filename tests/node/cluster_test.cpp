// Real floodgate processes forming a cluster on loopback: one limiter seen through every
// node, -MOVED for cluster-aware clients, redis-cli -c, state that moves with its slots
// when a node joins under load or leaves, and recovery from kill -9. Every loop is
// bounded in count and time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "floodgate/client.hpp"
#include "key_slot.hpp"
#include "node_process.hpp"
#include "redis_server.hpp"
#include "resp_reply.hpp"

namespace fg::testing {
namespace {

std::string field(const std::string& info, const std::string& key) {
  const auto at = info.find(key + ":");
  if (at == std::string::npos) return "";
  const auto end = info.find("\r\n", at);
  return info.substr(at + key.size() + 1, end - at - key.size() - 1);
}

class TestCluster {
 public:
  // Each cluster holds a secret of its own (unless the test brings one): a node of another
  // test running alongside, gossiping to a port one of ours now holds (its killed peer's),
  // would otherwise be believed and merge the two clusters' tables.
  // `per_node(i)`: arguments for the i-th node only (its own --dir, say).
  explicit TestCluster(size_t n, std::vector<std::string> extra = {},
                       std::function<std::vector<std::string>(size_t)> per_node = nullptr)
      : extra_(std::move(extra)), per_node_(std::move(per_node)) {
    if (std::find(extra_.begin(), extra_.end(), "--cluster-secret-file") == extra_.end()) {
      static int made = 0;
      const std::string n = std::to_string(++made);
      secret_ = temp_file("cluster-" + n + ".secret",
                          "test-cluster-" + std::to_string(getpid()) + "-" + n + "-" +
                              std::to_string(std::random_device{}()) + "\n");
      extra_.insert(extra_.end(), {"--cluster-secret-file", secret_});
    }
    for (size_t i = 0; i < n; ++i) add();
  }
  ~TestCluster() {
    nodes_.clear();
    if (!secret_.empty()) std::remove(secret_.c_str());
  }

  // Starts the next node. A port taken between choosing and binding it (other tests run
  // alongside) makes the node exit at once: it is started again on fresh ports.
  NodeProcess& add() {
    // Ids unique to this test process: a test's killed node's ports may be reused by
    // another test running alongside, whose stale peers must not take it for theirs.
    const std::string id =
        "t" + std::to_string(nodes_.size() + 1) + "-" + std::to_string(getpid() % 1000000);
    for (int attempt = 0;; ++attempt) {
      const int cport = free_port();
      const int seed0 = cports_.empty() ? cport : cports_[0];
      std::string seeds = "127.0.0.1:" + std::to_string(seed0);
      if (!cports_.empty()) {
        seeds += ",127.0.0.1:" + std::to_string(cports_.size() > 1 ? cports_[1] : cport);
      }
      std::vector<std::string> args = {"--cluster-enabled",   "--node-id", id,   "--cluster-port",
                                       std::to_string(cport), "--seeds",   seeds};
      args.insert(args.end(), extra_.begin(), extra_.end());
      if (per_node_) {
        const auto mine = per_node_(nodes_.size());
        args.insert(args.end(), mine.begin(), mine.end());
      }
      auto node = std::make_unique<NodeProcess>(args);
      if (node->alive() || attempt == 2) {
        cports_.push_back(cport);
        nodes_.push_back(std::move(node));
        return *nodes_.back();
      }
    }
  }

  // Node i's arguments when it starts again under its id: seeded with the others.
  std::vector<std::string> again_args(size_t i, int cport) {
    const std::string id = "t" + std::to_string(i + 1) + "-" + std::to_string(getpid() % 1000000);
    std::string seeds;
    for (size_t j = 0; j < cports_.size(); ++j) {
      if (j == i) continue;
      seeds += (seeds.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(cports_[j]);
    }
    std::vector<std::string> args = {"--cluster-enabled",   "--node-id", id,   "--cluster-port",
                                     std::to_string(cport), "--seeds",   seeds};
    args.insert(args.end(), extra_.begin(), extra_.end());
    if (per_node_) {
      const auto mine = per_node_(i);
      args.insert(args.end(), mine.begin(), mine.end());
    }
    return args;
  }

  // Starts node i again (after stop() or kill9()) under the same id, on fresh ports.
  NodeProcess& restart(size_t i) {
    for (int attempt = 0;; ++attempt) {
      const int cport = free_port();
      auto node = std::make_unique<NodeProcess>(again_args(i, cport));
      if (node->alive() || attempt == 2) {
        cports_[i] = cport;
        nodes_[i] = std::move(node);
        return *nodes_[i];
      }
    }
  }

  // kill -9 node i and start it again at once under its id, on its ports (a supervisor
  // restarting a crashed process): the others have not noticed it was gone.
  NodeProcess& bounce(size_t i) {
    const int port = nodes_[i]->port();
    nodes_[i]->kill9();
    std::vector<std::string> args = again_args(i, cports_[i]);
    args.push_back("--port");
    args.push_back(std::to_string(port));
    nodes_[i] = std::make_unique<NodeProcess>(args);
    return *nodes_[i];
  }

  // Every running node knows `n` members, has adopted the same table and serves its part.
  bool formed(size_t n, int timeout_ms = 20000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      bool ok = true;
      std::set<std::string> epochs;
      for (auto& node : nodes_) {
        if (!node->alive()) continue;
        Client c(node->port(), 1000);
        const std::string info = c.request({"CLUSTER", "INFO"});
        // (each serving slots of its own: a node that joined, or the survivors of one that
        // died, can read the last table's size before the table that names them is made)
        const std::string served = field(info, "cluster_slots_served_here");
        ok = ok && field(info, "cluster_state") == "ok" &&
             field(info, "cluster_size") == std::to_string(n) &&
             field(info, "cluster_slots_awaited_here") == "0" && !served.empty() && served != "0";
        epochs.insert(field(info, "cluster_current_epoch"));
      }
      if (ok && epochs.size() == 1) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Every running node's replicas hold whole copies of its slots (INFO cluster
  // replication_copies_pending 0), so a node killed now is taken over by its replicas
  // rather than its slots waiting out cluster-empty-grace.
  bool replicated(int timeout_ms = 20000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      bool ok = true;
      for (auto& node : nodes_) {
        if (!node->alive()) continue;
        Client c(node->port(), 1000);
        ok = ok && field(c.request({"INFO", "cluster"}), "replication_copies_pending") == "0";
      }
      if (ok) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  NodeProcess& node(size_t i) { return *nodes_[i]; }
  // `n` keys `prefix`0, `prefix`1, … that node i owns (fewer if 5000 tries find fewer).
  std::vector<std::string> keys_of(size_t i, const std::string& prefix, size_t n) {
    std::vector<std::string> keys;
    for (int k = 0; keys.size() < n && k < 5000; ++k) {
      const std::string key = prefix + std::to_string(k);
      if (owner_port(key) == nodes_[i]->port()) keys.push_back(key);
    }
    return keys;
  }
  size_t size() const { return nodes_.size(); }
  int cluster_port(size_t i) const { return cports_[i]; }

  // The RESP port of the node that owns `key`, from `via`'s CLUSTER SLOTS-equivalent.
  int owner_port(const std::string& key, size_t via = 0) {
    Client c(nodes_[via]->port());
    const std::string nodes = c.request({"CLUSTER", "NODES"});
    const uint32_t slot = key_slot(key);
    std::istringstream lines(nodes);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string x; words >> x;) w.push_back(x);
      for (size_t i = 8; i < w.size(); ++i) {
        const auto dash = w[i].find('-');
        const uint32_t lo = std::stoul(w[i].substr(0, dash));
        const uint32_t hi = dash == std::string::npos ? lo : std::stoul(w[i].substr(dash + 1));
        if (slot >= lo && slot <= hi) {
          const std::string addr = w[1].substr(0, w[1].find('@'));
          return std::stoi(addr.substr(addr.rfind(':') + 1));
        }
      }
    }
    return -1;
  }

 private:
  std::vector<std::string> extra_;
  std::function<std::vector<std::string>(size_t)> per_node_;
  std::string secret_;
  std::vector<int> cports_;
  std::vector<std::unique_ptr<NodeProcess>> nodes_;
};

// A cluster's extra arguments for mutual TLS on its peer links, with `dir`'s certificates.
std::vector<std::string> with_tls_cluster(const std::string& dir) {
  std::vector<std::string> a = tls_files(dir);
  a.push_back("--tls-cluster");
  return a;
}

// Splits a stream of RESP replies; counts FG.TAKE/CL.THROTTLE-style verdicts.
struct Verdicts {
  int allowed = 0, denied = 0, errors = 0;
  std::string first_error;
  void add(const std::string& stream, bool throttle = false) {
    size_t pos = 0;
    while (pos < stream.size()) {
      const size_t n = resp_value_length(stream.data() + pos, stream.size() - pos);
      if (n == 0) break;
      const std::string r = stream.substr(pos, n);
      if (r[0] == '-') {
        if (errors++ == 0) first_error = r;
      } else if (r.rfind(throttle ? "*5\r\n:0\r\n" : "*5\r\n:1\r\n", 0) == 0) {
        ++allowed;
      } else {
        ++denied;
      }
      pos += n;
    }
  }
};

std::string resp(const std::vector<std::string>& words) {
  std::string in = "*" + std::to_string(words.size()) + "\r\n";
  for (auto& w : words) in += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return in;
}

// Reads exactly `count` replies.
std::string read_replies(Client& c, size_t count) {
  std::string got;
  size_t have = 0, pos = 0;
  while (have < count) {
    const std::string more = c.recv_n(1);
    if (more.empty()) break;
    got += more;
    while (true) {
      const size_t n = resp_value_length(got.data() + pos, got.size() - pos);
      if (n == 0) break;
      pos += n;
      ++have;
    }
  }
  return got;
}

TEST(Cluster, BadClusterSettingsAreRefusedWithAReason) {
  const std::string bin = FLOODGATE_BIN, port = std::to_string(free_port());
  auto start = [&](const std::string& args) {
    // (no native or admin port: RESP + 1000 or + 2000 may be another test's just now)
    return run(bin + " --port " + port + " --native-port 0 --admin-port 0 --cluster-enabled " +
               args + " 2>&1; echo rc=$?");
  };
  EXPECT_EQ(start("--seeds nonsense"),
            "floodgate: --seeds: must be a list of host:port cluster addresses\nrc=2\n");
  EXPECT_EQ(start("--node-id 'a b'"),
            "floodgate: --node-id: may hold only letters, digits, '-', '_' and '.'\nrc=2\n");
  EXPECT_EQ(start("--bind 0.0.0.0"),
            "floodgate: binding 0.0.0.0 needs --cluster-announce-host (the address peers and "
            "clients use)\nrc=2\n");
  // The cluster port is taken (here by a node's own RESP listener): exit 1, saying which.
  NodeProcess other;
  const std::string out = start("--cluster-port " + std::to_string(other.port()));
  EXPECT_NE(out.find("cannot use cluster port " + std::to_string(other.port())), std::string::npos)
      << out;
  EXPECT_NE(out.find("rc=1"), std::string::npos) << out;
}

// With a cluster secret, the nodes that hold it form the cluster; a node started with
// another secret gossips to the same seed and is never believed: it does not join, the
// three keep their table, and the refusals are counted.
TEST(Cluster, ANodeWithoutTheClusterSecretIsNeverBelieved) {
  const std::string good = ::testing::TempDir() + "cluster.secret";
  const std::string bad = ::testing::TempDir() + "other.secret";
  std::ofstream(good) << "the-cluster-secret-of-this-test\n";
  std::ofstream(bad) << "not-the-secret-of-this-cluster\n";
  TestCluster cl(3, {"--cluster-secret-file", good});
  ASSERT_TRUE(cl.formed(3));
  NodeProcess rogue({"--cluster-enabled", "--node-id", "rogue-" + std::to_string(getpid()),
                     "--cluster-port", std::to_string(free_port()), "--seeds",
                     "127.0.0.1:" + std::to_string(cl.cluster_port(0)), "--cluster-secret-file",
                     bad});
  ASSERT_TRUE(rogue.alive());
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_TRUE(cl.formed(3, 2000));
  Client r(rogue.port());
  EXPECT_NE(field(r.request({"CLUSTER", "INFO"}), "cluster_size"), "4");
  Client c(cl.node(0).port());
  EXPECT_EQ(c.request({"CLUSTER", "NODES"}).find("rogue-"), std::string::npos);
  const std::string m = http_get(cl.node(0).admin_port(), "/metrics").body;
  const auto at = m.find("floodgate_bus_refused_total{reason=\"bad_mac\"} ");
  ASSERT_NE(at, std::string::npos) << m;
  EXPECT_GT(std::atof(m.c_str() + at + 45), 0) << m.substr(at, 60);
}

TEST(Cluster, EveryNodeAnswersForEveryKeyAsOneLimiter) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  // Twelve takes of one key, rotating over the nodes: exactly ten allowed, counted down
  // in order, whichever node each went through.
  for (const std::string key : {"user:1", "user:2", "{tenant}:api"}) {
    std::vector<std::string> seen;
    for (int i = 0; i < 12; ++i) {
      Client c(cl.node(i % 3).port());
      c.send(resp({"CL.THROTTLE", key, "9", "10", "600"}));
      seen.push_back(read_replies(c, 1));
    }
    for (int i = 0; i < 12; ++i) {
      const std::string want_head = i < 10 ? "*5\r\n:0\r\n:10\r\n:" + std::to_string(9 - i) + "\r\n"
                                           : "*5\r\n:1\r\n:10\r\n:0\r\n";
      EXPECT_EQ(seen[i].substr(0, want_head.size()), want_head) << key << " take " << i;
    }
  }
  // Plain clients were forwarded, not redirected.
  size_t forwarded = 0;
  for (size_t i = 0; i < 3; ++i) {
    Client c(cl.node(i).port());
    forwarded += std::stoul(field(c.request({"INFO", "cluster"}), "forwarded_commands"));
  }
  EXPECT_GT(forwarded, 0u);
}

// FG.TAKEALL over keys every node owns a part of: all or nothing, whichever node asked; a
// limit that denies leaves the others as they were (kills and partitions: the simulator's
// 'A' load, tests/README.md).
TEST(Cluster, TakeAllIsAllOrNothingAcrossNodes) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  const std::vector<std::string> keys = {"user:1", "user:2", "{tenant}:api", "room:9"};
  auto takeall = [&](size_t via, const std::string& last_limit) {
    std::vector<std::string> w = {"FG.TAKEALL"};
    for (size_t k = 0; k < keys.size(); ++k) {
      w.push_back(keys[k]);
      for (const char* x : {"fixed_window", k + 1 == keys.size() ? "" : "100", "600000"}) {
        if (*x) w.push_back(x);
      }
      if (k + 1 == keys.size()) w.insert(w.end() - 1, last_limit);
    }
    Client c(cl.node(via).port());
    c.send(resp(w));
    return read_replies(c, 1);
  };
  auto remaining = [&](const std::string& key, const std::string& limit) {
    Client c(cl.node(0).port());
    c.send(resp({"FG.PEEK", key, "fixed_window", limit, "600000", "COST", "0"}));
    const std::string r = read_replies(c, 1);
    const size_t at = r.find(':', r.find(':', r.find(':') + 1) + 1) + 1;
    return std::stoll(r.substr(at, r.find("\r\n", at) - at));
  };
  // room:9 allows 2: two admitted through different nodes, the third denied.
  for (size_t via : {0, 1}) {
    const std::string r = takeall(via, "2");
    EXPECT_EQ(r.substr(0, 12), "*5\r\n:1\r\n*5\r\n") << r;
  }
  EXPECT_EQ(remaining("user:1", "100"), 98);
  const std::string third = takeall(2, "2");
  EXPECT_EQ(third.substr(0, 8), "*5\r\n:0\r\n") << third;
  EXPECT_EQ(remaining("user:1", "100"), 98);  // nothing stayed charged
  EXPECT_EQ(remaining("{tenant}:api", "100"), 98);
  EXPECT_EQ(remaining("room:9", "2"), 0);
}

// A script's shebang flags in a cluster, as Redis Cluster reads them: no-cluster refuses
// it; allow-cross-slot-keys lets it reach a key of another slot its node serves (declared
// keys still share a slot).
TEST(Cluster, AScriptsShebangFlagsAnswerAsRedisClusterDoes) {
  TestCluster cl(2, {"--shards", "1"});  // (one shard: every slot a node owns is held)
  ASSERT_TRUE(cl.formed(2));
  std::vector<std::string> mine;  // keys of two slots node 0 owns
  for (int i = 0; mine.size() < 2 && i < 1000; ++i) {
    const std::string k = "x" + std::to_string(i);
    if (cl.owner_port(k) == cl.node(0).port() && (mine.empty() || key_slot(mine[0]) != key_slot(k)))
      mine.push_back(k);
  }
  ASSERT_EQ(mine.size(), 2u);
  Client c(cl.node(0).port());
  EXPECT_EQ(c.request({"EVAL", "#!lua flags=no-cluster\nreturn 1", "0"}),
            "-ERR Can not run script on cluster, 'no-cluster' flag is set.");
  const std::string both = "redis.call('set', KEYS[1], 1) return redis.call('incr', ARGV[1])";
  EXPECT_EQ(c.request({"EVAL", both, "1", mine[0], mine[1]})
                .rfind("-ERR Script attempted to access keys that do not hash to the same slot", 0),
            0u);
  EXPECT_EQ(c.request({"EVAL", "#!lua\n" + both, "1", mine[0], mine[1]})
                .rfind("-ERR Script attempted to access keys that do not hash to the same slot", 0),
            0u);
  EXPECT_EQ(
      c.request({"EVAL", "#!lua flags=allow-cross-slot-keys\n" + both, "1", mine[0], mine[1]}),
      ":1");
}

// Keyspace notifications are the cluster's: a subscriber on any node hears the events of
// keys every node owns, and a user hears only the channels its rules allow.
TEST(Cluster, KeyspaceNotificationsReachSubscribersOnEveryNode) {
  TestCluster cl(3, {"--notify-keyspace-events", "KEA", "--user",
                     "a on >apw ~a:* resetchannels &__keyspace@0__:a:* +@all"});
  ASSERT_TRUE(cl.formed(3));
  std::string here, there;  // a key node 0 owns, one node 2 owns
  for (int i = 0; (here.empty() || there.empty()) && i < 1000; ++i) {
    const std::string k = "a:" + std::to_string(i);
    if (here.empty() && cl.owner_port(k) == cl.node(0).port()) here = k;
    if (there.empty() && cl.owner_port(k) == cl.node(2).port()) there = k;
  }
  ASSERT_FALSE(here.empty() || there.empty());
  Client all(cl.node(1).port()), tenant(cl.node(1).port()), writer(cl.node(0).port());
  all.send(encode({"PSUBSCRIBE", "__keyevent@0__:*"}));
  ASSERT_EQ(read_value(all), "*3\r\n$10\r\npsubscribe\r\n$16\r\n__keyevent@0__:*\r\n:1\r\n");
  ASSERT_EQ(tenant.request({"AUTH", "a", "apw"}), "+OK");
  EXPECT_EQ(tenant.request({"PSUBSCRIBE", "__keyspace@0__:*"}).rfind("-NOPERM", 0), 0u);
  tenant.send(encode({"PSUBSCRIBE", "__keyspace@0__:a:*"}));
  ASSERT_EQ(read_value(tenant), "*3\r\n$10\r\npsubscribe\r\n$18\r\n__keyspace@0__:a:*\r\n:1\r\n");
  EXPECT_EQ(writer.request({"SET", "b:1", "x"}), "+OK");  // (not the tenant's)
  for (const std::string& k : {here, there}) EXPECT_EQ(writer.request({"RPUSH", k, "j"}), ":1");
  auto event = [](const std::string& channel, const std::string& message) {
    return "$" + std::to_string(channel.size()) + "\r\n" + channel + "\r\n$" +
           std::to_string(message.size()) + "\r\n" + message + "\r\n";
  };
  const std::string head = "*4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n";
  EXPECT_EQ(read_value(all), head + event("__keyevent@0__:set", "b:1"));
  for (const std::string& k : {here, there})
    EXPECT_EQ(read_value(all), head + event("__keyevent@0__:rpush", k));
  const std::string mine = "*4\r\n$8\r\npmessage\r\n$18\r\n__keyspace@0__:a:*\r\n";
  for (const std::string& k : {here, there})
    EXPECT_EQ(read_value(tenant), mine + event("__keyspace@0__:" + k, "rpush"));
  // (CONFIG SET turns them off on the node asked, at once)
  Client admin(cl.node(2).port());
  EXPECT_EQ(admin.request({"CONFIG", "SET", "notify-keyspace-events", ""}), "+OK");
  EXPECT_EQ(ask(admin, {"CONFIG", "GET", "notify-keyspace-events"}),
            "*2\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n");
  EXPECT_EQ(writer.request({"RPUSH", there, "j"}), ":2");
  EXPECT_EQ(writer.request({"RPUSH", here, "j"}), ":2");
  EXPECT_EQ(read_value(all), head + event("__keyevent@0__:rpush", here));
}

// A script forwarded to its key's owner runs there with its user's rights (every node
// reads the same users): what the user may not touch, its script may not either.
TEST(Cluster, AForwardedScriptRunsWithItsUsersRights) {
  TestCluster cl(2, {"--user", "t on >tpw ~t:* +@all"});
  ASSERT_TRUE(cl.formed(2));
  std::string tag;  // a hash tag whose slot node 1 owns: node 0 forwards
  for (int i = 0; tag.empty() && i < 1000; ++i) {
    const std::string t = "{" + std::to_string(i) + "}";
    if (cl.owner_port("t:" + t) == cl.node(1).port()) tag = t;
  }
  ASSERT_FALSE(tag.empty());
  Client c(cl.node(0).port());
  ASSERT_EQ(c.request({"AUTH", "t", "tpw"}), "+OK");
  EXPECT_EQ(c.request({"EVAL", "return redis.call('incr', KEYS[1])", "1", "t:" + tag}), ":1");
  const std::string denied =
      c.request({"EVAL", "return redis.call('incr', 'u:' .. ARGV[1])", "1", "t:" + tag, tag});
  EXPECT_EQ(denied.rfind("-ERR The user executing the script can't access at least one of the "
                         "keys mentioned in the command arguments",
                         0),
            0u)
      << denied;
  EXPECT_EQ(c.request({"EVAL", "return redis.acl_check_cmd('incr', 'u:' .. ARGV[1])", "1",
                       "t:" + tag, tag}),
            "$-1");
  Client owner(cl.node(1).port());
  EXPECT_EQ(owner.request({"EXISTS", "u:" + tag}), ":0");
  size_t forwarded = 0;
  for (size_t i = 0; i < 2; ++i) {
    Client n(cl.node(i).port());
    ASSERT_EQ(n.request({"AUTH", "t", "tpw"}), "+OK");
    forwarded += std::stoul(field(n.request({"INFO", "cluster"}), "forwarded_commands"));
  }
  EXPECT_GE(forwarded, 3u);
}

TEST(Cluster, ClusterAwareClientsAreMovedToTheOwner) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    const std::string k = "k" + std::to_string(i);
    if (cl.owner_port(k) != cl.node(0).port()) key = k;
  }
  Client c(cl.node(0).port());
  c.send(resp({"CLUSTER", "SLOTS"}));  // from now on this client follows redirections
  read_replies(c, 1);
  const std::string moved = c.request({"FG.TAKE", key, "fixed_window", "5", "60000"});
  EXPECT_EQ(moved, "-MOVED " + std::to_string(key_slot(key)) +
                       " 127.0.0.1:" + std::to_string(cl.owner_port(key)));
  // redis-cli -c follows it to the owner and shows the owner's answer.
  const std::string out = run("redis-cli -c -p " + std::to_string(cl.node(0).port()) + " FG.TAKE " +
                              key + " fixed_window 5 60000 2>&1");
  EXPECT_EQ(out.substr(0, 9), "1\n5\n4\n-1\n") << out.substr(0, 200);
}

// PUBLISH on any node reaches the subscribers of every node (over the cluster bus, as
// Redis Cluster carries it); its reply counts the node's own subscribers, as Redis's does.
// Shard channels belong to a slot: a cluster client is sent to its owner.
TEST(Cluster, AMessagePublishedOnOneNodeReachesSubscribersOnEveryNode) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  Client sub(cl.node(0).port()), psub(cl.node(1).port()), pub(cl.node(2).port());
  sub.send(encode({"SUBSCRIBE", "news"}));
  ASSERT_EQ(read_value(sub), "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n");
  psub.send(encode({"PSUBSCRIBE", "n*"}));
  ASSERT_EQ(read_value(psub), "*3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:1\r\n");
  pub.send(encode({"PUBLISH", "news", "hello"}));
  EXPECT_EQ(read_value(pub), ":0\r\n");
  EXPECT_EQ(read_value(sub), "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
  EXPECT_EQ(read_value(psub), "*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
  // Messages from one publisher arrive in the order sent.
  for (int i = 0; i < 50; ++i) pub.send(encode({"PUBLISH", "news", std::to_string(i)}));
  for (int i = 0; i < 50; ++i) ASSERT_EQ(read_value(pub), ":0\r\n");
  for (int i = 0; i < 50; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_EQ(read_value(sub), "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$" + std::to_string(n.size()) +
                                   "\r\n" + n + "\r\n");
  }
  // A script publishes too.
  pub.send(encode({"EVAL", "return redis.call('publish', 'news', 'lua')", "0"}));
  EXPECT_EQ(read_value(pub), ":0\r\n");
  EXPECT_EQ(read_value(sub), "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$3\r\nlua\r\n");
  // Shard channels: a plain client's subscription is heard from any node...
  std::string channel;
  for (int i = 0; channel.empty(); ++i) {
    const std::string c = "orders" + std::to_string(i);
    if (cl.owner_port(c) != cl.node(0).port()) channel = c;
  }
  Client ssub(cl.node(0).port());
  ssub.send(encode({"SSUBSCRIBE", channel}));
  ASSERT_EQ(read_value(ssub), "*3\r\n$10\r\nssubscribe\r\n$" + std::to_string(channel.size()) +
                                  "\r\n" + channel + "\r\n:1\r\n");
  pub.send(encode({"SPUBLISH", channel, "m"}));
  read_value(pub);
  EXPECT_EQ(read_value(ssub), "*3\r\n$8\r\nsmessage\r\n$" + std::to_string(channel.size()) +
                                  "\r\n" + channel + "\r\n$1\r\nm\r\n");
  // ...and a cluster client is sent to the slot's owner, as Redis Cluster sends it.
  Client aware(cl.node(0).port());
  aware.send(resp({"CLUSTER", "SLOTS"}));
  read_replies(aware, 1);
  aware.send(encode({"SSUBSCRIBE", channel}));
  EXPECT_EQ(read_value(aware), "-MOVED " + std::to_string(key_slot(channel)) +
                                   " 127.0.0.1:" + std::to_string(cl.owner_port(channel)) + "\r\n");
  aware.send(encode({"SSUBSCRIBE", "a", "b"}));
  EXPECT_EQ(read_value(aware), "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
}

// A tenant pipelining megabyte PUBLISHes to a channel nobody hears, through one node of
// three. The bus carries at most 16 MB of messages at once (more is refused at once, not
// queued), so the peer links and the cluster thread that gossip and forwards share are
// never swamped: while it lasts another client's forwarded takes are answered, no node
// stops serving or declares another dead, and the node holds no gigabyte for it.
TEST(Cluster, APublishFloodDisturbsNeitherMembershipNorForwards) {
  TestCluster c(3);
  ASSERT_TRUE(c.formed(3));
  const long before = c.node(0).rss_kb();
  const std::vector<std::string> far = c.keys_of(1, "far", 20);
  ASSERT_EQ(far.size(), 20u);
  std::atomic<bool> done{false};
  std::atomic<int> refused{0}, published{0};
  std::thread flood([&] {
    Client f(c.node(0).port(), 20000);
    const std::string one = encode({"PUBLISH", "nobody", std::string(1 << 20, 'x')});
    std::string pipeline;
    for (int i = 0; i < 50; ++i) pipeline += one;
    for (int round = 0; round < 20 && f.send(pipeline); ++round) {
      for (int i = 0; i < 50; ++i) {
        const std::string r = read_value(f);
        if (r.empty()) return;
        (r[0] == '-' ? refused : published).fetch_add(1);
      }
    }
    done = true;
  });
  Client other(c.node(0).port(), 5000);
  int answered = 0, asked = 0;
  while (!done && asked < 2000) {
    const std::string r = ask(other, {"FG.TAKE", far[static_cast<size_t>(asked) % far.size()],
                                      "token_bucket", "100", "100", "1000"});
    ++asked;
    answered += r.substr(0, 1) == "*" ? 1 : 0;
  }
  flood.join();
  EXPECT_EQ(answered, asked) << "forwarded takes were refused during the flood";
  EXPECT_GT(refused.load(), 0) << "the bus took every message (" << published << ")";
  EXPECT_GT(published.load(), 0);
  for (size_t i = 0; i < 3; ++i) {
    Client q(c.node(i).port());
    const std::string info = q.request({"INFO", "cluster"});
    EXPECT_EQ(field(info, "not_serving_episodes"), "0") << "node " << i;
    EXPECT_EQ(field(info, "members_declared_dead"), "0") << "node " << i;
  }
  EXPECT_LT(c.node(0).peak_rss_kb() - before, 512 * 1024);
}

TEST(Cluster, RedisCliClusterCheckFindsItHealthy) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  const std::string out =
      run("timeout 20 redis-cli --cluster check 127.0.0.1:" + std::to_string(cl.node(1).port()) +
          " 2>&1");
  EXPECT_NE(out.find("All nodes agree about slots configuration."), std::string::npos) << out;
  EXPECT_NE(out.find("All 16384 slots covered."), std::string::npos) << out;
  EXPECT_EQ(out.find("[ERR]"), std::string::npos) << out;
}

TEST(Cluster, RedisCliDashCFollowsMovedWhenRedirectionIsForced) {
  TestCluster cl(3, {"--cluster-redirect", "moved"});
  ASSERT_TRUE(cl.formed(3));
  size_t moved_before = 0;
  {
    Client c(cl.node(0).port());
    moved_before = std::stoul(field(c.request({"INFO", "cluster"}), "moved_redirections"));
  }
  for (int i = 0; i < 6; ++i) {
    const std::string out = run("redis-cli -c -p " + std::to_string(cl.node(0).port()) +
                                " CL.THROTTLE key" + std::to_string(i) + " 4 1 60 2>&1");
    EXPECT_EQ(out.substr(0, 6), "0\n5\n4\n") << out.substr(0, 200);
  }
  Client c(cl.node(0).port());
  EXPECT_GT(std::stoul(field(c.request({"INFO", "cluster"}), "moved_redirections")), moved_before);
}

TEST(Cluster, AFourthNodeJoinsUnderLoadAndNoLimitIsExceeded) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  // 32 hot keys, 40 admissions each per 10 minutes: many will move to the new node.
  constexpr int kKeys = 32, kLimit = 40;
  std::vector<std::string> keys;
  for (int k = 0; k < kKeys; ++k) keys.push_back("hot:" + std::to_string(k));
  std::vector<std::atomic<int>> allowed(kKeys);
  std::atomic<int> errors{0}, rounds{0};
  std::atomic<bool> joined{false}, stop{false};
  std::atomic<int> fourth_port{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(40);
      for (int r = 0; r < 20000 && !stop && std::chrono::steady_clock::now() < end; ++r) {
        const int port = (t == 3 && fourth_port) ? fourth_port.load() : cl.node(t % 3).port();
        Client c(port);
        std::string in;
        for (const auto& k : keys) in += resp({"FG.TAKE", k, "sliding_log", "40", "600000"});
        c.send(in);
        const std::string got = read_replies(c, kKeys);
        size_t pos = 0;
        for (int k = 0; k < kKeys && pos < got.size(); ++k) {
          const size_t n = resp_value_length(got.data() + pos, got.size() - pos);
          if (n == 0) break;
          if (got.compare(pos, 8, "*5\r\n:1\r\n") == 0) ++allowed[k];
          if (got[pos] == '-') ++errors;
          pos += n;
        }
        ++rounds;
      }
    });
  }
  // (Every wait is bounded: the load stops by itself after 40 s.)
  for (int i = 0; i < 4000 && rounds < 40; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  NodeProcess& fourth = cl.add();
  const bool ok = cl.formed(4);
  fourth_port = fourth.port();
  const int at_join = rounds;
  for (int i = 0; i < 4000 && rounds < at_join + 60; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(rounds.load(), at_join + 60) << "the load stopped before the join was tested";
  stop = true;
  for (auto& th : load) th.join();
  ASSERT_TRUE(ok);
  int moved = 0;
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_LE(allowed[k].load(), kLimit) << keys[k];
    if (cl.owner_port(keys[k]) == fourth.port()) ++moved;
    // The state is whole wherever it lives now: the window is full.
    Client c(cl.node(0).port());
    EXPECT_EQ(c.cmd({"FG.PEEK", keys[k], "sliding_log", "40", "600000"}, 0).size(), 0u);
    const std::string peek = read_replies(c, 1);
    EXPECT_EQ(peek.substr(0, 17), "*5\r\n:0\r\n:40\r\n:0\r\n") << keys[k] << ": " << peek;
  }
  EXPECT_GT(moved, 0);
  // A request can still meet a slot in the microseconds it leaves its shard (-TRYAGAIN);
  // forwards that find their slot moved on take one more hop instead of failing.
  EXPECT_LE(errors.load(), 16);
}

TEST(Cluster, AGracefulLeaveHandsItsStateToTheOthers) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back("leave:" + std::to_string(i));
  for (const auto& k : keys) {
    Client c(cl.node(0).port());
    for (int i = 0; i < 3; ++i) c.cmd({"FG.TAKE", k, "fixed_window", "10", "600000"}, 0);
    read_replies(c, 3);
  }
  EXPECT_EQ(cl.node(1).stop(), 0);  // SIGTERM: hand off, then exit 0
  ASSERT_TRUE(cl.formed(2));
  for (const auto& k : keys) {
    Client c(cl.node(2).port());
    c.cmd({"FG.PEEK", k, "fixed_window", "10", "600000"}, 0);
    EXPECT_EQ(read_replies(c, 1).substr(0, 17), "*5\r\n:1\r\n:10\r\n:7\r\n") << k;
  }
}

// A leave never lowers the number of copies: with both other members stopped (SIGSTOP: alive
// to the kernel, silent to the cluster) nobody can take what the leaving node holds, so it
// does not exit; /readyz says why, and a second SIGTERM ends it anyway (exit code 1).
TEST(Cluster, ALeaveHoldingTheLastCopyWaitsUntilForced) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  {
    Client c(cl.node(0).port());
    for (int i = 0; i < 20; ++i) c.cmd({"SET", "last:" + std::to_string(i), "v"}, 0);
    read_replies(c, 20);
  }
  kill(cl.node(1).pid(), SIGSTOP);
  kill(cl.node(2).pid(), SIGSTOP);
  kill(cl.node(0).pid(), SIGTERM);
  std::string why;
  for (int i = 0; i < 100 && why.find("only reachable copy") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const HttpReply r = http_get(cl.node(0).admin_port(), "/readyz");
    why = std::to_string(r.status) + " " + r.body;
  }
  EXPECT_NE(why.find("503"), std::string::npos) << why;
  EXPECT_NE(why.find("leaving: the only reachable copy of"), std::string::npos) << why;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(cl.node(0).alive()) << "a node holding the last copy of slots exited on its own";
  kill(cl.node(0).pid(), SIGTERM);  // the second signal: forced
  const int status = cl.node(0).wait_exit(5000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  kill(cl.node(1).pid(), SIGCONT);
  kill(cl.node(2).pid(), SIGCONT);
}

// A whole cluster killed at once (kill -9, every node) and started again from its dirs keeps
// every count up to its last save: each node's snapshot goes to whichever node owns each slot
// now — here every node comes back with another node's directory, so the slots' new owners
// hold none of their state and all of it travels — and is merged there; the runtime policy
// set before comes back too.
TEST(Persistence, AWholeClusterRestartedFromItsDirsKeepsItsQuotas) {
  const std::string base = ::testing::TempDir() + "fg-cluster-dirs-" + std::to_string(getpid());
  std::filesystem::remove_all(base);
  auto dir_of = [&](size_t i) { return base + "/node" + std::to_string(i % 3); };
  std::vector<std::string> keys;
  for (int i = 0; i < 60; ++i) keys.push_back("quota:" + std::to_string(i));
  auto take = [](Client& c, const std::string& k, int n) {
    for (int i = 0; i < n; ++i) c.cmd({"CL.THROTTLE", k, "99", "100", "86400"}, 0);
    return read_replies(c, static_cast<size_t>(n));
  };
  {
    TestCluster cl(3, {"--save-interval-ms", "0"}, [&](size_t i) {
      return std::vector<std::string>{"--dir", dir_of(i)};
    });
    ASSERT_TRUE(cl.formed(3));
    Client c(cl.node(0).port());
    for (size_t k = 0; k < keys.size(); ++k) take(c, keys[k], 1 + static_cast<int>(k % 7));
    for (int i = 0; i < 6; ++i) {  // leases too: a holder's open connections, say
      c.cmd({"FG.ACQUIRE", "seats:" + std::to_string(i), "5", "600000", "HOLDER", "app-1"}, 0);
      EXPECT_EQ(read_replies(c, 1).substr(0, 8), "*5\r\n:1\r\n") << i;
    }
    EXPECT_EQ(c.request({"FG.POLICY", "SET", "daily", "gcra", "99", "100", "86400000"}), "+OK");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // (replicas and the book)
    for (size_t i = 0; i < 3; ++i) {
      Client s(cl.node(i).port());
      EXPECT_EQ(s.request({"SAVE"}), "+OK") << i;
    }
    for (size_t i = 0; i < 3; ++i) cl.node(i).kill9();
  }
  // Every node comes back with another one's directory (and its own id): node i's held the
  // slots of i and, as replica, of i-1; i+2's hold neither, so nobody owns what it restores.
  {
    TestCluster again(3, {"--save-interval-ms", "0"}, [&](size_t i) {
      return std::vector<std::string>{"--dir", dir_of(i + 2)};
    });
    ASSERT_TRUE(again.formed(3));
    for (int i = 0; i < 200; ++i) {  // until every restored key is at its owner (≤ 10 s)
      bool done = true;
      for (size_t n = 0; n < 3; ++n) {
        Client s(again.node(n).port(), 1000);
        done = done && field(s.request({"INFO", "cluster"}), "restored_keys_pending") == "0";
      }
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    uint64_t merged = 0;
    for (size_t n = 0; n < 3; ++n) {
      Client s(again.node(n).port());
      const std::string info = s.request({"INFO", "cluster"});
      EXPECT_EQ(field(info, "restored_keys_dropped"), "0") << n;
      merged += std::stoull(field(info, "keys_merged"));
    }
    EXPECT_GE(merged, keys.size());  // (each key's owner merged it; replicas' copies are no-ops)
    Client c(again.node(2).port());
    for (size_t k = 0; k < keys.size(); ++k) {
      c.cmd({"CL.THROTTLE", keys[k], "99", "100", "86400", "0"}, 0);
      const std::string peek = read_replies(c, 1);
      const std::string want = "*5\r\n:0\r\n:100\r\n:" + std::to_string(100 - 1 - k % 7) + "\r\n";
      EXPECT_EQ(peek.substr(0, want.size()), want) << keys[k];
    }
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(c.request({"FG.COUNT", "seats:" + std::to_string(i)}), ":1") << i;
    }
    EXPECT_EQ(c.request({"FG.POLICY", "GET", "daily"}).substr(0, 1), "*");
  }
  std::filesystem::remove_all(base);
}

// A node that leaves, comes back under the same id and leaves again hands its slots over
// again, state included: a receiver must not take the new process's hand-offs for resends
// of the old one's (acknowledged and dropped: the slots awaited in vain).
TEST(Cluster, ANodeBackUnderItsIdHandsItsSlotsOverAgain) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  EXPECT_EQ(cl.node(1).stop(), 0);  // its first process's hand-offs
  ASSERT_TRUE(cl.formed(2));
  ASSERT_TRUE(cl.restart(1).alive());
  ASSERT_TRUE(cl.formed(3));
  const std::vector<std::string> keys = cl.keys_of(1, "again:", 10);
  ASSERT_EQ(keys.size(), 10u);
  for (const auto& k : keys) {
    Client c(cl.node(0).port());
    for (int i = 0; i < 3; ++i) c.cmd({"FG.TAKE", k, "fixed_window", "10", "86400000"}, 0);
    read_replies(c, 3);
  }
  EXPECT_EQ(cl.node(1).stop(), 0);  // the second process's: the same ids, unless random
  ASSERT_TRUE(cl.formed(2));
  for (const auto& k : keys) {
    Client c(cl.node(2).port());
    c.cmd({"FG.PEEK", k, "fixed_window", "10", "86400000"}, 0);
    EXPECT_EQ(read_replies(c, 1).substr(0, 17), "*5\r\n:1\r\n:10\r\n:7\r\n") << k;
  }
}

// One node killed and started again from its dir while the others went on: their copies are
// newer than its snapshot (the table's epoch says so), so the snapshot does not bring back
// what the cluster deleted meanwhile, nor undo what it counted.
TEST(Persistence, ANodeBackAloneDefersToTheCopiesTheClusterKept) {
  const std::string base = ::testing::TempDir() + "fg-alone-" + std::to_string(getpid());
  std::filesystem::remove_all(base);
  TestCluster cl(3, {"--save-interval-ms", "0"}, [&](size_t i) {
    return std::vector<std::string>{"--dir", base + "/node" + std::to_string(i)};
  });
  ASSERT_TRUE(cl.formed(3));
  const std::vector<std::string> keys = cl.keys_of(1, "alone:", 4);
  ASSERT_EQ(keys.size(), 4u);
  Client c(cl.node(0).port());
  for (const auto& k : keys) EXPECT_EQ(c.request({"SET", k, "saved"}), "+OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // (on the replica too)
  {
    Client s(cl.node(1).port());
    EXPECT_EQ(s.request({"SAVE"}), "+OK");
  }
  cl.node(1).kill9();
  ASSERT_TRUE(cl.formed(2));
  // Meanwhile the cluster deletes one key and changes another.
  for (int i = 0; i < 200 && c.request({"DEL", keys[0]}) != ":1"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(c.request({"SET", keys[1], "newer"}), "+OK");
  ASSERT_TRUE(cl.restart(1).alive());
  ASSERT_TRUE(cl.formed(3));
  std::string superseded;
  for (int i = 0; i < 100 && superseded != "1"; ++i) {
    Client s(cl.node(1).port(), 1000);
    superseded = field(s.request({"INFO", "cluster"}), "restored_snapshot_superseded");
    if (superseded != "1") std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(superseded, "1");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // (merges would have landed)
  EXPECT_EQ(c.request({"GET", keys[0]}), "$-1");                // deleted stays deleted
  EXPECT_EQ(c.request({"GET", keys[1]}), "newer");
  EXPECT_EQ(c.request({"GET", keys[2]}), "saved");  // (kept by the cluster all along)
  std::filesystem::remove_all(base);
}

// A node killed and started again at once (a supervisor's restart), before the others
// noticed it was gone: it is still its slots' owner by the cluster's table, and it takes
// their state back from its replica instead of serving its last save.
TEST(Persistence, ANodeRestartedBeforeItWasMissedTakesItsStateBackFromItsReplica) {
  const std::string base = ::testing::TempDir() + "fg-bounce-" + std::to_string(getpid());
  std::filesystem::remove_all(base);
  TestCluster cl(3, {"--save-interval-ms", "0"}, [&](size_t i) {
    return std::vector<std::string>{"--dir", base + "/node" + std::to_string(i)};
  });
  ASSERT_TRUE(cl.formed(3));
  const std::vector<std::string> keys = cl.keys_of(1, "bounce:", 3);
  ASSERT_EQ(keys.size(), 3u);
  Client c(cl.node(0).port());
  EXPECT_EQ(c.request({"SET", keys[0], "saved"}), "+OK");
  for (int i = 0; i < 3; ++i) c.cmd({"FG.TAKE", keys[1], "fixed_window", "100", "86400000"}, 0);
  read_replies(c, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    Client s(cl.node(1).port());
    EXPECT_EQ(s.request({"SAVE"}), "+OK");
  }
  // After the save: what only the replica holds.
  EXPECT_EQ(c.request({"DEL", keys[0]}), ":1");
  for (int i = 0; i < 5; ++i) c.cmd({"FG.TAKE", keys[1], "fixed_window", "100", "86400000"}, 0);
  read_replies(c, 5);
  EXPECT_EQ(c.request({"SET", keys[2], "newer"}), "+OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // (replicated: Δ is 5 ms)
  ASSERT_TRUE(cl.bounce(1).alive());
  ASSERT_TRUE(cl.formed(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // (merges would have landed)
  EXPECT_EQ(c.request({"GET", keys[0]}), "$-1");
  c.cmd({"FG.PEEK", keys[1], "fixed_window", "100", "86400000"}, 0);
  EXPECT_EQ(read_replies(c, 1).substr(0, 19), "*5\r\n:1\r\n:100\r\n:92\r\n");
  EXPECT_EQ(c.request({"GET", keys[2]}), "newer");
  Client s(cl.node(1).port());
  const std::string info = s.request({"INFO", "cluster"});
  EXPECT_EQ(field(info, "slots_started_empty"), "0") << info;  // (every slot came back)
  std::filesystem::remove_all(base);
}

TEST(Cluster, AHeartbeatRenewsAHoldersLeasesOnEveryNode) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  // Leases of one holder on keys spread over all three nodes.
  std::set<int> owners;
  for (int i = 0; i < 12; ++i) {
    const std::string key = "conn:" + std::to_string(i);
    owners.insert(cl.owner_port(key));
    Client c(cl.node(0).port());
    c.send(resp({"FG.ACQUIRE", key, "5", "60000", "HOLDER", "app-1"}));
    EXPECT_EQ(read_replies(c, 1).substr(0, 8), "*5\r\n:1\r\n");
  }
  EXPECT_EQ(owners.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    Client c(cl.node(i).port());
    EXPECT_EQ(c.request({"FG.HEARTBEAT", "app-1", "60000"}), ":12") << "via node " << i;
  }
}

// A holder's leases are renewed and released only where the asking user may change the
// key, on every node the request fans out to: one tenant naming another's holder touches
// none of its permits, over RESP and the native protocol.
TEST(Cluster, AHoldersLeasesAreTouchedOnlyOnKeysItsUserMayChange) {
  TestCluster cl(3, {"--user", "a on >apw ~a:* +@all", "--user", "b on >bpw ~b:* +@all"});
  ASSERT_TRUE(cl.formed(3));
  Client a(cl.node(0).port()), b(cl.node(1).port());
  ASSERT_EQ(a.request({"AUTH", "a", "apw"}), "+OK");
  ASSERT_EQ(b.request({"AUTH", "b", "bpw"}), "+OK");
  std::set<int> owners;
  for (int i = 0; i < 9; ++i) {  // the same holder name, on keys spread over the nodes
    for (Client* c : {&a, &b}) {
      const std::string key = std::string(c == &a ? "a:" : "b:") + std::to_string(i);
      owners.insert(cl.owner_port(key));
      c->send(resp({"FG.ACQUIRE", key, "5", "60000", "HOLDER", "shared"}));
      ASSERT_EQ(read_replies(*c, 1).substr(0, 8), "*5\r\n:1\r\n") << key;
    }
  }
  EXPECT_EQ(owners.size(), 3u);
  EXPECT_EQ(b.request({"FG.HEARTBEAT", "shared", "60000"}), ":9");  // b's own, not a's
  EXPECT_EQ(b.request({"FG.RELEASEALL", "shared"}), ":9");
  EXPECT_EQ(b.request({"FG.RELEASEALL", "shared"}), ":0");
  EXPECT_EQ(a.request({"FG.HEARTBEAT", "shared", "60000"}), ":9");  // a's all still there
  {
    floodgate::Client::Options o;
    o.seeds = {"127.0.0.1:" + std::to_string(cl.node(2).native_port())};
    o.deadline = std::chrono::milliseconds(3000);
    o.user = "b";
    o.password = "bpw";
    floodgate::Client nb(o);
    auto n = nb.release_all("shared");
    ASSERT_TRUE(n.ok()) << n.error();
    EXPECT_EQ(*n, 0);
  }
  EXPECT_EQ(a.request({"FG.RELEASEALL", "shared"}), ":9");
  Client ops(cl.node(2).port());  // (the default user: every key)
  EXPECT_EQ(ops.request({"FG.HEARTBEAT", "shared", "60000"}), ":0");
}

TEST(Cluster, AKilledNodesSlotsAreServedAgainWithinSeconds) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  cl.node(2).kill9();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(cl.formed(2, 15000));
  // (formed: the members agree; the dead node's slots may still be on their way to being
  // promoted for a moment after, answered -TRYAGAIN, as a slow machine shows)
  const auto deadline = start + std::chrono::seconds(10);
  for (int i = 0; i < 20; ++i) {
    std::string reply;
    do {
      Client c(cl.node(i % 2).port());
      c.cmd({"FG.TAKE", "after:" + std::to_string(i), "fixed_window", "10", "600000"}, 0);
      reply = read_replies(c, 1);
      if (reply.rfind("-TRYAGAIN", 0) == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (reply.rfind("-TRYAGAIN", 0) == 0 && std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(reply.substr(0, 8), "*5\r\n:1\r\n") << reply;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace fg::testing

namespace fg::testing {
namespace {
using namespace std::chrono_literals;

// Keys whose slot `port`'s node owns.
std::vector<std::string> keys_owned_by(TestCluster& cl, int port, const std::string& prefix,
                                       size_t n) {
  std::vector<std::string> out;
  for (int i = 0; out.size() < n && i < 100000; ++i) {
    const std::string k = prefix + std::to_string(i);
    if (cl.owner_port(k) == port) out.push_back(k);
  }
  return out;
}

int64_t remaining_of(const std::string& reply) {  // FG.PEEK's third integer
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) pos = reply.find(':', pos) + 1;
  return std::stoll(reply.substr(pos));
}

// What FG.PEEK says is left of `key` under `policy`, asked again until it is `want` (at
// most 20 s); -1 for an answer that is not a decision.
int64_t peek_until(Client& c, const std::string& key, const std::string& policy, int64_t want) {
  int64_t left = -1;
  for (int i = 0; i < 400 && left != want; ++i) {
    const std::string r = ask(c, {"FG.PEEK", key, policy});
    left = r.rfind("*5\r\n", 0) == 0 ? remaining_of(r) : -1;
    if (left != want) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return left;
}

std::string policy_file() {
  const std::string path = "/tmp/fg-failover-" + std::to_string(getpid()) + ".yaml";
  std::ofstream f(path);
  // (slices: off — these count what was acknowledged against what the owner holds, and a
  // node forwarding a hot key would take quota slices ahead of its clients: api/COMMANDS.md)
  f << "policies:\n"
       "  strict: {kind: fixed_window, limit: 1000000, window: 1d, replication: sync,\n"
       "           on_unavailable: fail_closed, slices: off}\n"
       "  lenient: {kind: fixed_window, limit: 1000000, window: 1d, on_unavailable: fail_open,\n"
       "            slices: off}\n"
       "  seats: {kind: concurrency, limit: 5, ttl: 60s, on_unavailable: fail_closed}\n"
       // (a log's count never drops at a clock boundary, as a fixed window's does)
       "  journal: {kind: sliding_log, limit: 1000, window: 1d, replication: sync,\n"
       "            on_unavailable: fail_closed}\n"
       "patterns:\n"
       "  \"counted:*\": strict\n";  // (data keys: their writes are synchronous)
  return path;
}

using Clock = std::chrono::steady_clock;

// Admissions acknowledged to a client (with when), against what the new owner counts.
struct Load {
  std::vector<std::vector<Clock::time_point>> acked;  // per key
  std::atomic<bool> stop{false};
};

// `policy` "INCR": the keys are data counters, each acknowledged INCR an admission.
void hammer(int port, const std::vector<std::string>& keys, const std::string& policy, Load& load,
            size_t first, size_t step) {
  Client c(port, 2000);
  const bool incr = policy == "INCR";
  for (int round = 0; !load.stop && round < 200000; ++round) {
    for (size_t k = first; k < keys.size() && !load.stop; k += step) {
      const std::string r = incr ? ask(c, {"INCR", keys[k]}) : ask(c, {"FG.TAKE", keys[k], policy});
      if (r.rfind(incr ? ":" : "*5\r\n:1\r\n", 0) == 0) load.acked[k].push_back(Clock::now());
      if (r.empty()) return;  // the connection failed: stop, counting nothing unacknowledged
    }
  }
}

// kill -9 of an owner while clients hammer its keys through the other nodes: its replica
// serves them, and what is missing is at most what was admitted in the last moments.
void kill_under_load(const std::string& policy, bool sync) {
  const std::string config = policy_file();
  TestCluster cl(3, {"--config", config});
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  const int victim = cl.node(2).port();
  const bool incr = policy == "INCR";
  const auto keys = keys_owned_by(cl, victim, incr ? "counted:" : "hot:", 8);
  Load load;
  load.acked.resize(keys.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < 4; ++i)
    clients.emplace_back(hammer, cl.node(i % 2).port(), std::cref(keys), policy, std::ref(load), i,
                         4);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const auto killed_at = Clock::now();
  cl.node(2).kill9();
  // The first answer for one of its keys from a survivor.
  Client probe(cl.node(0).port(), 2000);
  Clock::time_point served_at;
  for (int i = 0; i < 1500; ++i) {
    const std::string r =
        incr ? ask(probe, {"GET", keys[0]}) : ask(probe, {"FG.PEEK", keys[0], policy});
    if (r.rfind(incr ? "$" : "*5\r\n", 0) == 0) {
      served_at = Clock::now();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(served_at, Clock::time_point()) << "its keys were never served again";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  load.stop = true;
  for (auto& t : clients) t.join();
  ASSERT_TRUE(cl.formed(2, 15000));
  const double served_s = std::chrono::duration<double>(served_at - killed_at).count();
  EXPECT_LT(served_s, 4.0);
  int64_t acked_total = 0, lost_total = 0, recent_total = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    int64_t counted = 0;
    if (incr) {
      const std::string r = ask(probe, {"GET", keys[k]});
      const size_t eol = r.find("\r\n");
      counted = r.rfind("$", 0) == 0 && r != "$-1\r\n" ? std::stoll(r.substr(eol + 2)) : 0;
    } else {
      counted = 1000000 - remaining_of(ask(probe, {"FG.PEEK", keys[k], policy}));
    }
    const int64_t acked = static_cast<int64_t>(load.acked[k].size());
    // Admitted before the kill within the last 100 ms: all that async replication may
    // lose (Δ = 5 ms, plus room for a loaded machine's scheduling).
    int64_t recent = 0;
    for (auto t : load.acked[k]) recent += t <= killed_at && killed_at - t < 100ms;
    const int64_t lost = std::max<int64_t>(0, acked - counted);
    acked_total += acked;
    lost_total += lost;
    recent_total += recent;
    if (sync) {
      EXPECT_EQ(lost, 0) << keys[k] << ": acked " << acked << ", counted " << counted;
    } else {
      EXPECT_LE(lost, recent) << keys[k] << ": acked " << acked << ", counted " << counted;
    }
    // Never more counted than was sent (at most one request per client in flight).
    EXPECT_LE(counted, acked + 4) << keys[k];
  }
  EXPECT_GT(acked_total, 1000);
  std::cout << "[ figures  ] " << policy << ": " << acked_total << " admissions acked, "
            << lost_total << " lost (" << recent_total << " in the last 100 ms before the kill); "
            << "kill -> served by the replica in " << served_s << " s\n";
  std::remove(config.c_str());
}

TEST(Failover, AKilledOwnersCountsSurviveOnItsReplica) { kill_under_load("lenient", false); }

TEST(Failover, SyncReplicationLosesNoAcknowledgedAdmission) { kill_under_load("strict", true); }

// INCR on keys a pattern maps to a `replication: sync` policy: no acknowledged increment is
// lost when the owner is killed.
TEST(Failover, SyncDataKeysLoseNoAcknowledgedIncrement) { kill_under_load("INCR", true); }

// A key taken faster than slice-threshold through a node that does not own it: that node
// admits from quota slices its owner counted (never fewer counted than admitted, never more
// than a few slices' worth); a policy that says SLICES off is always asked of the owner.
TEST(QuotaSlices, AHotKeyIsAdmittedFromSlicesTheOwnerCounted) {
  TestCluster cl(3, {"--slice-threshold", "200", "--slice-ms", "100"});
  // (buckets that refill a token in ten minutes: what is counted is what was taken)
  ASSERT_TRUE(cl.formed(3));
  const int owner = cl.node(2).port();
  const auto keys = keys_owned_by(cl, owner, "hot:", 2);
  ASSERT_EQ(keys.size(), 2u);
  Client via(cl.node(0).port(), 5000), at(owner, 5000);
  ASSERT_EQ(ask(via, {"FG.POLICY", "SET", "hotp", "token_bucket", "100000", "1", "600000"}),
            "+OK\r\n");
  ASSERT_EQ(ask(via, {"FG.POLICY", "SET", "exact", "token_bucket", "100000", "1", "600000",
                      "SLICES", "off"}),
            "+OK\r\n");
  std::string got;
  for (int i = 0; i < 100 && got.find("slices\r\n$3\r\noff") == std::string::npos; ++i) {
    got = ask(at, {"FG.POLICY", "GET", "exact"});  // (reaches the owner within a second)
    if (got.find("slices\r\n$3\r\noff") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_NE(got.find("slices\r\n$3\r\noff"), std::string::npos) << got;
  auto stat = [&](const std::string& field) {
    return std::stoll(info_field(ask(via, {"INFO", "cluster"}), field));
  };
  int64_t admitted = 0;
  for (int i = 0; i < 4000; ++i)
    admitted += ask(via, {"FG.TAKE", keys[0], "hotp"}).rfind("*5\r\n:1", 0) == 0;
  EXPECT_EQ(admitted, 4000);
  EXPECT_GT(stat("slices_granted"), 0);
  EXPECT_GT(stat("slice_admitted"), 0);
  const int64_t counted = 100000 - remaining_of(ask(at, {"FG.PEEK", keys[0], "hotp"}));
  EXPECT_GE(counted, admitted);  // every admission counted, a slice's before it was spent
  EXPECT_LE(counted, admitted + 100000 / 3);  // and at most one slice more
  const int64_t asked = stat("slices_asked");
  for (int i = 0; i < 2000; ++i) ask(via, {"FG.TAKE", keys[1], "exact"});
  EXPECT_EQ(stat("slices_asked"), asked);
  EXPECT_EQ(100000 - remaining_of(ask(at, {"FG.PEEK", keys[1], "exact"})), 2000);
}

// Data keys of every type move with their slots when a fourth node joins: each value,
// and its TTL, is whole wherever it lives now.
TEST(Cluster, AFourthNodeTakesDataKeysWithTheirSlots) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  constexpr int kKeys = 40;
  Client c(cl.node(0).port(), 3000);
  auto k = [](const char* type, int i) { return std::string("join:") + type + std::to_string(i); };
  for (int i = 0; i < kKeys; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_EQ(ask(c, {"SET", k("s", i), n, "EX", "600"}), "+OK\r\n");
    ASSERT_EQ(ask(c, {"HSET", k("h", i), "tokens", n}), ":1\r\n");
    ASSERT_EQ(ask(c, {"ZADD", k("z", i), n, "m" + n}), ":1\r\n");
    ASSERT_EQ(ask(c, {"RPUSH", k("l", i), "a", n}), ":2\r\n");
    ASSERT_EQ(ask(c, {"SADD", k("m", i), "a", n}), ":2\r\n");
    ASSERT_EQ(ask(c, {"XADD", k("x", i), n + "-1", "f", n}),
              "$" + std::to_string(n.size() + 2) + "\r\n" + n + "-1\r\n");
    ASSERT_EQ(ask(c, {"SETBIT", k("b", i), std::to_string(100 + i), "1"}), ":0\r\n");
  }
  NodeProcess& fourth = cl.add();
  ASSERT_TRUE(cl.formed(4));
  int moved = 0;
  Client d(fourth.port(), 3000);
  for (int i = 0; i < kKeys; ++i) {
    const std::string n = std::to_string(i);
    if (cl.owner_port(k("s", i)) == fourth.port()) ++moved;
    Client& via = i % 2 ? c : d;
    EXPECT_EQ(ask(via, {"GET", k("s", i)}), "$" + std::to_string(n.size()) + "\r\n" + n + "\r\n");
    const std::string ttl = ask(via, {"TTL", k("s", i)});
    EXPECT_TRUE(ttl[0] == ':' && std::stoll(ttl.substr(1)) > 500) << k("s", i) << ": " << ttl;
    EXPECT_EQ(ask(via, {"HGET", k("h", i), "tokens"}),
              "$" + std::to_string(n.size()) + "\r\n" + n + "\r\n");
    EXPECT_EQ(ask(via, {"ZSCORE", k("z", i), "m" + n}),
              "$" + std::to_string(n.size()) + "\r\n" + n + "\r\n");
    EXPECT_EQ(ask(via, {"LLEN", k("l", i)}), ":2\r\n");
    EXPECT_EQ(ask(via, {"SISMEMBER", k("m", i), n}), ":1\r\n");
    EXPECT_EQ(ask(via, {"XRANGE", k("x", i), "-", "+"}),
              "*1\r\n*2\r\n$" + std::to_string(n.size() + 2) + "\r\n" + n +
                  "-1\r\n*2\r\n$1\r\nf\r\n$" + std::to_string(n.size()) + "\r\n" + n + "\r\n");
    EXPECT_EQ(ask(via, {"GETBIT", k("b", i), std::to_string(100 + i)}), ":1\r\n");
  }
  EXPECT_GT(moved, 0);
}

// The data commands limiter code runs on Redis, in a cluster: sent to a node that does not
// own the keys (forwarded), multi-key commands on one slot together and across slots refused
// as Redis Cluster does, and the counts and their TTLs served by the replica after the
// owner's kill -9.
TEST(Failover, DataKeysAreForwardedReplicatedAndSurviveTheOwnersDeath) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  const int victim = cl.node(2).port();
  std::string tag;
  for (int i = 0; tag.empty() && i < 10000; ++i) {
    const std::string t = "{user" + std::to_string(i) + "}";
    if (cl.owner_port("customer-limit-" + t) == victim) tag = t;
  }
  ASSERT_FALSE(tag.empty());
  const std::string a = "customer-limit-" + tag + ":srv1", b = "customer-limit-" + tag + ":srv2",
                    note = "customer-limit-" + tag + ":note";
  Client c(cl.node(0).port(), 3000);
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(ask(c, {"INCR", a}), ":" + std::to_string(i) + "\r\n");
  EXPECT_EQ(ask(c, {"INCRBY", b, "3"}), ":3\r\n");
  EXPECT_EQ(ask(c, {"EXPIRE", a, "600"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"SET", note, "hello", "PX", "600000"}), "+OK\r\n");
  const std::string bucket = "customer-limit-" + tag + ":bucket";  // a token bucket in a hash
  EXPECT_EQ(ask(c, {"HSET", bucket, "tokens", "9", "ts", "1700000000000"}), ":2\r\n");
  EXPECT_EQ(ask(c, {"HINCRBY", bucket, "tokens", "-1"}), ":8\r\n");
  const std::string log = "customer-limit-" + tag + ":log";  // a sliding log in a sorted set
  for (int i = 0; i < 3; ++i) {
    const std::string at = std::to_string(1'700'000'000'000 + i);
    EXPECT_EQ(ask(c, {"ZADD", log, at, "req:" + at}), ":1\r\n");
  }
  EXPECT_EQ(ask(c, {"ZREMRANGEBYSCORE", log, "-inf", "1700000000000"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"PEXPIRE", log, "600000"}), ":1\r\n");
  // A stream (BullMQ's events) and a bitmap.
  const std::string events = "customer-limit-" + tag + ":events",
                    flags = "customer-limit-" + tag + ":flags";
  EXPECT_EQ(ask(c, {"XADD", events, "5-1", "event", "added"}), "$3\r\n5-1\r\n");
  EXPECT_EQ(ask(c, {"XADD", events, "5-2", "event", "active"}), "$3\r\n5-2\r\n");
  EXPECT_EQ(ask(c, {"XADD", events, "MAXLEN", "2", "6-1", "event", "completed"}), "$3\r\n6-1\r\n");
  EXPECT_EQ(ask(c, {"XDEL", events, "5-2"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"XGROUP", "CREATE", events, "workers", "0"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"XREADGROUP", "GROUP", "workers", "w1", "STREAMS", events, ">"}),
            "*1\r\n*2\r\n$" + std::to_string(events.size()) + "\r\n" + events +
                "\r\n*1\r\n*2\r\n$3\r\n6-1\r\n*2\r\n$5\r\nevent\r\n$9\r\ncompleted\r\n");
  EXPECT_EQ(ask(c, {"SETBIT", flags, "77", "1"}), ":0\r\n");
  // A set, and the commands over several keys of one slot (one op at the owner); across
  // slots refused.
  const std::string online = "customer-limit-" + tag + ":online",
                    seen = "customer-limit-" + tag + ":seen";
  EXPECT_EQ(ask(c, {"SADD", online, "u1", "u2", "u3"}), ":3\r\n");
  EXPECT_EQ(ask(c, {"SMOVE", online, seen, "u3"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"SUNIONSTORE", seen, seen, online}), ":3\r\n");
  EXPECT_EQ(ask(c, {"SREM", online, "u1"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"SINTER", online, "elsewhere"}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  EXPECT_EQ(ask(c, {"RENAME", online, "elsewhere"}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  EXPECT_EQ(ask(c, {"MGET", a, b, note}), "*3\r\n$1\r\n5\r\n$1\r\n3\r\n$5\r\nhello\r\n");
  EXPECT_EQ(ask(c, {"MGET", a, "elsewhere"}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  EXPECT_EQ(ask(c, {"GET", "elsewhere"}), "$-1\r\n");
  // KEYS with the user's hash tag: answered by the tag's owner, wherever it is asked.
  const std::string keys = ask(c, {"KEYS", "customer-limit-" + tag + ":*"});
  EXPECT_EQ(keys.rfind("*9\r\n", 0), 0u) << keys;
  for (const auto& k : {a, b, note}) EXPECT_NE(keys.find(k), std::string::npos) << keys;
  // The fixed-window pattern in a transaction, forwarded to the owner as one flight.
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"INCR", b}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXPIRE", b, "59"}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}), "*2\r\n:4\r\n:1\r\n");
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"INCR", a}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"INCR", "elsewhere"}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}), "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  // WATCH through a node that does not own the key: another node's client changes it, and
  // the transaction does not run; left alone, it does.
  Client other(cl.node(1).port(), 3000);
  EXPECT_EQ(ask(c, {"WATCH", b}), "+OK\r\n");
  EXPECT_EQ(ask(other, {"INCR", b}), ":5\r\n");
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"INCR", b}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}), "*-1\r\n");
  EXPECT_EQ(ask(c, {"WATCH", b}), "+OK\r\n");
  EXPECT_EQ(ask(other, {"GET", b}), "$1\r\n5\r\n");
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"DECR", b}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}), "*1\r\n:4\r\n");
  EXPECT_EQ(ask(c, {"WATCH", "elsewhere"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"INCR", b}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}), "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  // Past the replication stream's interval: what follows is on the replica.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cl.node(2).kill9();
  std::string got;
  for (int i = 0; i < 1500 && got != "$1\r\n5\r\n"; ++i) {
    got = ask(c, {"GET", a});
    if (got != "$1\r\n5\r\n") std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(got, "$1\r\n5\r\n") << "the count did not survive the owner's kill -9";
  EXPECT_EQ(ask(c, {"INCR", a}), ":6\r\n");
  EXPECT_EQ(ask(c, {"GET", b}), "$1\r\n4\r\n");
  const std::string ttl = ask(c, {"TTL", a});
  ASSERT_EQ(ttl[0], ':');
  EXPECT_GT(std::stoll(ttl.substr(1)), 500) << "the deadline is absolute and travels with the key";
  EXPECT_LE(std::stoll(ttl.substr(1)), 600);
  EXPECT_EQ(ask(c, {"GET", note}), "$5\r\nhello\r\n");
  EXPECT_EQ(ask(c, {"HMGET", bucket, "tokens", "ts"}), "*2\r\n$1\r\n8\r\n$13\r\n1700000000000\r\n");
  EXPECT_EQ(ask(c, {"DEL", bucket}), ":1\r\n");
  EXPECT_EQ(ask(c, {"ZCARD", log}), ":2\r\n");
  EXPECT_EQ(ask(c, {"ZRANGE", log, "0", "-1", "WITHSCORES"}),
            "*4\r\n$17\r\nreq:1700000000001\r\n$13\r\n1700000000001\r\n"
            "$17\r\nreq:1700000000002\r\n$13\r\n1700000000002\r\n");
  EXPECT_EQ(ask(c, {"DEL", log}), ":1\r\n");
  EXPECT_EQ(ask(c, {"XRANGE", events, "-", "+"}),
            "*1\r\n*2\r\n$3\r\n6-1\r\n*2\r\n$5\r\nevent\r\n$9\r\ncompleted\r\n");
  const std::string info = ask(c, {"XINFO", "STREAM", events});
  EXPECT_NE(info.find("$17\r\nlast-generated-id\r\n$3\r\n6-1\r\n$20\r\nmax-deleted-entry-id\r\n$"
                      "3\r\n5-2\r\n$13\r\nentries-added\r\n:3\r\n"),
            std::string::npos)
      << info;
  EXPECT_EQ(
      ask(c, {"XADD", events, "6-1", "again", "x"}),
      "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n");
  // (its consumer group too: what was delivered and is still to be acknowledged)
  EXPECT_EQ(ask(c, {"XPENDING", events, "workers"}),
            "*4\r\n:1\r\n$3\r\n6-1\r\n$3\r\n6-1\r\n*1\r\n*2\r\n$2\r\nw1\r\n$1\r\n1\r\n");
  EXPECT_EQ(ask(c, {"XACK", events, "workers", "6-1"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"GETBIT", flags, "77"}), ":1\r\n");
  EXPECT_EQ(ask(c, {"BITCOUNT", flags}), ":1\r\n");
  EXPECT_EQ(ask(c, {"DEL", events, flags}), ":2\r\n");
  EXPECT_EQ(ask(c, {"SMEMBERS", online}), "*1\r\n$2\r\nu2\r\n");
  EXPECT_EQ(ask(c, {"SCARD", seen}), ":3\r\n");
  EXPECT_EQ(ask(c, {"SDIFF", seen, online}).size(),
            std::string("*2\r\n$2\r\nu1\r\n$2\r\nu3\r\n").size());
  EXPECT_EQ(ask(c, {"DEL", online, seen}), ":2\r\n");
  EXPECT_EQ(ask(c, {"KEYS", "customer-limit-" + tag + ":srv*"}).rfind("*2\r\n", 0), 0u);
  EXPECT_EQ(ask(c, {"DEL", a, b, note}), ":3\r\n");
  EXPECT_EQ(ask(c, {"EXISTS", a}), ":0\r\n");
  // FLUSHALL on each node removes the keys it serves; the removals reach the other's
  // copies, so both end empty (DBSIZE counts a replica's copies too).
  Client d(cl.node(1).port(), 3000);
  for (int i = 0; i < 50; ++i) ask(c, {"SET", "flushed:" + std::to_string(i), "x"});
  EXPECT_EQ(ask(c, {"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(ask(d, {"FLUSHALL", "ASYNC"}), "+OK\r\n");
  std::string left0, left1;
  for (int i = 0; i < 300 && (left0 != ":0\r\n" || left1 != ":0\r\n"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left0 = ask(c, {"DBSIZE"});
    left1 = ask(d, {"DBSIZE"});
  }
  EXPECT_EQ(left0, ":0\r\n");
  EXPECT_EQ(left1, ":0\r\n");
  EXPECT_EQ(ask(c, {"GET", "flushed:7"}), "$-1\r\n");
}

TEST(Failover, LeasesSurviveTheOwnersDeathAndBoundOnesComeBack) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  const int victim = cl.node(2).port();
  const auto seats = keys_owned_by(cl, victim, "seats:", 3);
  // Three permits of five on keys the victim owns.
  Client app(cl.node(0).port());
  for (const auto& k : seats) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(ask(app, {"FG.ACQUIRE", k, "5", "60000", "HOLDER", "app-1"}).substr(0, 8),
                "*5\r\n:1\r\n");
    }
  }
  // Leases bound to a connection held by the victim, on keys the survivors own.
  const auto bound_keys = keys_owned_by(cl, cl.node(0).port(), "conns:", 2);
  Client via_victim(victim);
  for (const auto& k : bound_keys) {
    EXPECT_EQ(ask(via_victim, {"FG.ACQUIRE", k, "4", "1500", "BOUND"}).substr(0, 8),
              "*5\r\n:1\r\n");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // renewed past their TTL
  EXPECT_EQ(ask(app, {"FG.COUNT", bound_keys[0]}), ":1\r\n");
  const auto killed_at = Clock::now();
  cl.node(2).kill9();
  ASSERT_TRUE(cl.formed(2, 15000));
  for (const auto& k : seats) {
    EXPECT_EQ(ask(app, {"FG.COUNT", k}), ":3\r\n") << k;  // none forgotten
    // No permit granted twice: two more fit under the limit of five, then none.
    EXPECT_EQ(ask(app, {"FG.ACQUIRE", k, "5", "60000"}).substr(0, 8), "*5\r\n:1\r\n");
    EXPECT_EQ(ask(app, {"FG.ACQUIRE", k, "5", "60000"}).substr(0, 8), "*5\r\n:1\r\n");
    EXPECT_EQ(ask(app, {"FG.ACQUIRE", k, "5", "60000"}).substr(0, 8), "*5\r\n:0\r\n");
  }
  EXPECT_EQ(ask(app, {"FG.HEARTBEAT", "app-1", "60000"}), ":9\r\n");
  // Nobody renews the dead node's bound leases: back within TTL + detection.
  Clock::time_point back;
  for (int i = 0; i < 600; ++i) {
    if (ask(app, {"FG.COUNT", bound_keys[0]}) == ":0\r\n" &&
        ask(app, {"FG.COUNT", bound_keys[1]}) == ":0\r\n") {
      back = Clock::now();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(back, Clock::time_point());
  const double took = std::chrono::duration<double>(back - killed_at).count();
  EXPECT_LT(took, 1.5 + 3.0);
  std::cout << "[ figures  ] bound leases of a killed node back after " << took
            << " s (TTL 1.5 s)\n";
}

TEST(Failover, BoundLeasesGoBackWhenTheirConnectionCloses) {
  TestCluster cl(2);
  ASSERT_TRUE(cl.formed(2));
  Client app(cl.node(0).port());
  {
    Client conn(cl.node(1).port());
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(
          ask(conn, {"FG.ACQUIRE", "ws:" + std::to_string(i), "2", "1000", "BOUND"}).substr(0, 8),
          "*5\r\n:1\r\n");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1600));  // outlives its TTL
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(ask(app, {"FG.COUNT", "ws:" + std::to_string(i)}), ":1\r\n");
  }
  std::string counts;
  for (int attempt = 0; attempt < 100; ++attempt) {
    counts.clear();
    for (int i = 0; i < 6; ++i) counts += ask(app, {"FG.COUNT", "ws:" + std::to_string(i)});
    if (counts == ":0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(counts, ":0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n");  // well before the 1 s TTL would have
}

// A lease granted while the slot's replica is dead but not yet declared so: nothing holds
// a copy, so the asker is told it did not get it, and the permit goes back at once rather
// than at the lease's TTL. Once the replica is declared dead, leases are granted again.
TEST(Failover, ALeaseNoReplicaAcknowledgedIsGivenBack) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  // Members replicate their successor in id order: node 2's slots are copied to node 0.
  const int owner = cl.node(2).port();
  const auto seats = keys_owned_by(cl, owner, "seats:", 1);
  Client app(owner);
  EXPECT_EQ(ask(app, {"FG.ACQUIRE", seats[0], "2", "60000", "HOLDER", "a"}).substr(0, 8),
            "*5\r\n:1\r\n");
  cl.node(0).kill9();
  const std::string refused = ask(app, {"FG.ACQUIRE", seats[0], "2", "60000", "HOLDER", "b"});
  EXPECT_EQ(refused, "-TRYAGAIN no replica acknowledged the lease in time; it was not granted\r\n");
  std::string count;
  for (int i = 0; i < 100 && count != ":1\r\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = ask(app, {"FG.COUNT", seats[0]});
  }
  EXPECT_EQ(count, ":1\r\n");  // only a's: b's went back, not after 60 s
  ASSERT_TRUE(cl.formed(2, 15000));
  EXPECT_EQ(ask(app, {"FG.ACQUIRE", seats[0], "2", "60000", "HOLDER", "b"}).substr(0, 8),
            "*5\r\n:1\r\n");
  EXPECT_EQ(ask(app, {"FG.ACQUIRE", seats[0], "2", "60000", "HOLDER", "c"}).substr(0, 8),
            "*5\r\n:0\r\n");
}

// A split whose minority holds every copy of some slots — their owner and its replica stopped
// past their failure timeout: the majority's new owner answers the policy's fail mode for
// cluster-empty-grace instead of serving those slots from empty; when the two come back they
// find the cluster went on without them (fenced), and what they held is merged into the new
// owner: every count survives.
TEST(Failover, WhenEveryCopyIsCutOffTheFailModeAnswersAndTheCountsComeBack) {
  const std::string config = policy_file();
  TestCluster cl(5, {"--config", config, "--cluster-empty-grace-ms", "30000"});
  ASSERT_TRUE(cl.formed(5));
  // Keys node 0 owns; its replica is node 1, the next id (t1-… < t2-…).
  const std::vector<std::string> keys = cl.keys_of(0, "cut:", 6);
  ASSERT_EQ(keys.size(), 6u);
  Client c(cl.node(2).port());
  for (const auto& k : keys)
    for (int i = 0; i < 5; ++i)
      ASSERT_EQ(ask(c, {"FG.TAKE", k, "journal"}).substr(0, 8), "*5\r\n:1\r\n");
  const std::string seats = cl.keys_of(0, "cut-seats:", 1).at(0);  // a lease of node 0's too
  ASSERT_EQ(ask(c, {"FG.ACQUIRE", seats, "seats", "HOLDER", "app-1"}).substr(0, 8), "*5\r\n:1\r\n");
  ::kill(cl.node(0).pid(), SIGSTOP);
  ::kill(cl.node(1).pid(), SIGSTOP);
  size_t in_grace = 0;
  for (int i = 0; i < 300 && in_grace == 0; ++i) {  // until the majority replans (≤ 15 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (size_t n = 2; n < 5; ++n) {
      Client s(cl.node(n).port(), 1000);
      const std::string g = field(s.request({"INFO", "cluster"}), "slots_in_grace");
      in_grace += g.empty() ? 0 : std::stoul(g);
    }
  }
  EXPECT_EQ(ask(c, {"FG.TAKE", keys[0], "journal"}),
            "*6\r\n:0\r\n:1000\r\n:0\r\n:1000\r\n:0\r\n$11\r\nfail_closed\r\n");
  EXPECT_GT(in_grace, 0u);  // held back, not served from empty
  ::kill(cl.node(0).pid(), SIGCONT);
  ::kill(cl.node(1).pid(), SIGCONT);
  for (const auto& k : keys) {  // the five taken before the split, merged back
    EXPECT_EQ(peek_until(c, k, "journal", 1000 - 5), 1000 - 5) << k;
  }
  // The lease came back with them: its slot started from nothing when they arrived.
  int64_t held = -1;
  for (int i = 0; i < 200 && held != 1; ++i) {
    const std::string r = ask(c, {"FG.COUNT", seats});
    held = r.rfind(":", 0) == 0 ? std::stoll(r.substr(1)) : -1;
    if (held != 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(held, 1);
  uint64_t merged = 0, fenced = 0;
  for (size_t n = 0; n < 5; ++n) {
    Client s(cl.node(n).port());
    const std::string info = s.request({"INFO", "cluster"});
    merged += std::stoull(field(info, "keys_merged"));
    fenced += std::stoull(field(info, "keys_sent_for_merge_when_fenced"));
  }
  EXPECT_GE(merged, keys.size());
  EXPECT_GE(fenced, keys.size());
  std::remove(config.c_str());
}

// cluster-replicas 3 on five nodes: a slot's owner and its first replica killed at once;
// the second replica serves the slot with its copy, and every count survives.
TEST(Failover, ThreeCopiesOutliveTwoNodesKilledAtOnce) {
  const std::string config = policy_file();
  TestCluster cl(5, {"--config", config, "--cluster-replicas", "3"});
  ASSERT_TRUE(cl.formed(5));
  ASSERT_TRUE(cl.replicated());
  {
    Client s(cl.node(3).port());
    EXPECT_EQ(field(s.request({"INFO", "cluster"}), "cluster_replicas"), "3");
  }
  // Keys node 0 owns; its replicas are nodes 1 and 2, the next ids.
  const std::vector<std::string> keys = cl.keys_of(0, "r3:", 6);
  ASSERT_EQ(keys.size(), 6u);
  Client c(cl.node(3).port());
  for (const auto& k : keys)
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(ask(c, {"FG.TAKE", k, "journal"}).substr(0, 8), "*5\r\n:1\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // (Δ for the second replica)
  cl.node(0).kill9();
  cl.node(1).kill9();
  for (const auto& k : keys) EXPECT_EQ(peek_until(c, k, "journal", 1000 - 4), 1000 - 4) << k;
  Client s(cl.node(2).port());
  const std::string info = s.request({"INFO", "cluster"});
  EXPECT_GT(std::stoul(field(info, "slots_promoted")), 0u);  // served from its copy
  EXPECT_EQ(field(info, "slots_in_grace"), "0");
  std::remove(config.c_str());
}

TEST(Failover, WithoutAQuorumAPolicysFailModeAnswers) {
  const std::string config = policy_file();
  TestCluster cl(3, {"--config", config});
  ASSERT_TRUE(cl.formed(3));
  std::string elsewhere;  // a key the first node to die owns
  for (int i = 0; elsewhere.empty() && i < 1000; ++i) {
    if (cl.owner_port("q" + std::to_string(i)) == cl.node(1).port()) {
      elsewhere = "q" + std::to_string(i);
    }
  }
  ASSERT_FALSE(elsewhere.empty());
  floodgate::Client::Options opt;
  opt.seeds = {"127.0.0.1:" + std::to_string(cl.node(0).native_port())};
  opt.deadline = std::chrono::milliseconds(8000);
  floodgate::Client native(opt);
  ASSERT_TRUE(native.topology().ok());
  cl.node(1).kill9();
  cl.node(2).kill9();
  Client c(cl.node(0).port());
  for (int i = 0; i < 500; ++i) {  // until the survivor sees it is alone
    if (field(c.request({"INFO", "cluster"}), "cluster_quorum") == "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(ask(c, {"FG.TAKE", "k", "strict"}),
            "*6\r\n:0\r\n:1000000\r\n:0\r\n:1000\r\n:0\r\n$11\r\nfail_closed\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKE", "k", "lenient"}),
            "*6\r\n:1\r\n:1000000\r\n:1000000\r\n:-1\r\n:0\r\n$9\r\nfail_open\r\n");
  EXPECT_EQ(ask(c, {"FG.ACQUIRE", "k", "seats"}),
            "*6\r\n:0\r\n$-1\r\n:0\r\n:5\r\n:1000\r\n$11\r\nfail_closed\r\n");
  EXPECT_EQ(ask(c, {"FG.TAKE", "k", "fixed_window", "10", "1000"}),
            "-CLUSTERDOWN The cluster is down\r\n");
  const std::string info = c.request({"INFO", "cluster"});
  EXPECT_EQ(field(info, "fail_open_replies"), "1");
  EXPECT_EQ(field(info, "fail_closed_replies"), "2");
  EXPECT_EQ(field(info, "cluster_quorum"), "0");
  // The native client gets the same answers, at once: it cannot reach the dead owner, so it
  // has the survivor route the request, and the survivor answers with the policy's mode.
  const auto t0 = std::chrono::steady_clock::now();
  auto open = native.take(elsewhere, floodgate::Limit::policy("lenient"));
  ASSERT_TRUE(open.ok()) << floodgate::status_name(open.status()) << " " << open.error();
  EXPECT_TRUE(open->allowed);
  EXPECT_EQ(open->unavailable, "fail_open");
  EXPECT_EQ(open->retry_after_ms, -1);
  auto closed = native.take(elsewhere, floodgate::Limit::policy("strict"));
  ASSERT_TRUE(closed.ok()) << closed.error();
  EXPECT_FALSE(closed->allowed);
  EXPECT_EQ(closed->unavailable, "fail_closed");
  EXPECT_EQ(closed->retry_after_ms, 1000);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(7000));
  // Without a mode: retried until the deadline (the quorum may come back), then the node's
  // own words.
  opt.deadline = std::chrono::milliseconds(500);
  floodgate::Client impatient(opt);
  auto plain = impatient.take(elsewhere, floodgate::Limit::fixed_window(10, 1000));
  EXPECT_EQ(plain.status(), floodgate::Status::kUnavailable);
  EXPECT_EQ(plain.error(), "CLUSTERDOWN The cluster is down");
  std::remove(config.c_str());
}

// The native client sees one limiter across the cluster: it learns the topology, sends
// each key to its owner, and rides through the death of a node within its deadline.
TEST(NativeClient, RoutesToOwnersAndRidesThroughAFailover) {
  TestCluster cl(3);
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  floodgate::Client::Options o;
  o.seeds = {"127.0.0.1:" + std::to_string(cl.node(0).native_port()),
             "127.0.0.1:" + std::to_string(cl.node(1).native_port())};
  o.deadline = std::chrono::milliseconds(10000);
  floodgate::Client c(o);
  auto topo = c.topology();
  ASSERT_TRUE(topo.ok()) << topo.error();
  EXPECT_TRUE(topo->cluster);
  EXPECT_EQ(topo->nodes.size(), 3u);
  const uint64_t epoch0 = topo->epoch;
  const auto limit = floodgate::Limit::token_bucket(1000000, 1000, 1000);
  for (int i = 0; i < 300; ++i) {
    auto r = c.take("k" + std::to_string(i), limit);
    ASSERT_TRUE(r.ok()) << floodgate::status_name(r.status()) << " " << r.error();
  }
  EXPECT_EQ(c.stats().redirects, 0u);  // straight to the owners
  // The same limiter through RESP on any node.
  Client resp(cl.node(2).port());
  EXPECT_EQ(resp.request({"FG.PEEK", "k7", "token_bucket", "1000000", "1000", "1000"}), "*5");

  // Load across all slots while a node dies: every call still succeeds (retried on the
  // new owner once the cluster has failed over).
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::string first_error;
  std::mutex mu;
  std::thread load([&] {
    for (int i = 0; i < 200000 && !stop; ++i) {
      auto r = c.take("load" + std::to_string(i % 1000), limit);
      if (r.ok()) {
        ++ok;
      } else {
        std::lock_guard<std::mutex> lock(mu);
        if (failed++ == 0) first_error = r.error();
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  cl.node(2).kill9();
  const auto killed = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(6000));
  const int ok_at_6s = ok.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  stop = true;
  load.join();
  EXPECT_EQ(failed.load(), 0) << first_error;
  // Serving again, not stuck: still going at 7 s, or every call of the load already done.
  EXPECT_TRUE(ok.load() > ok_at_6s || ok.load() + failed.load() == 200000)
      << ok.load() << " ok at 7 s, " << ok_at_6s << " at 6 s";
  auto after = c.topology();
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->epoch, epoch0);  // learned (pushed) the new table
  std::printf("[ figures ] native client across a kill -9: %d calls ok, 0 failed; %.1f s\n",
              ok.load(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
}

}  // namespace
}  // namespace fg::testing

namespace fg::testing {
namespace {

// Operations: a policy set on one node is in force everywhere within a second; /readyz
// answers 200 only once a node has joined and holds its slots' state.
TEST(Operations, APolicySetOnOneNodeIsInForceOnAllWithinASecond) {
  TestCluster cluster(3);
  ASSERT_TRUE(cluster.formed(3));
  for (int round = 0; round < 3; ++round) {
    const std::string limit = std::to_string(10 + round);
    Client set(cluster.node(round).port());
    ASSERT_EQ(set.request({"FG.POLICY", "SET", "plan", "sliding_log", limit, "60000"}), "+OK");
    const auto start = std::chrono::steady_clock::now();
    std::set<size_t> seen;
    while (seen.size() < 3 && std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
      for (size_t i = 0; i < 3; ++i) {
        Client c(cluster.node(i).port());
        c.send(resp({"FG.POLICY", "GET", "plan"}));
        const std::string r = read_replies(c, 1);
        if (r.find("$5\r\nlimit\r\n:" + limit + "\r\n") != std::string::npos) seen.insert(i);
      }
      if (seen.size() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(seen.size(), 3u) << "round " << round;
    EXPECT_LT(took, std::chrono::seconds(1)) << "round " << round;
  }
  // Patterns and overrides travel the same way, and a key's owner uses them.
  Client c0(cluster.node(0).port());
  ASSERT_EQ(c0.request({"FG.POLICY", "MAP", "tenant:*", "plan"}), "+OK");
  ASSERT_EQ(c0.request({"FG.POLICY", "OVERRIDE", "tenant:big", "fixed_window", "500", "60000"}),
            "+OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (size_t i = 0; i < 3; ++i) {
    Client c(cluster.node(i).port());
    c.send(resp({"FG.TAKE", "tenant:small"}) + resp({"FG.TAKE", "tenant:big"}));
    const std::string r = read_replies(c, 2);
    EXPECT_NE(r.find("*5\r\n:1\r\n:12\r\n"), std::string::npos) << "node " << i << ": " << r;
    EXPECT_NE(r.find("*5\r\n:1\r\n:500\r\n"), std::string::npos) << "node " << i << ": " << r;
  }
}

// CONFIG SET replication-lag on a running member: the bound it reports (and its replicator's
// rounds) follow at once, and replication goes on.
TEST(Operations, ReplicationLagChangesOnARunningMember) {
  TestCluster cluster(2);
  ASSERT_TRUE(cluster.formed(2));
  Client c(cluster.node(0).port());
  ASSERT_EQ(c.request({"CONFIG", "SET", "replication-lag", "250ms"}), "+OK");
  const std::string m = http_get(cluster.node(0).admin_port(), "/metrics").body;
  EXPECT_NE(m.find("floodgate_replication_lag_bound_seconds 0.25\n"), std::string::npos) << m;
  for (int i = 1; i <= 3; ++i)
    EXPECT_EQ(c.request({"INCR", "lag-counter"}), ":" + std::to_string(i));
  EXPECT_TRUE(cluster.replicated());
}

// Polls every live node until each answers SCRIPT EXISTS sha with `want`; how long it took.
std::chrono::milliseconds until_all(TestCluster& cluster, const std::string& sha,
                                    const std::string& want) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    bool all = true;
    for (size_t i = 0; i < cluster.size(); ++i) {
      if (!cluster.node(i).alive()) continue;
      Client c(cluster.node(i).port());
      c.send(resp({"SCRIPT", "EXISTS", sha}));
      all = all && read_replies(c, 1) == want;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

TEST(Operations, AScriptLoadedOnOneNodeRunsOnEveryNodeAndOutlivesARestart) {
  TestCluster cluster(3);
  ASSERT_TRUE(cluster.formed(3));
  const std::string script = "return redis.call('INCR', KEYS[1])";
  Client c0(cluster.node(0).port());
  const std::string sha = c0.request({"SCRIPT", "LOAD", script});
  ASSERT_EQ(sha.size(), 40u) << sha;
  const std::string& hex = sha;
  EXPECT_LT(until_all(cluster, hex, "*1\r\n:1\r\n"), std::chrono::seconds(1));
  for (size_t i = 0; i < 3; ++i) {  // through every node, for a key wherever it lives
    Client c(cluster.node(i).port());
    EXPECT_EQ(c.request({"EVALSHA", hex, "1", "script-counter"}), ":" + std::to_string(i + 1));
  }
  // EVAL keeps its script the same way.
  const std::string other = "return 'other'";
  Client c1(cluster.node(1).port());
  EXPECT_EQ(c1.request({"EVAL", other, "0"}), "other");
  const std::string other_sha = c1.request({"SCRIPT", "LOAD", other});
  EXPECT_LT(until_all(cluster, other_sha, "*1\r\n:1\r\n"), std::chrono::seconds(1));

  // SCRIPT FLUSH on any node empties every node's cache.
  Client c2(cluster.node(2).port());
  ASSERT_EQ(c2.request({"SCRIPT", "FLUSH"}), "+OK");
  EXPECT_LT(until_all(cluster, hex, "*1\r\n:0\r\n"), std::chrono::seconds(1));
  EXPECT_LT(until_all(cluster, other_sha, "*1\r\n:0\r\n"), std::chrono::seconds(1));
  EXPECT_EQ(c0.request({"EVALSHA", hex, "1", "script-counter"}),
            "-NOSCRIPT No matching script. Please use EVAL.");

  // Loaded again, then a node dies and a fresh one joins: it gets the cache from its peers.
  ASSERT_EQ(c0.request({"SCRIPT", "LOAD", script}), sha);
  EXPECT_LT(until_all(cluster, hex, "*1\r\n:1\r\n"), std::chrono::seconds(1));
  cluster.node(1).kill9();
  NodeProcess& fresh = cluster.add();
  ASSERT_TRUE(cluster.formed(3));
  Client cf(fresh.port());
  cf.send(resp({"SCRIPT", "EXISTS", hex}));
  EXPECT_EQ(read_replies(cf, 1), "*1\r\n:1\r\n");
  const std::string counted = cf.request({"EVALSHA", hex, "1", "script-counter"});
  EXPECT_EQ(counted.substr(0, 1), ":") << counted;
}

// With tls-cluster every peer link is mutual TLS: the cluster forms, a command sent to a
// node that does not own its key is forwarded over it, and a killed owner's keys are served
// by its replica; every node counts the handshakes and none failed.
TEST(Cluster, PeerLinksSpeakMutualTls) {
  TestCluster cl(3, with_tls_cluster(certs()));
  ASSERT_TRUE(cl.formed(3));
  ASSERT_TRUE(cl.replicated());
  const int victim = cl.node(2).port();
  std::string key;
  for (int i = 0; key.empty() && i < 10000; ++i) {
    if (cl.owner_port("tls-peer:" + std::to_string(i)) == victim)
      key = "tls-peer:" + std::to_string(i);
  }
  ASSERT_FALSE(key.empty());
  Client c(cl.node(0).port(), 3000);
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(ask(c, {"INCR", key}), ":" + std::to_string(i) + "\r\n");
  for (size_t i = 0; i < 3; ++i) {
    const std::string m = http_get(cl.node(i).admin_port(), "/metrics").body;
    EXPECT_EQ(m.find("floodgate_tls_handshakes_total{result=\"ok\"} 0\n"), std::string::npos) << m;
    EXPECT_NE(m.find("floodgate_tls_handshakes_total{result=\"failed\"} 0\n"), std::string::npos)
        << m;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // (Δ: on the replica by now)
  cl.node(2).kill9();
  ASSERT_TRUE(cl.formed(2, 15000));
  EXPECT_EQ(ask(c, {"GET", key}), "$1\r\n5\r\n");
}

TEST(Operations, ReadyzFlipsOnceTheNodeHasJoined) {
  const int bus_a = free_port(), bus_b = free_port();
  const std::string seeds = "127.0.0.1:" + std::to_string(bus_a);
  const std::string secret =
      temp_file("readyz.secret", "readyz-test-secret-" + std::to_string(getpid()) + "\n");
  // B knows only A, which is not running yet: alive, but not ready.
  NodeProcess b({"--cluster-enabled", "--node-id", "b", "--cluster-port", std::to_string(bus_b),
                 "--seeds", seeds, "--cluster-secret-file", secret});
  ASSERT_TRUE(b.alive());
  EXPECT_EQ(http_get(b.admin_port(), "/healthz").status, 200);
  for (int i = 0; i < 10; ++i) {
    const HttpReply r = http_get(b.admin_port(), "/readyz");
    EXPECT_EQ(r.status, 503) << r.body;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  NodeProcess a({"--cluster-enabled", "--node-id", "a", "--cluster-port", std::to_string(bus_a),
                 "--seeds", seeds, "--cluster-secret-file", secret});
  ASSERT_TRUE(a.alive());
  // Ready once both are in one table and B holds its slots' state.
  int status = 0;
  std::string json;
  for (int i = 0; i < 200; ++i) {
    status = http_get(b.admin_port(), "/readyz").status;
    json = http_get(b.admin_port(), "/cluster").body;
    if (status == 200 && json.find("\"id\":\"a\"") != std::string::npos &&
        json.find("\"in_table\":false") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
  EXPECT_NE(json.find("\"id\":\"a\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"id\":\"b\""), std::string::npos) << json;
  const std::string m = http_get(a.admin_port(), "/metrics").body;
  EXPECT_NE(m.find("floodgate_cluster_members{state=\"alive\"} 2"), std::string::npos) << m;
  EXPECT_NE(m.find("floodgate_ready 1"), std::string::npos);
  std::remove(secret.c_str());
}

}  // namespace
}  // namespace fg::testing
