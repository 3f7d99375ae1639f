// A standalone node's state on disk (`--dir`): every kind of key, its deadline and the
// runtime policies come back after SIGTERM, SHUTDOWN and kill -9 (within the last save); a
// broken file is refused whole and set aside; two nodes never share one file. Each test
// starts its own nodes in a directory of its own; every loop is bounded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "node_process.hpp"

namespace fg::testing {
namespace {

std::string info_field(Client& c, const std::string& key) {
  c.send("*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n");
  std::string head;
  while (head.size() < 2 || head.compare(head.size() - 2, 2, "\r\n") != 0) {
    std::string one = c.recv_n(1);
    if (one.empty()) return "";
    head += one;
  }
  return fg::testing::info_field(c.recv_n(std::stoul(head.substr(1)) + 2), key);
}

struct Dir {
  Dir() {
    static int made = 0;
    path = ::testing::TempDir() + "fg-persist-" + std::to_string(getpid()) + "-" +
           std::to_string(++made);
    std::filesystem::remove_all(path);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  std::string file() const { return path + "/dump.fgs"; }
  std::string path;
};

std::string cli(int port, const std::string& args) {
  return run("redis-cli -p " + std::to_string(port) + " " + args + " 2>&1");
}

// A daily quota of 100 taken once (CL.THROTTLE key 99 100 86400).
void take(int port, const std::string& key) { cli(port, "CL.THROTTLE " + key + " 99 100 86400"); }

// What the quota has left: quantity 0 only looks ([limited, limit, remaining, retry, reset]).
int remaining(int port, const std::string& key) {
  std::istringstream in(cli(port, "CL.THROTTLE " + key + " 99 100 86400 0"));
  std::string limited, limit, left;
  in >> limited >> limit >> left;
  return left.empty() || !std::isdigit(static_cast<unsigned char>(left[0])) ? -1 : std::stoi(left);
}

TEST(Persistence, EveryKindOfStateAndTheRuntimePoliciesOutliveARestart) {
  Dir dir;
  {
    NodeProcess node({"--dir", dir.path});
    ASSERT_TRUE(node.alive());
    Client c(node.port());
    for (int i = 0; i < 7; ++i) take(node.port(), "daily:acme");
    {
      Client lease(node.port());  // (its reply read up to the grant; the lease is the holder's)
      EXPECT_EQ(lease.request({"FG.ACQUIRE", "conns:u1", "5", "600000", "HOLDER", "app-1"}), "*5");
      EXPECT_EQ(lease.request({"PING"}).substr(0, 2), ":1");
    }
    EXPECT_EQ(c.request({"INCR", "hits"}), ":1");
    EXPECT_EQ(c.request({"EXPIRE", "hits", "1000"}), ":1");
    EXPECT_EQ(c.request({"SET", "name", "floodgate"}), "+OK");
    EXPECT_EQ(c.request({"HSET", "bucket", "tokens", "7", "ts", "100"}), ":2");
    EXPECT_EQ(c.request({"ZADD", "log", "1", "a", "2", "b"}), ":2");
    EXPECT_EQ(c.request({"RPUSH", "q", "x", "y"}), ":2");
    EXPECT_EQ(c.request({"SADD", "online", "u1", "u2", "u3"}), ":3");
    EXPECT_EQ(c.request({"FG.POLICY", "SET", "pro", "gcra", "10", "1000", "60000"}), "+OK");
    EXPECT_EQ(c.request({"FG.POLICY", "MAP", "api:*", "pro"}), "+OK");
    EXPECT_EQ(c.request({"FG.POLICY", "OVERRIDE", "vip", "pro"}), "+OK");
    EXPECT_EQ(node.stop(), 0);  // SIGTERM saves
  }
  ASSERT_TRUE(std::filesystem::exists(dir.file()));
  NodeProcess node({"--dir", dir.path});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  EXPECT_EQ(remaining(node.port(), "daily:acme"), 93);  // 100 - 7
  EXPECT_EQ(c.request({"FG.COUNT", "conns:u1"}), ":1");
  EXPECT_EQ(c.request({"GET", "hits"}), "1");
  const std::string ttl = c.request({"TTL", "hits"});
  EXPECT_TRUE(ttl == ":1000" || ttl == ":999" || ttl == ":998") << ttl;  // a deadline, not reset
  EXPECT_EQ(c.request({"GET", "name"}), "floodgate");
  EXPECT_EQ(c.request({"HGET", "bucket", "tokens"}), "7");
  EXPECT_EQ(c.request({"ZCARD", "log"}), ":2");
  EXPECT_EQ(c.request({"LLEN", "q"}), ":2");
  EXPECT_EQ(c.request({"SCARD", "online"}), ":3");
  EXPECT_EQ(c.request({"SISMEMBER", "online", "u2"}), ":1");
  EXPECT_EQ(c.request({"FG.POLICY", "GET", "pro"}).substr(0, 1), "*");  // a map, not nil
  Client d(node.port());
  EXPECT_EQ(d.request({"FG.POLICY", "GET", "nosuch"}), "$-1");
  const std::string overrides =
      run("redis-cli -p " + std::to_string(node.port()) + " FG.POLICY OVERRIDES; redis-cli -p " +
          std::to_string(node.port()) + " FG.POLICY PATTERNS");
  EXPECT_NE(overrides.find("vip"), std::string::npos) << overrides;
  EXPECT_NE(overrides.find("api:*"), std::string::npos) << overrides;
}

TEST(Persistence, KillNineLosesAtMostWhatCameAfterTheLastSave) {
  Dir dir;
  {
    NodeProcess node({"--dir", dir.path, "--save-interval-ms", "200"});
    ASSERT_TRUE(node.alive());
    Client c(node.port());
    for (int i = 0; i < 10; ++i) take(node.port(), "daily:k");
    // A periodic save after those (the counter moves past the one already under way).
    const std::string saves = info_field(c, "rdb_saves");
    for (int i = 0; i < 100; ++i) {
      const std::string now = info_field(c, "rdb_saves");
      if (!now.empty() && !saves.empty() && std::stol(now) >= std::stol(saves) + 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (int i = 0; i < 5; ++i) take(node.port(), "daily:k");
    node.kill9();
  }
  NodeProcess node({"--dir", dir.path});
  ASSERT_TRUE(node.alive());
  const int left = remaining(node.port(), "daily:k");
  EXPECT_LE(left, 90);  // the 10 before the save, at least
  EXPECT_GE(left, 85);  // and never more than were taken
}

TEST(Persistence, SaveBgsaveLastsaveAndShutdownAnswerAsRedis) {
  {
    NodeProcess plain;
    Client c(plain.port());
    EXPECT_EQ(c.request({"SAVE"}).substr(0, 30), "-ERR this node has no dir: its");
    EXPECT_EQ(c.request({"BGSAVE"}).substr(0, 30), "-ERR this node has no dir: its");
    EXPECT_EQ(c.request({"LASTSAVE"}).substr(0, 1), ":");
  }
  Dir dir;
  NodeProcess node({"--dir", dir.path, "--save-interval-ms", "0"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  EXPECT_EQ(c.request({"BGSAVE", "NOW"}), "-ERR syntax error");
  EXPECT_EQ(c.request({"SET", "a", "1"}), "+OK");
  EXPECT_EQ(c.request({"SAVE"}), "+OK");
  const long at = std::stol(c.request({"LASTSAVE"}).substr(1));
  EXPECT_NEAR(at, static_cast<long>(time(nullptr)), 5);
  EXPECT_EQ(info_field(c, "snapshot_keys"), "1");
  const std::string bg = c.request({"BGSAVE"});
  EXPECT_TRUE(bg == "+Background saving started" ||
              bg == "-ERR Background save already in progress")
      << bg;
  EXPECT_EQ(c.request({"SHUTDOWN", "SAVE", "NOSAVE"}), "-ERR syntax error");
  EXPECT_EQ(c.request({"SHUTDOWN", "ABORT"}), "-ERR No shutdown in progress.");
  EXPECT_EQ(c.request({"SET", "b", "2"}), "+OK");
  c.send("*1\r\n$8\r\nSHUTDOWN\r\n");
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(node.wait_exit(), 0);
  NodeProcess again({"--dir", dir.path});
  Client d(again.port());
  EXPECT_EQ(d.request({"GET", "b"}), "2");  // saved on the way out
}

TEST(Persistence, ABrokenSnapshotIsRefusedSetAsideAndTheNodeStartsEmpty) {
  Dir dir;
  {
    NodeProcess node({"--dir", dir.path});
    Client c(node.port());
    EXPECT_EQ(c.request({"SET", "a", "1"}), "+OK");
    EXPECT_EQ(node.stop(), 0);
  }
  for (const char* how : {"flip", "truncate", "foreign"}) {
    SCOPED_TRACE(how);
    {  // a good file again
      NodeProcess node({"--dir", dir.path});
      Client c(node.port());
      EXPECT_EQ(c.request({"SET", "a", "1"}), "+OK");
      EXPECT_EQ(node.stop(), 0);
    }
    std::string bytes;
    {
      std::ifstream in(dir.file(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_GT(bytes.size(), 40u);
    if (std::string(how) == "flip") bytes[bytes.size() / 2] ^= 0x40;
    if (std::string(how) == "truncate") bytes.resize(bytes.size() - 7);
    if (std::string(how) == "foreign") bytes = "REDIS0011" + bytes.substr(9);
    std::ofstream(dir.file(), std::ios::binary | std::ios::trunc) << bytes;
    for (const auto& f : std::filesystem::directory_iterator(dir.path)) {
      if (f.path().string().find(".refused-") != std::string::npos)
        std::filesystem::remove(f.path());
    }
    NodeProcess node({"--dir", dir.path, "--save-interval-ms", "0"});
    ASSERT_TRUE(node.alive());
    Client c(node.port());
    EXPECT_EQ(c.request({"DBSIZE"}), ":0");  // nothing of it was used
    size_t aside = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir.path))
      aside += f.path().string().find(".refused-") != std::string::npos;
    EXPECT_EQ(aside, 1u);  // kept for whoever looks into it, and not overwritten
    EXPECT_FALSE(std::filesystem::exists(dir.file()));
    EXPECT_EQ(c.request({"SAVE"}), "+OK");
    EXPECT_EQ(node.stop(), 0);
  }
}

TEST(Persistence, TwoNodesNeverShareOneFile) {
  Dir dir;
  NodeProcess first({"--dir", dir.path});
  ASSERT_TRUE(first.alive());
  const std::string out =
      run(std::string(FLOODGATE_BIN) + " --port 0 --native-port 0 --admin-port 0 --dir " +
          dir.path + " 2>&1; echo exit=$?");
  EXPECT_NE(out.find("is in use by another floodgate process (pid " + std::to_string(first.pid())),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("exit=2"), std::string::npos) << out;
  const std::string bad = run(std::string(FLOODGATE_BIN) +
                              " --port 0 --dbfilename ../x.fgs --dir " + dir.path + " 2>&1");
  EXPECT_NE(bad.find("--dbfilename: must be a file name"), std::string::npos) << bad;
}

}  // namespace
}  // namespace fg::testing
