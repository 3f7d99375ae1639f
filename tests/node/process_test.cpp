// The built floodgate binary on loopback: redis-cli, pipelining, and the per-connection
// defences. Each test starts its own node; every loop is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

std::string cli(int port, const std::string& args) {
  return run("redis-cli -p " + std::to_string(port) + " " + args + " 2>&1");
}

// A client asks for 24 MB of replies at once (GET of a 1 MB "big", 24 times) and reads
// none: whether the node closed it (client-output-buffer-limit's hard limit).
bool closed_asking_24mb(int port) {
  Client greedy(port, 3000);
  std::string gets;
  for (int i = 0; i < 24; ++i) gets += encode({"GET", "big"});
  return greedy.send(gets) && greedy.closed_by_peer();
}

TEST(Process, RedisCliOneShot) {
  NodeProcess node;
  EXPECT_EQ(cli(node.port(), "PING"), "PONG\n");
  EXPECT_EQ(cli(node.port(), "CL.THROTTLE user123 15 30 60"), "0\n16\n15\n-1\n2\n");
  EXPECT_EQ(cli(node.port(), "FG.TAKE k sliding_log 1 60000"), "1\n1\n0\n-1\n60000\n");
  // Denied; retry and reset are just under a minute (real time passed since the take).
  std::string denied = cli(node.port(), "FG.TAKE k sliding_log 1 60000");
  EXPECT_EQ(denied.substr(0, 6), "0\n1\n0\n") << denied;
  const long retry_ms = std::stol(denied.substr(6));
  EXPECT_GT(retry_ms, 50000);
  EXPECT_LE(retry_ms, 60000);
  EXPECT_EQ(cli(node.port(), "DBSIZE"), "2\n");
  EXPECT_EQ(cli(node.port(), "NOSUCH x").substr(0, 60),
            "ERR unknown command 'NOSUCH', with args beginning with: 'x' ");
}

// --data-replication is what CONFIG GET reports (async unless set).
TEST(Process, ConfigGetReportsDataReplication) {
  NodeProcess plain;
  EXPECT_EQ(cli(plain.port(), "CONFIG GET data-replication"), "data-replication\nasync\n");
  NodeProcess sync({"--data-replication", "sync"});
  EXPECT_EQ(cli(sync.port(), "CONFIG GET data-replication"), "data-replication\nsync\n");
}

// The persistence and cluster parameters tools read: what the node runs with.
TEST(Process, ConfigGetReportsPersistenceAndClusterMode) {
  NodeProcess plain;
  EXPECT_EQ(cli(plain.port(), "CONFIG GET save"), "save\n\n");
  EXPECT_EQ(cli(plain.port(), "CONFIG GET dir"), "dir\n\n");
  EXPECT_EQ(cli(plain.port(), "CONFIG GET cluster-enabled"), "cluster-enabled\nno\n");
  const std::string dir = ::testing::TempDir() + "fg-config-dir-" + std::to_string(getpid());
  {
    NodeProcess saving({"--dir", dir, "--dbfilename", "a.fgs", "--save-interval-ms", "30000"});
    EXPECT_EQ(cli(saving.port(), "CONFIG GET save"), "save\n30 0\n");
    EXPECT_EQ(cli(saving.port(), "CONFIG GET dir"), "dir\n" + dir + "\n");
    EXPECT_EQ(cli(saving.port(), "CONFIG GET dbfilename"), "dbfilename\na.fgs\n");
  }
  std::filesystem::remove_all(dir);
  NodeProcess member({"--cluster-enabled", "--cluster-port", std::to_string(free_port())});
  EXPECT_EQ(cli(member.port(), "CONFIG GET cluster-enabled"), "cluster-enabled\nyes\n");
}

// CONFIG GET answers every setting of the settings table with the value in force (the
// port bound, a flag's duration in ms), and never a secret.
TEST(Process, ConfigGetAnswersTheSettingsInForceButNoSecret) {
  NodeProcess node({"--requirepass", "s3cret-pw", "--query-deadline-ms", "2m"});
  const std::string auth = "-a s3cret-pw --no-auth-warning ";
  EXPECT_EQ(cli(node.port(), auth + "CONFIG GET port"),
            "port\n" + std::to_string(node.port()) + "\n");
  EXPECT_EQ(cli(node.port(), auth + "CONFIG GET query-deadline"), "query-deadline\n120000ms\n");
  const std::string all = cli(node.port(), auth + "CONFIG GET '*'");
  EXPECT_EQ(all.find("s3cret-pw"), std::string::npos);
  EXPECT_EQ(all.find("requirepass"), std::string::npos);
  EXPECT_NE(all.find("script-time-limit\n5ms\n"), std::string::npos);
  EXPECT_NE(all.find("databases\n1\n"), std::string::npos);
}

// CONFIG GET answers a setting under its flag's name and Redis's name too.
TEST(Process, ConfigGetAnswersUnderTheFlagsNameAndRedissName) {
  NodeProcess node({"--query-deadline-ms", "2m"});  // (and --log-level warn)
  EXPECT_EQ(cli(node.port(), "CONFIG GET query-deadline-ms"), "query-deadline-ms\n120000ms\n");
  EXPECT_EQ(cli(node.port(), "CONFIG GET loglevel"), "loglevel\nwarn\n");
  EXPECT_EQ(cli(node.port(), "CONFIG GET busy-reply-threshold"), "busy-reply-threshold\n5ms\n");
}

// CONFIG SET puts in force what a running node can take — the caps, the timeouts and
// deadlines, the log level, the default user's password — all or nothing, and refuses the
// rest as immutable.
TEST(Process, ConfigSetPutsWhatARunningNodeCanTakeInForce) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client admin(node.port(), 3000);
  // maxclients: past the new cap a connection is refused; raised again, one is let in.
  ASSERT_EQ(admin.request({"CONFIG", "SET", "maxclients", "2"}), "+OK");
  EXPECT_EQ(cli(node.port(), "CONFIG GET maxclients"), "maxclients\n2\n");
  {
    Client second(node.port());
    ASSERT_EQ(second.cmd({"PING"}, 7), "+PONG\r\n");
    Client third(node.port());
    EXPECT_EQ(third.recv_all(), "-ERR max number of clients reached\r\n");
  }
  ASSERT_EQ(admin.request({"CONFIG", "SET", "maxclients", "100"}), "+OK");
  {
    Client more(node.port());
    EXPECT_EQ(more.cmd({"PING"}, 7), "+PONG\r\n");
  }
  // All or nothing: one immutable setting refuses the whole command.
  EXPECT_EQ(admin.request({"CONFIG", "SET", "maxclients", "5", "port", "1"}),
            "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set "
            "immutable config");
  EXPECT_EQ(cli(node.port(), "CONFIG GET maxclients"), "maxclients\n100\n");
  // request-deadline, by its flag's name: what a connection with none of its own has.
  ASSERT_EQ(admin.request({"CONFIG", "SET", "request-deadline-ms", "25"}), "+OK");
  EXPECT_EQ(admin.request({"FG.DEADLINE"}), ":25");
  EXPECT_EQ(cli(node.port(), "CONFIG GET request-deadline"), "request-deadline\n25ms\n");
  // log level, in Redis's words too.
  ASSERT_EQ(admin.request({"CONFIG", "SET", "loglevel", "warning"}), "+OK");
  EXPECT_EQ(cli(node.port(), "CONFIG GET log-level"), "log-level\nwarn\n");
  // timeout: an idle connection is closed within a second or two of the new limit.
  ASSERT_EQ(admin.request({"CONFIG", "SET", "timeout", "1"}), "+OK");
  {
    Client idle(node.port(), 5000);
    ASSERT_EQ(idle.cmd({"PING"}, 7), "+PONG\r\n");
    EXPECT_TRUE(idle.closed_by_peer());
  }
  EXPECT_TRUE(admin.closed_by_peer());  // (idle as long: closed as well, as Redis's)
  Client again(node.port(), 3000);
  ASSERT_EQ(again.request({"CONFIG", "SET", "timeout", "0"}), "+OK");
  // requirepass: new connections must AUTH; set empty, they need not.
  ASSERT_EQ(again.request({"CONFIG", "SET", "requirepass", "n3w-pass"}), "+OK");
  {
    Client stranger(node.port());
    EXPECT_EQ(stranger.request({"PING"}), "-NOAUTH Authentication required.");
    EXPECT_EQ(stranger.request({"AUTH", "n3w-pass"}), "+OK");
    EXPECT_EQ(stranger.request({"PING"}), "+PONG");
    ASSERT_EQ(stranger.request({"CONFIG", "SET", "requirepass", ""}), "+OK");
  }
  Client open(node.port());
  EXPECT_EQ(open.request({"PING"}), "+PONG");
  // client-output-buffer-limit: a class given is replaced, the others kept.
  ASSERT_EQ(open.request({"CONFIG", "SET", "client-output-buffer-limit", "normal 4mb 0 0"}), "+OK");
  EXPECT_EQ(cli(node.port(), "CONFIG GET client-output-buffer-limit"),
            "client-output-buffer-limit\nnormal 4194304 0 0 slave 268435456 67108864 60 pubsub "
            "33554432 8388608 60\n");
  ASSERT_EQ(open.request({"SET", "big", std::string(1 << 20, 'x')}), "+OK");
  EXPECT_TRUE(closed_asking_24mb(node.port()));
  EXPECT_EQ(open.request({"PING"}), "+PONG");
  // A tenant's user without @admin may not change the node's settings, nor write its file.
  ASSERT_EQ(open.request({"ACL", "SETUSER", "tenant", "on", ">t-pass", "~*", "+@all", "-@admin"}),
            "+OK");
  Client tenant(node.port());
  ASSERT_EQ(tenant.request({"AUTH", "tenant", "t-pass"}), "+OK");
  EXPECT_EQ(tenant.request({"CONFIG", "SET", "maxclients", "1"}).substr(0, 8), "-NOPERM ");
  EXPECT_EQ(tenant.request({"CONFIG", "REWRITE"}).substr(0, 8), "-NOPERM ");
  EXPECT_EQ(cli(node.port(), "CONFIG GET maxclients"), "maxclients\n100\n");
}

// CONFIG REWRITE writes what CONFIG SET changed into the config file, in place: the
// rest of the file stays as it was, and a node started from it again has the new values.
TEST(Process, ConfigRewriteWritesWhatConfigSetChangedIntoTheFile) {
  const std::string path = temp_file("rewrite.yaml",
                                     "# the operator's comment\n"
                                     "timeout: 0   # never\n"
                                     "maxclients:\n"
                                     "  100\n"
                                     "policies:\n"
                                     "  api: {kind: sliding_log, limit: 5, window: 1m}\n");
  {
    NodeProcess node({"--config", path});
    ASSERT_TRUE(node.alive());
    Client c(node.port());
    ASSERT_EQ(c.request({"CONFIG", "SET", "timeout", "300", "maxclients", "77"}), "+OK");
    ASSERT_EQ(c.request({"CONFIG", "SET", "request-deadline-ms", "20ms"}), "+OK");
    ASSERT_EQ(c.request({"CONFIG", "REWRITE"}), "+OK");
  }
  std::ifstream in(path);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(file,
            "# the operator's comment\n"
            "timeout: \"300\"\n"
            "maxclients: \"77\"\n"
            "policies:\n"
            "  api: {kind: sliding_log, limit: 5, window: 1m}\n"
            "request-deadline: \"20ms\"\n");
  NodeProcess again({"--config", path});
  ASSERT_TRUE(again.alive());
  EXPECT_EQ(cli(again.port(), "CONFIG GET maxclients"), "maxclients\n77\n");
  EXPECT_EQ(cli(again.port(), "CONFIG GET timeout"), "timeout\n300\n");
  EXPECT_EQ(cli(again.port(), "FG.DEADLINE"), "20\n");
  std::remove(path.c_str());
}

// CONFIG SET's refusals word for word as redis-server's.
TEST(Process, ConfigSetRefusesAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"CONFIG", "SET", "no-such-setting", "1"},
        {"CONFIG", "SET", "maxclients", "many"},
        {"CONFIG", "SET", "timeout", "5", "timeout", "6"},
        {"CONFIG", "SET", "maxclients"},
        {"CONFIG", "REWRITE"}}) {
    const std::string ask = encode(words);
    ASSERT_TRUE(fg.send(ask) && rc.send(ask));
    EXPECT_EQ(read_value(fg), read_value(rc)) << ask;
  }
}

// A RESP reply as a tree: a string (simple, bulk, error, number) or an array (maps too).
struct Resp {
  std::string s;
  std::vector<Resp> a;
  bool array = false;
};
Resp parse_resp(const std::string& in, size_t& at) {
  const size_t end = in.find("\r\n", at);
  const char t = in[at];
  const std::string line = in.substr(at + 1, end - at - 1);
  at = end + 2;
  Resp r;
  if (t == '$') {
    if (line == "-1") return r;
    r.s = in.substr(at, std::stoul(line));
    at += r.s.size() + 2;
  } else if (t == '*' || t == '%' || t == '~') {
    r.array = true;
    const long n = line == "-1" ? 0 : std::stol(line) * (t == '%' ? 2 : 1);
    for (long i = 0; i < n; ++i) r.a.push_back(parse_resp(in, at));
  } else {
    r.s = line;
  }
  return r;
}
// The words of each SLOWLOG GET entry (its fourth element) and its client name (its sixth),
// newest first, from the reply's bytes.
std::vector<std::vector<std::string>> slowlog_words(const std::string& reply) {
  size_t at = 0;
  const Resp r = parse_resp(reply, at);
  std::vector<std::vector<std::string>> out;
  for (const Resp& entry : r.a) {
    if (entry.a.size() < 6) continue;
    std::vector<std::string> words;
    for (const Resp& w : entry.a[3].a) words.push_back(w.s);
    words.push_back("name=" + entry.a[5].s);
    out.push_back(std::move(words));
  }
  return out;
}

// SLOWLOG keeps what redis-server keeps, side by side: with slowlog-log-slower-than 0 every
// command, EXEC's commands but not EXEC, secrets redacted (AUTH's and HELLO's passwords, ACL
// SETUSER's rules, CONFIG SET requirepass), the client's name, nothing after -1; a user
// without @admin may not read it.
TEST(Process, SlowlogKeepsWhatRedisServerKeepsWithSecretsRedacted) {
  RedisServer redis;
  NodeProcess node({"--script-time-limit-ms", "5000"});
  ASSERT_TRUE(node.alive());
  std::vector<std::vector<std::vector<std::string>>> logs;
  for (const int port : {redis.port(), node.port()}) {
    Client c(port);
    for (const std::vector<std::string>& words : std::vector<std::vector<std::string>>{
             {"CONFIG", "SET", "slowlog-log-slower-than", "0"},
             {"SLOWLOG", "RESET"},
             {"CLIENT", "SETNAME", "checker"},
             {"ACL", "SETUSER", "slowlog-user", "on", ">s3cret", "~*", "+@all"},
             {"AUTH", "wrong-password"},
             {"AUTH", "slowlog-user", "s3cret"},
             {"HELLO", "2", "AUTH", "slowlog-user", "s3cret"},
             {"AUTH", "default", "anything"},
             {"CONFIG", "SET", "requirepass", ""},
             {"SET", "k", std::string(200, 'v')},
             {"MULTI"},
             {"INCR", "n"},
             {"EXEC"},
             {"CONFIG", "SET", "slowlog-log-slower-than", "-1"},
             {"PING"}}) {
      ASSERT_FALSE(ask(c, words).empty()) << printable(words);
    }
    logs.push_back(slowlog_words(ask(c, {"SLOWLOG", "GET", "-1"})));
    EXPECT_EQ(ask(c, {"SLOWLOG", "LEN"}), ":" + std::to_string(logs.back().size()) + "\r\n");
  }
  EXPECT_EQ(logs[1], logs[0]);
  ASSERT_EQ(logs[1].size(), 11u);  // (from SLOWLOG RESET to INCR: EXEC is not kept)
  // (the redactions, as both wrote them)
  const std::vector<std::string> acl = {"ACL",        "SETUSER",    "(redacted)", "(redacted)",
                                        "(redacted)", "(redacted)", "(redacted)", "name=checker"};
  EXPECT_NE(std::find(logs[1].begin(), logs[1].end(), acl), logs[1].end());
  for (const auto& entry : logs[1]) {
    for (const std::string& word : entry) EXPECT_EQ(word.find("s3cret"), std::string::npos);
  }
  // Its own settings, by CONFIG GET, and a tenant's user without @admin refused.
  EXPECT_NE(cli(node.port(), "CONFIG GET slowlog-max-len").find("128"), std::string::npos);
  Client admin(node.port());
  ASSERT_EQ(ask(admin, {"ACL", "SETUSER", "tenant", "on", ">pw", "~*", "+@all", "-@admin"}),
            "+OK\r\n");
  Client tenant(node.port());
  ASSERT_EQ(ask(tenant, {"AUTH", "tenant", "pw"}), "+OK\r\n");
  EXPECT_EQ(ask(tenant, {"SLOWLOG", "GET"}).rfind("-NOPERM", 0), 0u);
  // A command slower than the threshold is kept, a quick one not: a script that counts to
  // 20 million (about 200 ms) against a threshold of 20 ms.
  ASSERT_EQ(ask(admin, {"CONFIG", "SET", "slowlog-log-slower-than", "20000"}), "+OK\r\n");
  ASSERT_EQ(ask(admin, {"SLOWLOG", "RESET"}), "+OK\r\n");
  ASSERT_EQ(ask(admin, {"PING"}), "+PONG\r\n");
  const std::string spin = "local n = 0 for i = 1, 20000000 do n = n + 1 end return 1";
  ASSERT_EQ(ask(admin, {"EVAL", spin, "0"}), ":1\r\n");
  const auto slow = slowlog_words(ask(admin, {"SLOWLOG", "GET"}));
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0][0], "EVAL");
}

// One argument of COMMAND DOCS without its names (Redis names its groups, "condition",
// "expiration"; Floodgate after their parts): type, token, flags, and its parts alike.
std::string doc_shape(const Resp& arg) {
  std::string type, token, flags, parts;
  for (size_t i = 0; i + 1 < arg.a.size(); i += 2) {
    const std::string& k = arg.a[i].s;
    const Resp& v = arg.a[i + 1];
    if (k == "type") type = v.s;
    if (k == "token") token = v.s;
    if (k == "flags")
      for (const Resp& f : v.a) flags += f.s + ",";
    if (k == "arguments")
      for (const Resp& p : v.a) parts += doc_shape(p) + " ";
  }
  return type + (token.empty() ? "" : "=" + token) + (flags.empty() ? "" : "(" + flags + ")") +
         (parts.empty() ? "" : "{" + parts + "}");
}
std::vector<std::string> doc_arguments(Client& c, const std::string& name) {
  size_t at = 0;
  const Resp r = parse_resp(ask(c, {"COMMAND", "DOCS", name}), at);
  std::vector<std::string> out;
  if (r.a.size() < 2) return out;
  const Resp& doc = r.a[1];
  for (size_t i = 0; i + 1 < doc.a.size(); i += 2) {
    if (doc.a[i].s != "arguments") continue;
    for (const Resp& arg : doc.a[i + 1].a) out.push_back(doc_shape(arg));
  }
  return out;
}

// COMMAND DOCS in Redis 7's shape: the arguments read from each row's syntax line come out
// as redis-server describes them (types, tokens, optional and repeated ones, choices and
// blocks), compared side by side for commands of every shape; COMMAND INFO's tips are
// redis-server's for every command both have.
TEST(Process, CommandDocsAndTipsAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  for (const char* name : {"get", "set", "del", "mset", "incrby", "lpush", "hset", "zadd", "expire",
                           "linsert", "blpop", "lmove", "getex"}) {
    const auto theirs = doc_arguments(rc, name);
    ASSERT_FALSE(theirs.empty()) << name;
    EXPECT_EQ(doc_arguments(fg, name), theirs) << name;
  }
  // A container's subcommands, each with its own arguments.
  const std::string config = ask(fg, {"COMMAND", "DOCS", "config"});
  EXPECT_NE(config.find("config|get"), std::string::npos);
  EXPECT_NE(config.find("config|set"), std::string::npos);
  auto tips = [](const std::string& out) {
    std::set<std::string> t;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind("nondeterministic_output", 0) == 0 || l.rfind("request_policy:", 0) == 0 ||
          l.rfind("response_policy:", 0) == 0)
        t.insert(l);
    }
    return t;
  };
  std::istringstream names(cli(node.port(), "COMMAND LIST"));
  int with_tips = 0;
  for (std::string name; std::getline(names, name);) {
    const std::string theirs = cli(redis.port(), "COMMAND INFO " + name);
    if (theirs.find('|') != std::string::npos || theirs.find('@') == std::string::npos) continue;
    EXPECT_EQ(tips(cli(node.port(), "COMMAND INFO " + name)), tips(theirs)) << name;
    with_tips += tips(theirs).empty() ? 0 : 1;
  }
  EXPECT_GT(with_tips, 25);
}

// COMMAND INFO in Redis 7's shape: each command both know lists the same ACL categories
// as redis-server's (FLUSHALL and FLUSHDB are also @admin here), and COMMAND GETKEYS and
// GETKEYSANDFLAGS answer as redis-server's, errors included.
TEST(Process, CommandInfoAndGetkeysAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  auto categories = [](const std::string& out) {
    std::set<std::string> cats;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);)
      if (!l.empty() && l[0] == '@') cats.insert(l);
    return cats;
  };
  std::istringstream names(cli(node.port(), "COMMAND LIST"));
  int compared = 0;
  for (std::string name; std::getline(names, name);) {
    const std::string theirs = cli(redis.port(), "COMMAND INFO " + name);
    if (categories(theirs).empty()) continue;             // (Floodgate's own)
    if (theirs.find('|') != std::string::npos) continue;  // (containers: their parts differ)
    if (name == "flushall" || name == "flushdb") continue;
    EXPECT_EQ(categories(cli(node.port(), "COMMAND INFO " + name)), categories(theirs)) << name;
    ++compared;
  }
  EXPECT_GT(compared, 150);
  Client fg(node.port()), rc(redis.port());
  for (const std::vector<std::string>& words : std::vector<std::vector<std::string>>{
           {"COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"},
           {"COMMAND", "GETKEYS", "GET", "k"},
           {"COMMAND", "GETKEYS", "eval", "return 1", "2", "k1", "k2", "arg"},
           {"COMMAND", "GETKEYS", "eval", "return 1", "5", "k1"},
           {"COMMAND", "GETKEYS", "rename", "from", "to"},
           {"COMMAND", "GETKEYS", "sinterstore", "dest", "a", "b", "c"},
           {"COMMAND", "GETKEYS", "zunionstore", "dest", "2", "a", "b", "WEIGHTS", "1", "2"},
           {"COMMAND", "GETKEYSANDFLAGS", "get", "k"},
           {"COMMAND", "GETKEYSANDFLAGS", "mset", "a", "1", "b", "2"},
           {"COMMAND", "GETKEYS", "get"},
           {"COMMAND", "GETKEYS", "get", "a", "b"},
           {"COMMAND", "GETKEYS", "no-such-command", "a"},
           {"COMMAND", "GETKEYS", "config", "get", "x"}}) {
    const std::string ask = encode(words);
    ASSERT_TRUE(fg.send(ask) && rc.send(ask));
    EXPECT_EQ(read_value(fg), read_value(rc)) << ask;
  }
}

// io-idle-poll-us reaches the I/O thread: CONFIG GET and INFO report it, and under a load
// whose next request comes within the poll, the thread finds it awake (INFO's hits).
TEST(Process, IoIdlePollIsReportedAndWorks) {
  auto stat = [](int port, const std::string& key) {  // (-1: not reported)
    const std::string v = info_field(cli(port, "INFO"), key);
    return v.empty() ? -1L : std::stol(v);
  };
  NodeProcess plain;
  EXPECT_EQ(cli(plain.port(), "CONFIG GET io-idle-poll-us"), "io-idle-poll-us\n0\n");
  run("redis-benchmark -p " + std::to_string(plain.port()) + " -c 1 -n 2000 -q -t ping");
  EXPECT_EQ(stat(plain.port(), "io_idle_poll_hits"), 0);
  EXPECT_EQ(stat(plain.port(), "io_idle_poll_misses"), 0);
  NodeProcess polling({"--io-idle-poll-us", "1000"});
  EXPECT_EQ(cli(polling.port(), "CONFIG GET io-idle-poll-us"), "io-idle-poll-us\n1000\n");
  EXPECT_EQ(stat(polling.port(), "io_idle_poll_us"), 1000);
  // Five clients, one request at a time each: the thread often runs dry and the next
  // request comes within the 1 ms poll. (How often depends on how busy the machine is;
  // tests run side by side, so only "some" is certain.)
  run("redis-benchmark -p " + std::to_string(polling.port()) + " -c 5 -n 10000 -q -t ping");
  EXPECT_GT(stat(polling.port(), "io_idle_poll_hits"), 0);
  EXPECT_GE(stat(polling.port(), "io_idle_poll_misses"), 0);  // (reported)
}

TEST(Process, RedisCliInteractiveSession) {
  NodeProcess node;
  // redis-cli reads commands from a pipe exactly as typed at its prompt.
  std::string out =
      run("printf 'PING\\nCL.THROTTLE a 1 1 1\\nHELLO 3\\nFG.COUNT c\\nQUIT\\n' | "
          "redis-cli -p " +
          std::to_string(node.port()) + " 2>&1");
  EXPECT_NE(out.find("PONG"), std::string::npos) << out;
  EXPECT_NE(out.find("floodgate"), std::string::npos) << out;
  EXPECT_NE(out.find("proto 3"), std::string::npos) << out;
  EXPECT_EQ(out.substr(0, 16), "PONG\n0\n2\n1\n-1\n1\n") << out;
}

// redis-cli at a real terminal (tmux gives it one): prompt, hints, RESP3 rendering.
TEST(Process, RedisCliInteractiveAtATerminal) {
  NodeProcess node;
  const std::string session = "fgtest" + std::to_string(node.port());
  run("tmux new-session -d -s " + session + " -x 120 -y 40 'redis-cli -p " +
      std::to_string(node.port()) + "'");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (const char* line : {"CL.THROTTLE user:1 4 1 1", "HELLO 3", "FG.COUNT nobody"}) {
    run("tmux send-keys -t " + session + " '" + line + "' Enter");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  const std::string screen = run("tmux capture-pane -t " + session + " -p");
  run("tmux kill-session -t " + session);
  EXPECT_NE(screen.find("5) (integer) 1"), std::string::npos) << screen;
  EXPECT_NE(screen.find("\"server\" => \"floodgate\""), std::string::npos) << screen;
  EXPECT_NE(screen.find("(integer) 0"), std::string::npos) << screen;
}

TEST(Process, PipelineOfManyCommandsAnswersInOrder) {
  NodeProcess node;
  Client c(node.port());
  std::string in, want;
  for (int i = 0; i < 3000; ++i) {
    in += "*3\r\n$7\r\nFG.TAKE\r\n$5\r\nhot:" + std::to_string(i % 10) + "\r\n$4\r\nfree\r\n";
  }
  // "free" is unknown without a config: every reply is the same error, in order.
  c.send(in);
  std::string want_one = "-ERR unknown policy 'free'\r\n";
  std::string got = c.recv_n(want_one.size() * 3000);
  ASSERT_EQ(got.size(), want_one.size() * 3000);
  for (int i = 0; i < 3000; ++i)
    ASSERT_EQ(got.substr(i * want_one.size(), want_one.size()), want_one);
}

TEST(Process, HotKeyNeverOverAdmitsUnderConcurrency) {
  NodeProcess node;
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      Client c(node.port());
      std::string in;
      for (int i = 0; i < 100; ++i) {
        in +=
            "*5\r\n$7\r\nFG.TAKE\r\n$3\r\nhot\r\n$11\r\nsliding_log\r\n$3\r\n250\r\n"
            "$6\r\n600000\r\n";
      }
      in += "*1\r\n$4\r\nPING\r\n";  // sentinel: everything before it has been answered
      c.send(in);
      std::string got = c.recv_until("+PONG\r\n");
      int n = 0;
      for (size_t pos = 0; (pos = got.find("*5\r\n:1\r\n", pos)) != std::string::npos; ++pos) ++n;
      allowed += n;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 250);  // 800 attempts, exactly the limit admitted
}

// Stops a node and waits until it is seen stopped (the signal is delivered asynchronously).
void stop_and_wait(pid_t pid) {
  ::kill(pid, SIGSTOP);
  for (int i = 0; i < 1000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string id, comm, state;
    stat >> id >> comm >> state;
    if (state == "T") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// request-deadline on the real socket path: the kernel stamps when the bytes reached the
// host, so limiter commands that sat in the socket while the node was stopped (SIGSTOP, as
// an overloaded node's backlog sits there) are refused undecided when it reads them; what
// is sent after it resumes is decided, and so is everything on a connection that said
// FG.DEADLINE 0.
TEST(Process, ALimiterCommandThatWaitedPastTheDeadlineInTheKernelIsRefused) {
  NodeProcess node({"--request-deadline-ms", "50"});
  Client late(node.port());
  Client patient(node.port());
  const std::string take =
      "*5\r\n$11\r\nCL.THROTTLE\r\n$4\r\nslow\r\n$1\r\n9\r\n$1\r\n1\r\n$2\r\n60\r\n";
  const std::string ping = "*1\r\n$4\r\nPING\r\n";
  ASSERT_TRUE(patient.send("*2\r\n$11\r\nFG.DEADLINE\r\n$1\r\n0\r\n"));
  ASSERT_EQ(patient.recv_until("+OK\r\n"), "+OK\r\n");
  ASSERT_TRUE(late.send(ping));  // (both connections read once: stamping is on from then)
  ASSERT_EQ(late.recv_until("+PONG\r\n"), "+PONG\r\n");
  stop_and_wait(node.pid());
  late.send(take + take + ping);
  patient.send(take + ping);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(node.pid(), SIGCONT);
  const std::string got = late.recv_until("+PONG\r\n");
  EXPECT_EQ(got.rfind("-BUSY waited ", 0), 0u) << got;
  EXPECT_NE(got.find("past its 50 ms deadline: not decided\r\n-BUSY waited "), std::string::npos)
      << got;
  EXPECT_EQ(got.substr(got.size() - 7), "+PONG\r\n");
  // The patient connection's take was decided, the first charge of the key.
  EXPECT_EQ(patient.recv_until("+PONG\r\n"), "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:60\r\n+PONG\r\n");
  // Sent after the node resumed: decided.
  late.send(take);
  EXPECT_EQ(late.recv_until(":120\r\n"), "*5\r\n:0\r\n:10\r\n:8\r\n:-1\r\n:120\r\n");
  EXPECT_NE(cli(node.port(), "INFO stats").find("past_deadline_refused:2"), std::string::npos);
}

// A command whose first half came fresh and whose rest came late, with more behind it: the
// parser goes on with the half it holds (late: refused, its words read whole), the rest are
// refused from their bytes, and the connection stays sound — the byte scan never starts in
// the middle of a command the parser has begun.
TEST(Process, ALateReadAfterAHalfCommandIsReadWhole) {
  NodeProcess node({"--request-deadline-ms", "50"});
  Client c(node.port());
  const std::string take =
      "*5\r\n$11\r\nCL.THROTTLE\r\n$4\r\nhalf\r\n$1\r\n9\r\n$1\r\n1\r\n$2\r\n60\r\n";
  ASSERT_TRUE(c.send("*1\r\n$4\r\nPING\r\n"));
  ASSERT_EQ(c.recv_until("+PONG\r\n"), "+PONG\r\n");
  ASSERT_TRUE(c.send(take.substr(0, 20)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // (read, and half parsed)
  stop_and_wait(node.pid());
  c.send(take.substr(20) + take + take + "*1\r\n$4\r\nPING\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(node.pid(), SIGCONT);
  const std::string got = c.recv_until("+PONG\r\n");
  size_t busy = 0;
  for (size_t at = 0; (at = got.find("-BUSY waited ", at)) != std::string::npos; ++at) ++busy;
  EXPECT_EQ(busy, 3u) << got;
  EXPECT_EQ(got.substr(got.size() - 7), "+PONG\r\n") << got;
  EXPECT_EQ(got.find("Protocol error"), std::string::npos) << got;
  // Nothing was charged: the key's first take now leaves 9.
  c.send(take);
  EXPECT_EQ(c.recv_until(":60\r\n"), "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:60\r\n");
}

TEST(Process, ProtocolErrorClosesOnlyThatClient) {
  NodeProcess node;
  Client good(node.port());
  Client bad(node.port());
  bad.send("*1\r\n$-7\r\n");
  EXPECT_EQ(bad.recv_all(), "-ERR Protocol error: invalid bulk length\r\n");
  EXPECT_EQ(good.cmd({"PING"}, 7), "+PONG\r\n");
}

TEST(Process, GarbageNeverCrashesTheNode) {
  NodeProcess node;
  uint32_t x = 12345;
  for (int round = 0; round < 200; ++round) {
    Client c(node.port(), 500);
    std::string junk;
    for (int i = 0; i < 512; ++i) {
      x = x * 1103515245 + 12345;
      const char alphabet[] = "*$\r\n0123456789-abc \"'\\x";
      junk += alphabet[(x >> 16) % (sizeof alphabet - 1)];
    }
    c.send(junk);
    c.recv_n(1);  // whatever it answers, or a 0.5 s wait
  }
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  EXPECT_EQ(c.cmd({"PING"}, 7), "+PONG\r\n");
}

TEST(Process, HalfSentCommandIsDroppedAtTheDeadline) {
  NodeProcess node({"--query-deadline-ms", "1500"});
  Client slow(node.port(), 6000);
  slow.send("*2\r\n$4\r\nECHO\r\n$5\r\nhel");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.closed_by_peer());
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(1000));
  Client other(node.port());
  EXPECT_EQ(other.cmd({"PING"}, 7), "+PONG\r\n");
}

TEST(Process, IdleTimeoutClosesSilentClients) {
  NodeProcess node({"--timeout", "1"});
  Client idle(node.port(), 6000);
  EXPECT_EQ(idle.cmd({"PING"}, 7), "+PONG\r\n");
  EXPECT_TRUE(idle.closed_by_peer());
}

TEST(Process, MaxClientsRefusesTheExtraOne) {
  NodeProcess node({"--maxclients", "3"});
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<Client>(node.port()));
    ASSERT_EQ(held.back()->cmd({"PING"}, 7), "+PONG\r\n");
  }
  Client extra(node.port());
  EXPECT_EQ(extra.recv_all(), "-ERR max number of clients reached\r\n");
  held.pop_back();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Client again(node.port());
  EXPECT_EQ(again.cmd({"PING"}, 7), "+PONG\r\n");
}

// Two clients each send 1.5 MB of a longer command and stop: their query buffers grow to 2 MB.
// With maxmemory-clients at 3 MB one of them is disconnected (the biggest, at once or within
// the second its connection next looks), the other keeps its connection, everyone else is
// served, and INFO counts it; without the cap both stay.
TEST(Process, ClientMemoryOverMaxmemoryClientsEvictsTheBiggest) {
  std::string part = "*9\r\n$4\r\nECHO\r\n";  // (arguments of 500 kB: proto-max-bulk-len is 1 MB)
  for (int i = 0; i < 3; ++i) part += "$500000\r\n" + std::string(500'000, 'x') + "\r\n";
  auto field = [](const std::string& info, const std::string& name) {
    const size_t at = info.find(name + ":");
    return at == std::string::npos ? -1 : std::stoll(info.substr(at + name.size() + 1));
  };
  for (const bool capped : {true, false}) {
    NodeProcess node(capped ? std::vector<std::string>{"--maxmemory-clients", "3000000"}
                            : std::vector<std::string>{});
    ASSERT_TRUE(node.alive());
    Client a(node.port(), 3000), b(node.port(), 3000);
    ASSERT_TRUE(a.connected() && b.connected());
    ASSERT_TRUE(a.send(part));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(b.send(part));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // (an idle one: its tick)
    Client other(node.port());
    EXPECT_EQ(other.cmd({"PING"}, 7), "+PONG\r\n");
    const std::string info = other.request({"INFO"});
    EXPECT_EQ(field(info, "evicted_clients"), capped ? 1 : 0) << info;
    EXPECT_EQ(field(info, "connected_clients"), capped ? 2 : 3) << info;
    if (capped) {
      EXPECT_NE(other.request({"CLIENT", "LIST"}).find(" tot-mem=2"), std::string::npos);
      EXPECT_LE(field(info, "mem_clients_normal"), 3'000'000) << info;
      EXPECT_EQ(field(info, "maxmemory_clients"), 3'000'000) << info;
    } else {
      EXPECT_GE(field(info, "mem_clients_normal"), 3'000'000) << info;
    }
  }
}

// What a client makes the node hold counts against maxmemory-clients too: a transaction
// queueing ever more commands, and a pipeline of GETs of a big value whose replies nobody
// reads. Each is evicted near the cap (not at 20x it), the node's memory stays near it,
// and everyone else is served.
TEST(Process, QueuedCommandsAndUnreadRepliesCountAgainstMaxmemoryClients) {
  NodeProcess node({"--maxmemory-clients", "16000000"});
  ASSERT_TRUE(node.alive());
  auto rss_mb = [&node] {
    std::ifstream in("/proc/" + std::to_string(node.pid()) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) / 1024;
    return -1L;
  };
  long peak = 0;
  {
    Client multi(node.port(), 3000);
    ASSERT_EQ(multi.cmd({"MULTI"}, 5), "+OK\r\n");
    std::string queued;
    for (int i = 0; i < 1000; ++i) queued += encode({"SET", "q", std::string(1000, 'v')});
    bool closed = false;
    for (int i = 0; i < 300 && !closed; ++i) {  // (300 MB queued if nothing stopped it)
      closed = !multi.send(queued);
      if (i % 10 == 0) peak = std::max(peak, rss_mb());
    }
    EXPECT_TRUE(closed || multi.closed_by_peer());
  }
  {
    Client setter(node.port());
    ASSERT_EQ(setter.request({"SET", "big", std::string(1 << 20, 'x')}), "+OK");
    Client reader(node.port(), 3000);
    const int small = 4096;
    setsockopt(reader.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string gets;
    for (int i = 0; i < 1000; ++i) gets += encode({"GET", "big"});
    bool closed = false;
    for (int i = 0; i < 4 && !closed; ++i) {  // (4 GB of replies if nothing stopped it)
      closed = !reader.send(gets);
      peak = std::max(peak, rss_mb());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    peak = std::max(peak, rss_mb());
    EXPECT_TRUE(closed || reader.closed_by_peer());
  }
  EXPECT_LT(peak, 150) << "the node's memory went far past maxmemory-clients";
  Client other(node.port());
  EXPECT_EQ(other.cmd({"PING"}, 7), "+PONG\r\n");
  const std::string info = other.request({"INFO"});
  const size_t at = info.find("evicted_clients:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stoi(info.substr(at + 16)), 2) << info;
}

// client-output-buffer-limit as redis-server's: CONFIG GET answers the same by default; a
// client whose replies pass the normal class's hard limit is closed at once, one whose
// unread replies stay past the soft limit for its seconds is closed then; others stay.
TEST(Process, ClientOutputBufferLimitClosesClientsPastItAsRedisServerDoes) {
  {
    RedisServer redis;
    NodeProcess node;
    ASSERT_TRUE(node.alive());
    Client fg(node.port()), rc(redis.port());
    const std::string ask = encode({"CONFIG", "GET", "client-output-buffer-limit"});
    ASSERT_TRUE(fg.send(ask) && rc.send(ask));
    EXPECT_EQ(read_value(fg), read_value(rc));
  }
  NodeProcess node({"--client-output-buffer-limit", "normal 16mb 256kb 1"});
  ASSERT_TRUE(node.alive());
  Client setter(node.port());
  ASSERT_EQ(setter.request({"SET", "big", std::string(1 << 20, 'x')}), "+OK");
  EXPECT_TRUE(closed_asking_24mb(node.port()));
  {
    // 10 MB unread: under hard, and past soft once the kernel's buffers (a few MB, which
    // redis-server does not count either) are full.
    Client soft(node.port(), 4000);
    const int small = 4096;
    setsockopt(soft.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string gets;
    for (int i = 0; i < 10; ++i) gets += encode({"GET", "big"});
    ASSERT_TRUE(soft.send(gets));
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  }
  Client fine(node.port());
  EXPECT_EQ(fine.request({"GET", "big"}).size(), size_t{1} << 20);  // (read as it comes)
  EXPECT_EQ(fine.request({"PING"}), "+PONG");
  const std::string info = fine.request({"INFO", "stats"});
  EXPECT_NE(info.find("clients_dropped_slow_reader:1\r\n"), std::string::npos) << info;
}

// CLIENT NO-EVICT ON keeps a client from being chosen: the other big one goes instead.
TEST(Process, ClientNoEvictIsPassedBy) {
  NodeProcess node({"--maxmemory-clients", "3000000"});
  ASSERT_TRUE(node.alive());
  std::string part = "*9\r\n$4\r\nECHO\r\n";
  for (int i = 0; i < 3; ++i) part += "$500000\r\n" + std::string(500'000, 'x') + "\r\n";
  Client kept(node.port(), 3000), gone(node.port(), 3000);
  ASSERT_EQ(kept.cmd({"CLIENT", "NO-EVICT", "ON"}, 5), "+OK\r\n");
  ASSERT_TRUE(kept.send(part + "$500000\r\n" + std::string(400'000, 'y')));  // (the bigger)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(gone.send(part));
  EXPECT_TRUE(gone.closed_by_peer());
  Client other(node.port());
  EXPECT_NE(other.request({"CLIENT", "LIST"}).find(" flags=e "), std::string::npos);
}

// CLIENT KILL and CLIENT LIST's filters answer as redis-server's, side by side: the errors
// word for word; by TYPE (a subscriber is pubsub), by ID (itself skipped unless SKIPME no,
// then closed after its reply), the old form by address (+OK, or no such client), by USER;
// what each kills closes, and what it leaves answers. Then MAXAGE and DOOR, the node's own,
// and a tenant without @admin refused both.
TEST(Process, ClientKillAnswersAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node(std::vector<std::string>{});
  ASSERT_TRUE(node.alive());
  auto field = [](const std::string& info, const std::string& name) {
    const size_t at = info.find(name + "=");
    return info.substr(at + name.size() + 1, info.find(' ', at) - at - name.size() - 1);
  };
  std::vector<std::vector<std::string>> replies;
  for (const int port : {redis.port(), node.port()}) {
    std::vector<std::string> got;
    Client admin(port, 3000), sub(port, 3000), victim(port, 3000), by_addr(port, 3000),
        self(port, 3000);
    ASSERT_TRUE(victim.connected());
    for (const std::vector<std::string>& bad :
         std::vector<std::vector<std::string>>{{"CLIENT", "KILL"},
                                               {"CLIENT", "KILL", "ID", "0", "TYPE", "normal"},
                                               {"CLIENT", "KILL", "ID", "x", "TYPE", "normal"},
                                               {"CLIENT", "KILL", "TYPE", "primary", "ID", "1"},
                                               {"CLIENT", "KILL", "USER", "nobody", "ID", "1"},
                                               {"CLIENT", "KILL", "SKIPME", "maybe", "ID", "1"},
                                               {"CLIENT", "KILL", "ID", "1", "TYPE"},
                                               {"CLIENT", "KILL", "BOGUS", "1", "ID", "1"},
                                               {"CLIENT", "KILL", "9.9.9.9:1"},
                                               {"CLIENT", "LIST", "TYPE", "primary"},
                                               {"CLIENT", "LIST", "ID", "1", "x"},
                                               {"CLIENT", "LIST", "BOGUS"},
                                               {"CLIENT", "KILL", "TYPE", "master"},
                                               {"CLIENT", "KILL", "TYPE", "replica"}}) {
      got.push_back(ask(admin, bad));
    }
    ASSERT_EQ(ask(sub, {"SUBSCRIBE", "ch"}).substr(0, 4), "*3\r\n");
    // (by TYPE: pubsub is the subscriber alone; normal lists the others)
    const std::string listed = ask(admin, {"CLIENT", "LIST", "TYPE", "pubsub"});
    EXPECT_EQ(listed.find("sub=1"), listed.rfind("sub=1")) << listed;
    EXPECT_NE(listed.find("sub=1"), std::string::npos) << listed;
    EXPECT_EQ(ask(admin, {"CLIENT", "LIST", "TYPE", "normal"}).find("sub=1 "), std::string::npos);
    got.push_back(ask(admin, {"CLIENT", "KILL", "TYPE", "pubsub"}));
    EXPECT_TRUE(sub.closed_by_peer());
    // By ID: once, then no more.
    const std::string victim_id = ask(victim, {"CLIENT", "ID"}).substr(1);
    const std::string id = victim_id.substr(0, victim_id.size() - 2);
    got.push_back(ask(admin, {"CLIENT", "KILL", "ID", id}));
    EXPECT_TRUE(victim.closed_by_peer());
    got.push_back(ask(admin, {"CLIENT", "KILL", "ID", id}));
    got.push_back(ask(admin, {"CLIENT", "LIST", "ID", id}));
    // The old form, by address: +OK, and it is gone.
    const std::string addr = field(ask(by_addr, {"CLIENT", "INFO"}), "addr");
    got.push_back(ask(admin, {"CLIENT", "KILL", addr}));
    EXPECT_TRUE(by_addr.closed_by_peer());
    got.push_back(ask(admin, {"CLIENT", "KILL", addr}));
    // Itself: skipped, unless SKIPME no; then its reply comes, and the connection ends.
    const std::string self_info = ask(self, {"CLIENT", "INFO"});
    const std::string self_id = field(self_info, "id");
    got.push_back(ask(self, {"CLIENT", "KILL", "ID", self_id}));
    got.push_back(ask(self, {"CLIENT", "KILL", "ID", self_id, "SKIPME", "no"}));
    EXPECT_TRUE(self.closed_by_peer());
    // By USER: every other connection of it.
    Client other1(port, 3000), other2(port, 3000);
    ASSERT_EQ(ask(other1, {"PING"}), "+PONG\r\n");
    ASSERT_EQ(ask(other2, {"PING"}), "+PONG\r\n");
    got.push_back(ask(admin, {"CLIENT", "KILL", "USER", "default"}));
    EXPECT_TRUE(other1.closed_by_peer());
    EXPECT_TRUE(other2.closed_by_peer());
    got.push_back(ask(admin, {"PING"}));
    replies.push_back(got);
  }
  ASSERT_EQ(replies[1].size(), replies[0].size());
  for (size_t i = 0; i < replies[0].size(); ++i) EXPECT_EQ(replies[1][i], replies[0][i]) << i;
  EXPECT_EQ(replies[1][0], "-ERR wrong number of arguments for 'client|kill' command\r\n");
  EXPECT_EQ(replies[1].back(), "+PONG\r\n");
  // MAXAGE (Redis 7.4's; Debian's redis-server is older): none that young is that old.
  Client c(node.port()), young(node.port());
  EXPECT_EQ(ask(c, {"CLIENT", "KILL", "MAXAGE", "0"}), "-ERR maxage should be greater than 0\r\n");
  EXPECT_EQ(ask(c, {"CLIENT", "KILL", "MAXAGE", "x"}),
            "-ERR maxage is not an integer or out of range\r\n");
  EXPECT_EQ(ask(c, {"CLIENT", "KILL", "MAXAGE", "1000"}), ":0\r\n");
  EXPECT_EQ(ask(young, {"PING"}), "+PONG\r\n");
  // Floodgate's own filter: DOOR.
  EXPECT_EQ(ask(c, {"CLIENT", "KILL", "DOOR", "rls"}), ":0\r\n");
  EXPECT_EQ(ask(c, {"CLIENT", "LIST", "DOOR", "native"}), "$0\r\n\r\n");
  const std::string resp = ask(c, {"CLIENT", "LIST", "DOOR", "resp"});
  EXPECT_NE(resp.find("door=resp"), std::string::npos) << resp;
  EXPECT_EQ(resp.find("door=native"), std::string::npos) << resp;
  EXPECT_EQ(ask(c, {"CLIENT", "KILL", "DOOR", "ftp"}).rfind("-ERR Unknown door 'ftp'", 0), 0u);
  // A tenant's user (no @admin) may neither kill nor list other connections.
  ASSERT_EQ(ask(c, {"ACL", "SETUSER", "tenant", "on", ">pw", "~*", "+@all", "-@admin"}), "+OK\r\n");
  Client tenant(node.port());
  ASSERT_EQ(ask(tenant, {"AUTH", "tenant", "pw"}), "+OK\r\n");
  EXPECT_EQ(ask(tenant, {"CLIENT", "KILL", "TYPE", "normal"}).rfind("-NOPERM", 0), 0u);
  EXPECT_EQ(ask(tenant, {"CLIENT", "LIST", "DOOR", "resp"}).rfind("-NOPERM", 0), 0u);
  EXPECT_EQ(ask(young, {"PING"}), "+PONG\r\n");
}

// CLIENT LIST's idle= is the seconds since the connection's last command, age= since it
// connected: a connection quiet for 2 s shows idle=2, and one command brings it back to 0.
TEST(Process, ClientListIdleCountsFromTheLastCommand) {
  NodeProcess node(std::vector<std::string>{});
  ASSERT_TRUE(node.alive());
  Client quiet(node.port()), asker(node.port());
  ASSERT_EQ(quiet.request({"CLIENT", "SETNAME", "quiet"}), "+OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  auto line_of_quiet = [&] {
    const std::string all = asker.request({"CLIENT", "LIST"});
    const size_t at = all.find("name=quiet ");
    return at == std::string::npos ? std::string() : all.substr(at, all.find('\n', at) - at);
  };
  auto field = [](const std::string& line, const std::string& name) {
    const size_t at = line.find(" " + name + "=");
    return at == std::string::npos ? -1 : std::stoi(line.substr(at + name.size() + 2));
  };
  std::string line = line_of_quiet();
  EXPECT_GE(field(line, "idle"), 2) << line;
  EXPECT_LE(field(line, "idle"), 3) << line;
  ASSERT_EQ(quiet.request({"PING"}), "+PONG");
  line = line_of_quiet();
  EXPECT_EQ(field(line, "idle"), 0) << line;
  EXPECT_GE(field(line, "age"), 2) << line;
}

TEST(Process, ClientThatDoesNotReadIsDropped) {
  NodeProcess node({"--output-timeout-ms", "1500"});
  Client reader(node.port());
  Client sink(node.port(), 8000);
  int rcvbuf = 4096;
  setsockopt(sink.fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  // Big replies, never read: the node must pause this client, then drop it.
  const std::string big(512 * 1024, 'x');
  std::string in;
  for (int i = 0; i < 8; ++i)
    in += "*2\r\n$4\r\nECHO\r\n$" + std::to_string(big.size()) + "\r\n" + big + "\r\n";
  std::thread writer([&] { sink.send(in); });
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  EXPECT_EQ(reader.cmd({"PING"}, 7), "+PONG\r\n");
  std::string info = reader.request({"INFO", "stats"});
  EXPECT_NE(info.find("clients_dropped_slow_reader:1"), std::string::npos) << info;
  shutdown(sink.fd(), SHUT_RDWR);
  writer.join();
  EXPECT_LT(node.rss_kb(), 200 * 1024);
}

TEST(Process, RequirePass) {
  NodeProcess node({"--requirepass", "s3cret"});
  EXPECT_EQ(cli(node.port(), "PING").substr(0, 31), "NOAUTH Authentication required.");
  EXPECT_EQ(
      run("redis-cli -p " + std::to_string(node.port()) + " -a s3cret --no-auth-warning PING"),
      "PONG\n");
}

TEST(Process, ConfigFilePoliciesAndFlagOverride) {
  const std::string path = ::testing::TempDir() + "/fg_policies.yaml";
  std::ofstream(path)
      << "port: 1\n"
         "policies:\n"
         "  starter: {kind: sliding_log, limit: 2, window: 1m}\n"
         "  ws_messages: {kind: token_bucket, capacity: 120, refill: 120, period: 1m}\n";
  NodeProcess node({"--config", path});  // --port from the helper wins over port: 1
  EXPECT_EQ(cli(node.port(), "FG.TAKE acct:1 starter"), "1\n2\n1\n-1\n60000\n");
  EXPECT_EQ(cli(node.port(), "FG.TAKE ws:1 ws_messages"), "1\n120\n119\n-1\n500\n");
  EXPECT_NE(cli(node.port(), "FG.POLICY LIST").find("starter"), std::string::npos);
}

TEST(Process, BadConfigIsRefusedWithKeyAndLine) {
  const std::string path = ::testing::TempDir() + "/fg_bad.yaml";
  std::ofstream(path) << "port: 6380\npolicies:\n  free:\n    kind: sliding_log\n    limit: -3\n"
                         "    window: 1m\n";
  std::string out = run(std::string(FLOODGATE_BIN) + " --config " + path + " 2>&1; echo rc=$?");
  EXPECT_NE(out.find("policies.free.limit (line 5)"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
}

TEST(Process, HelpListsTheFlags) {
  std::string out = run(std::string(FLOODGATE_BIN) + " --help");
  for (const char* flag : {"--bind", "--port", "--requirepass", "--maxclients", "--timeout",
                           "--config", "--max-keys", "--shards"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  }
}

TEST(Process, SigtermStopsCleanly) {
  NodeProcess node;
  int status = node.stop();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace fg::testing

namespace fg::testing {
namespace {

TEST(Process, RedisBenchmarkRunsACustomThrottleLoad) {
  NodeProcess node;
  std::string out =
      run("redis-benchmark -p " + std::to_string(node.port()) +
          " -c 10 -n 20000 -r 1000 -P 4 --csv CL.THROTTLE key:__rand_int__ 100 100 60");
  const std::string row = "\"CL.THROTTLE key:__rand_int__ 100 100 60\",\"";
  ASSERT_NE(out.find(row), std::string::npos) << out;
  const size_t at = out.find(row) + row.size();
  EXPECT_GT(std::stod(out.substr(at)), 1000.0) << out;
  // Its handshake (CONFIG GET save / appendonly) was answered, and keys were made.
  EXPECT_EQ(out.find("WARN"), std::string::npos) << out;
  EXPECT_GT(std::stol(cli(node.port(), "DBSIZE")), 500);
}

TEST(Process, IdleKeysExpireAndTheirMemoryComesBack) {
  NodeProcess node;
  // 50000 keys whose state is idle again after 5 s (one token of 5, refilled 1 per 5 s).
  std::string in;
  for (int i = 0; i < 50000; ++i) {
    const std::string k = "idle:" + std::to_string(i);
    in += "*6\r\n$7\r\nFG.TAKE\r\n$" + std::to_string(k.size()) + "\r\n" + k +
          "\r\n$12\r\ntoken_bucket\r\n$1\r\n5\r\n$1\r\n1\r\n$4\r\n5000\r\n";
  }
  in += "*1\r\n$6\r\nDBSIZE\r\n";
  Client c(node.port(), 20000);
  c.send(in);
  std::string got = c.recv_until(":50000\r\n");
  ASSERT_EQ(got.substr(got.size() - 8), ":50000\r\n");
  auto state_bytes = [&] {
    std::string info = c.request({"INFO", "memory"});
    const size_t at = info.find("limiter_state_bytes:");
    return std::stol(info.substr(at + 20));
  };
  EXPECT_GT(state_bytes(), 50000 * 24);
  int64_t keys = -1;
  for (int i = 0; i < 200 && keys != 0; ++i) {  // at most 20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    keys = std::stol(c.request({"DBSIZE"}).substr(1));
  }
  EXPECT_EQ(keys, 0);
  EXPECT_LT(state_bytes(), 64 * 1024);  // entries freed and the table shrunk
  std::string info = c.request({"INFO", "stats"});
  EXPECT_NE(info.find("expired_keys:50000"), std::string::npos) << info;
}

}  // namespace
}  // namespace fg::testing

namespace fg::testing {
namespace {

// Out of cluster mode too, a BOUND lease lives as long as its connection.
TEST(Process, ABoundLeaseIsRenewedWhileItsConnectionLivesAndFreedWhenItCloses) {
  NodeProcess node;
  Client app(node.port());
  {
    Client conn(node.port());
    conn.send("*5\r\n$10\r\nFG.ACQUIRE\r\n$4\r\nws:1\r\n$1\r\n2\r\n$3\r\n600\r\n$5\r\nBOUND\r\n");
    EXPECT_EQ(conn.recv_n(8), "*5\r\n:1\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // twice its TTL
    EXPECT_EQ(app.request({"FG.COUNT", "ws:1"}), ":1");
  }
  std::string count;
  for (int i = 0; i < 50 && count != ":0"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = app.request({"FG.COUNT", "ws:1"});
  }
  EXPECT_EQ(count, ":0");
  EXPECT_EQ(app.request({"FG.ACQUIRE", "ws:2", "2", "600", "HOLDER", "h", "BOUND"}),
            "-ERR syntax error");
}

}  // namespace
}  // namespace fg::testing
