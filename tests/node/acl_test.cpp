// Users and their rights, against the real thing: redis-server (Debian's) and a node read
// the same ACL file, and the same users send the same commands to both; every reply must
// be the same bytes. Then what only Floodgate has: the limiter category, the native door,
// reloads on SIGHUP and ACL LOAD.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "floodgate/client.hpp"
#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

// Users every Redis 7.0 rule of which Floodgate has too (no @limiter: redis-server would
// refuse it).
const char kUsers[] =
    "user app on >apppw ~app:* +@all -@dangerous -@admin\n"
    "user reader on >rpw %R~* +@read +@connection -@dangerous\n"
    "user writer on >wpw %W~w:* ~rw:* +@write +@read +@connection +@scripting\n"
    "user sub on >spw nopass ~* -@all +acl|whoami +client|getname +get +eval +@transaction\n"
    "user asleep off >zpw ~* +@all\n"
    "user two on >one >two ~s:* +@string +@keyspace -del +@transaction +@scripting\n";

TEST(AclDiff, UsersRightsAnswerAsRedisServerDoes) {
  const std::string file = temp_file("users.acl", kUsers);
  RedisServer redis({"--aclfile", file});
  NodeProcess node({"--aclfile", file, "--shards", "2"});
  ASSERT_TRUE(node.alive());
  using Words = std::vector<std::string>;
  // Per user (logged in as the first command), what it sends.
  const std::vector<std::pair<Words, std::vector<Words>>> sessions = {
      {{"AUTH", "app", "apppw"},
       {{"ACL", "WHOAMI"},
        {"INCR", "app:1"},
        {"INCR", "other:1"},
        {"SET", "app:s", "v"},
        {"GET", "app:s"},
        {"MGET", "app:s", "other:1"},
        {"MSET", "app:a", "1", "app:b", "2"},
        {"MSET", "app:a", "1", "other:b", "2"},
        {"DEL", "app:a", "other:b"},
        {"EXISTS", "other:1"},
        {"FLUSHALL"},
        {"FLUSHDB"},
        {"KEYS", "*"},
        {"INFO", "server"},
        {"CONFIG", "GET", "port"},
        {"CLIENT", "LIST"},
        {"CLIENT", "GETNAME"},
        {"ACL", "LIST"},
        {"ACL", "SETUSER", "x"},
        {"EVAL", "return redis.call('incr', KEYS[1])", "1", "other:2"},
        {"EVAL", "return redis.call('incr', KEYS[1])", "1", "app:2"},
        {"EVAL", "return redis.call('incr', 'other:3')", "0"},
        {"EVAL", "return redis.pcall('incr', 'other:3')", "0"},
        {"EVAL", "return redis.call('flushall')", "0"},
        {"EVAL", "return redis.acl_check_cmd('incr', 'other:3')", "0"},
        {"EVAL", "return redis.acl_check_cmd('incr', 'app:3')", "0"},
        {"EVAL", "return redis.acl_check_cmd('flushall')", "0"},
        {"MULTI"},
        {"INCR", "app:t"},
        {"INCR", "other:t"},
        {"EXEC"},
        {"MULTI"},
        {"INCR", "app:t"},
        {"EXEC"},
        {"WATCH", "other:w"},
        {"WATCH", "app:w"},
        // A key's encoding and size are its own user's business (the key must be one of the
        // user's, with any access: Redis's key specs for these say neither read nor write).
        {"OBJECT", "ENCODING", "other:1"},
        {"OBJECT", "REFCOUNT", "other:1"},
        {"OBJECT", "ENCODING", "app:1"},
        {"MEMORY", "USAGE", "other:1"},
        {"PING"},
        {"AUTH", "app", "wrong"},
        {"ACL", "WHOAMI"},
        {"AUTH", "asleep", "zpw"},
        {"AUTH", "nosuch", "x"},
        {"HELLO", "2", "AUTH", "app", "nope"},
        {"AUTH", "reader", "rpw"},
        {"ACL", "WHOAMI"}}},
      {{"AUTH", "reader", "rpw"},
       {{"GET", "app:s"},
        {"GET", "anything"},
        {"SET", "anything", "1"},
        {"TTL", "x"},
        {"HGETALL", "h"},
        {"ZRANGE", "z", "0", "-1"},
        {"DEL", "x"},
        {"PING"},
        {"ECHO", "hi"},
        {"DBSIZE"},
        {"KEYS", "*"},
        {"EVAL", "return 1", "0"}}},
      {{"AUTH", "writer", "wpw"},
       {{"SET", "w:1", "x"},
        {"GET", "w:1"},
        {"INCR", "w:2"},
        {"GET", "rw:1"},
        {"SET", "rw:1", "y"},
        {"GET", "rw:1"},
        {"SET", "x:1", "z"},
        {"SET", "w:1", "b", "GET"},
        {"SET", "rw:1", "b", "GET"},
        {"EVAL", "return redis.call('get', 'w:1')", "0"},
        {"EVAL", "return redis.call('set', 'w:3', 'v')", "0"},
        {"EVAL", "return redis.call('get', 'rw:1')", "0"},
        {"OBJECT", "ENCODING", "w:1"},  // (write access alone is enough)
        {"OBJECT", "ENCODING", "rw:1"}}},
      {{"AUTH", "sub", "anything"},
       {{"ACL", "WHOAMI"},
        {"ACL", "USERS"},
        {"CLIENT", "GETNAME"},
        {"CLIENT", "ID"},
        {"GET", "k"},
        {"SET", "k", "v"},
        {"EVAL", "return redis.call('get', 'k')", "0"},
        {"EVAL", "return redis.call('set', 'k', 'v')", "0"},
        {"MULTI"},
        {"GET", "k"},
        {"EXEC"}}},
      {{"AUTH", "two", "two"},
       {{"AUTH", "two", "one"},
        {"SET", "s:1", "5"},
        {"INCRBY", "s:1", "2"},
        {"EXPIRE", "s:1", "100"},
        {"DEL", "s:1"},
        {"UNLINK", "s:1"},
        {"HSET", "s:h", "f", "v"},
        {"MULTI"},
        {"SET", "s:2", "1"},
        {"DEL", "s:2"},
        {"EXEC"}}},
      {{"PING"},  // the default user
       {{"ACL", "WHOAMI"},
        {"ACL", "USERS"},
        {"ACL", "DRYRUN", "app", "incr", "other:1"},
        {"ACL", "DRYRUN", "app", "incr", "app:1"},
        {"ACL", "DRYRUN", "app", "flushall"},
        {"ACL", "DRYRUN", "reader", "set", "k", "v"},
        {"ACL", "DRYRUN", "writer", "get", "w:1"},
        {"ACL", "DRYRUN", "writer", "get", "rw:1"},
        {"ACL", "DRYRUN", "sub", "client", "getname"},
        {"ACL", "DRYRUN", "sub", "client", "id"},
        {"ACL", "DRYRUN", "nosuch", "get", "x"},
        {"ACL", "DRYRUN", "app", "nosuchcommand"},
        {"ACL", "DRYRUN", "app", "get"},
        {"ACL", "SETUSER", "bad", "+nosuch"},
        {"ACL", "SETUSER", "bad", "#abc"},
        {"ACL", "SETUSER", "bad", "<nopass"},
        {"ACL", "SETUSER", "bad", "%X~a"},
        {"ACL", "SETUSER", "bad", "~*", "~a"},
        {"ACL", "SETUSER", "bad", "&*", "&a"},
        {"ACL", "SETUSER", "bad", "+get|x"},
        {"ACL", "SETUSER", "bad", "+config|get|x"},
        {"ACL", "SETUSER", "bad", "+get|"},
        {"ACL", "SETUSER", "firsts", "on", "nopass", "~*", "-@all", "+client|getname", "+select|0"},
        {"ACL", "DRYRUN", "firsts", "select", "0"},
        {"ACL", "DRYRUN", "firsts", "select", "1"},
        {"ACL", "DRYRUN", "firsts", "client", "getname"},
        {"ACL", "DRYRUN", "firsts", "client", "id"},
        {"ACL", "SETUSER", "firsts", "-select"},
        {"ACL", "DRYRUN", "firsts", "select", "0"},
        {"ACL", "SETUSER", "bad", "what"},
        {"ACL", "SETUSER", "bad guy"},
        {"ACL", "GETUSER", "bad"},
        {"ACL", "SETUSER", "fresh", "on", ">pw", "~f:*", "+get"},
        {"ACL", "DRYRUN", "fresh", "get", "f:1"},
        {"ACL", "DRYRUN", "fresh", "get", "g:1"},
        {"ACL", "DRYRUN", "fresh", "set", "f:1", "v"},
        {"ACL", "SETUSER", "fresh", "+set"},
        {"ACL", "DRYRUN", "fresh", "set", "f:1", "v"},
        {"ACL", "SETUSER", "fresh", "reset"},
        {"ACL", "DRYRUN", "fresh", "get", "f:1"},
        {"ACL", "USERS"},
        {"ACL", "DELUSER", "fresh", "nosuch"},
        {"ACL", "DELUSER", "default"},
        {"ACL", "USERS"},
        {"ACL", "GETUSER", "nosuch"},
        {"ACL", "GENPASS", "0"},
        {"ACL", "GENPASS", "5000"},
        {"ACL", "CAT", "nosuch"},
        {"ACL", "NOSUCH"},
        {"ACL", "WHOAMI", "extra"},
        {"AUTH", "x"},
        {"AUTH", "a", "b", "c"}}},
  };
  for (const auto& [login, commands] : sessions) {
    Client fg(node.port()), rc(redis.port());
    ASSERT_TRUE(rc.connected()) << "redis-server did not start";
    const std::string a = ask(fg, login), b = ask(rc, login);
    ASSERT_EQ(a, b) << printable(login);
    for (const Words& w : commands) {
      const std::string x = ask(fg, w), y = ask(rc, w);
      const std::string sub = w.size() > 1 ? w[0] + " " + w[1] : w[0];
      if (sub == "INFO server" || sub == "CLIENT LIST" || sub == "CLIENT ID" || sub == "ACL LIST") {
        // (what a node says there is its own; the refusals must be the same)
        if (y[0] != '-') continue;
      }
      ASSERT_EQ(x, y) << "as " << (login.size() > 1 ? login[1] : "default") << ": " << printable(w);
    }
  }
}

// The words of a reply, flattened (bulk strings, integers, simple strings, errors).
std::vector<std::string> flat(const std::string& reply) {
  std::vector<std::string> out;
  std::istringstream in(reply);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '*' || line[0] == '%') continue;
    if (line[0] == '$') {
      std::getline(in, line);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      out.push_back(line);
    } else {
      out.push_back(line);
    }
  }
  return out;
}

// ACL LOG groups refusals as redis-server does (what was refused, to whom, where, how
// often); ages and client lines are each server's own.
TEST(AclDiff, AclLogAnswersAsRedisServerDoes) {
  const std::string file = temp_file("log.acl", kUsers);
  RedisServer redis({"--aclfile", file});
  NodeProcess node({"--aclfile", file});
  ASSERT_TRUE(node.alive());
  using Words = std::vector<std::string>;
  const std::vector<Words> as_app = {
      {"INCR", "other:1"},
      {"INCR", "other:1"},
      {"GET", "other:2"},
      {"FLUSHALL"},
      {"MULTI"},
      {"INCR", "other:3"},
      {"DISCARD"},
      {"EVAL", "return redis.pcall('incr', 'other:4')", "0"},
      {"EVAL", "return redis.pcall('flushall')", "0"},
      {"AUTH", "app", "wrong"},
      {"auth", "nosuch", "x"},
      {"INCR", "other:1"},
  };
  std::vector<std::string> logs[2];
  int i = 0;
  for (int port : {node.port(), redis.port()}) {
    Client admin(port), app(port);
    ASSERT_EQ(ask(admin, {"ACL", "LOG", "RESET"}), "+OK\r\n");
    ASSERT_EQ(ask(app, {"AUTH", "app", "apppw"}), "+OK\r\n");
    for (const Words& w : as_app) ask(app, w);
    std::string all;
    for (const Words& w :
         std::vector<Words>{{"ACL", "LOG"}, {"ACL", "LOG", "2"}, {"ACL", "LOG", "x"}}) {
      std::vector<std::string> words = flat(ask(admin, w));
      for (size_t k = 0; k + 1 < words.size(); ++k) {
        if (words[k] == "age-seconds" || words[k] == "client-info") words[++k] = "(own)";
      }
      for (const auto& x : words) all += x + " | ";
      all += "\n";
    }
    ask(admin, {"ACL", "LOG", "RESET"});
    all += std::to_string(flat(ask(admin, {"ACL", "LOG"})).size());
    logs[i++] = {all};
  }
  EXPECT_EQ(logs[0], logs[1]);
}

// Each category holds the commands redis-server puts there (among those both have), except
// what Floodgate adds on purpose: @admin on the flushes and SCRIPT FLUSH, @dangerous on
// SCRIPT FLUSH.
TEST(AclDiff, CategoriesAreRedisServers) {
  RedisServer redis;
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected());
  auto items = [](const std::string& reply) {
    std::set<std::string> out;
    std::istringstream in(reply);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty() && line[0] != '*' && line[0] != '$') out.insert(line);
    }
    return out;
  };
  const std::set<std::string> ours_all = items(ask(fg, {"COMMAND", "LIST"}));
  std::set<std::string> cats = items(ask(rc, {"ACL", "CAT"}));
  std::set<std::string> redis_knows;  // every command and subcommand redis-server has
  for (const auto& cat : cats)
    for (const auto& cmd : items(ask(rc, {"ACL", "CAT", cat}))) redis_knows.insert(cmd);
  const std::set<std::string> our_cats = items(ask(fg, {"ACL", "CAT"}));
  for (const auto& c : cats) EXPECT_TRUE(our_cats.count(c)) << c;
  EXPECT_TRUE(our_cats.count("limiter"));
  const std::set<std::string> added = {"admin flushall", "admin flushdb", "admin script|flush",
                                       "dangerous script|flush"};
  int compared = 0;
  for (const auto& cat : cats) {
    const std::set<std::string> ours = items(ask(fg, {"ACL", "CAT", cat}));
    const std::set<std::string> theirs = items(ask(rc, {"ACL", "CAT", cat}));
    for (const auto& cmd : theirs) {
      const std::string parent = cmd.substr(0, cmd.find('|'));
      if (!ours_all.count(parent)) continue;  // (a command Floodgate does not have)
      EXPECT_TRUE(ours.count(cmd)) << "@" << cat << " misses " << cmd;
      ++compared;
    }
    for (const auto& cmd : ours) {
      if (!redis_knows.count(cmd)) continue;  // (FG.*, and Redis 7.2's CLIENT SETINFO ...)
      EXPECT_TRUE(theirs.count(cmd) || added.count(cat + " " + cmd))
          << "@" << cat << " has " << cmd << ", redis-server's does not";
    }
  }
  EXPECT_GT(compared, 150);
}

// An application may take permits and nothing an operator does; a tenant only its keys;
// an operator everything. Both doors, and the refusals are counted.
TEST(Acl, AnApplicationTakesPermitsAndATenantOnlyItsKeys) {
  NodeProcess node({"--user", "app on >apppw ~* +@limiter", "--user",
                    "tenant on >tpw ~tenant-a:* +@limiter +@connection -fg.heartbeat", "--user",
                    "ops on >opspw ~* &* +@all", "--requirepass", "defpw"});
  ASSERT_TRUE(node.alive());
  Client app(node.port()), tenant(node.port()), ops(node.port());
  EXPECT_EQ(ask(app, {"AUTH", "app", "apppw"}), "+OK\r\n");
  EXPECT_EQ(ask(tenant, {"AUTH", "tenant", "tpw"}), "+OK\r\n");
  EXPECT_EQ(ask(ops, {"AUTH", "ops", "opspw"}), "+OK\r\n");

  EXPECT_EQ(ask(app, {"CL.THROTTLE", "u:1", "5", "10", "60"}).substr(0, 4), "*5\r\n");
  EXPECT_EQ(ask(app, {"FG.TAKE", "u:2", "token_bucket", "10", "1", "1000"}).substr(0, 4), "*5\r\n");
  EXPECT_EQ(ask(app, {"FG.ACQUIRE", "c:1", "3", "30000"}).substr(0, 4), "*5\r\n");
  EXPECT_EQ(ask(app, {"FG.POLICY", "SET", "free", "sliding_log", "1000000", "60000"}),
            "-NOPERM this user has no permissions to run the 'fg.policy|set' command\r\n");
  EXPECT_EQ(ask(app, {"FG.RESET", "u:1"}),
            "-NOPERM this user has no permissions to run the 'fg.reset' command\r\n");
  EXPECT_EQ(ask(app, {"FLUSHALL"}),
            "-NOPERM this user has no permissions to run the 'flushall' command\r\n");
  EXPECT_EQ(ask(app, {"SCRIPT", "FLUSH"}),
            "-NOPERM this user has no permissions to run the 'script|flush' command\r\n");

  EXPECT_EQ(ask(tenant, {"CL.THROTTLE", "tenant-a:x", "5", "10", "60"}).substr(0, 4), "*5\r\n");
  const std::string no_key =
      "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n";
  EXPECT_EQ(ask(tenant, {"CL.THROTTLE", "tenant-b:x", "5", "10", "60"}), no_key);
  EXPECT_EQ(ask(tenant, {"FG.COUNT", "tenant-b:c"}), no_key);
  EXPECT_EQ(ask(tenant, {"FG.HEARTBEAT", "h", "1000"}),
            "-NOPERM this user has no permissions to run the 'fg.heartbeat' command\r\n");
  EXPECT_EQ(ask(tenant, {"ACL", "WHOAMI"}),
            "-NOPERM this user has no permissions to run the 'acl|whoami' command\r\n");

  EXPECT_EQ(ask(ops, {"FG.POLICY", "SET", "free", "sliding_log", "100", "60000"}), "+OK\r\n");
  EXPECT_EQ(ask(ops, {"FG.RESET", "u:1"}), ":1\r\n");
  const std::string stats = ask(ops, {"INFO", "stats"});
  EXPECT_NE(stats.find("acl_access_denied_cmd:6"), std::string::npos) << stats;
  EXPECT_NE(stats.find("acl_access_denied_key:2"), std::string::npos) << stats;
  EXPECT_NE(ask(ops, {"CLIENT", "LIST"}).find("user=tenant"), std::string::npos);
  const HttpReply m = http_get(node.admin_port(), "/metrics");
  EXPECT_NE(m.body.find("floodgate_acl_denied_total{reason=\"key\"} 2"), std::string::npos);

  // The native door: the same rights, by the same rules.
  floodgate::Client::Options o;
  o.seeds = {"127.0.0.1:" + std::to_string(node.native_port())};
  o.deadline = std::chrono::milliseconds(2000);
  o.user = "tenant";
  o.password = "tpw";
  {
    floodgate::Client c(o);
    auto mine = c.take("tenant-a:n", floodgate::Limit::token_bucket(3, 1, 1000));
    ASSERT_TRUE(mine.ok()) << mine.error();
    auto theirs = c.take("tenant-b:n", floodgate::Limit::token_bucket(3, 1, 1000));
    EXPECT_EQ(theirs.status(), floodgate::Status::kNoPerm);
    EXPECT_EQ(theirs.error(), no_key.substr(1, no_key.size() - 3));
    EXPECT_EQ(c.reset("tenant-a:n").status(), floodgate::Status::kNoPerm);
  }
  {
    o.password = "wrong";
    floodgate::Client c(o);
    EXPECT_EQ(c.take("tenant-a:n", floodgate::Limit::token_bucket(3, 1, 1000)).status(),
              floodgate::Status::kNoAuth);
  }
  {
    o.user.clear();  // the default user, with requirepass
    o.password = "defpw";
    floodgate::Client c(o);
    EXPECT_TRUE(c.reset("tenant-a:n").ok());
  }
}

// A subscriber whose user can no longer hear its channels is closed when the rights go, as
// redis-server closes it (ACL SETUSER … resetchannels, ACL DELUSER); one that still may
// hears on. Both servers, side by side.
TEST(AclDiff, ASubscriberWhoseRightsGoIsClosedAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  for (int port : {redis.port(), node.port()}) {
    const std::string who = port == node.port() ? "floodgate" : "redis-server";
    Client admin(port);
    ASSERT_EQ(ask(admin, {"ACL", "SETUSER", "ta", "on", ">pw", "~ta:*", "&ta:*", "+@all",
                          "-@dangerous"}),
              "+OK\r\n")
        << who;
    auto subscriber = [&](const std::string& what) {
      auto c = std::make_unique<Client>(port, 2000);
      EXPECT_EQ(ask(*c, {"AUTH", "ta", "pw"}), "+OK\r\n") << who;
      EXPECT_EQ(ask(*c, {what == "p" ? "PSUBSCRIBE" : "SUBSCRIBE", "ta:*"}).substr(0, 4), "*3\r\n")
          << who;
      return c;
    };
    auto chan = subscriber("s"), pat = subscriber("p");
    // More rights: both stay and hear.
    ASSERT_EQ(ask(admin, {"ACL", "SETUSER", "ta", "&tb:*"}), "+OK\r\n");
    ASSERT_EQ(ask(admin, {"PUBLISH", "ta:*", "hello"}), ":2\r\n") << who;
    EXPECT_NE(read_value(*chan).find("hello"), std::string::npos) << who;
    EXPECT_NE(read_value(*pat).find("hello"), std::string::npos) << who;
    // The channels go: both are closed, and hear nothing more.
    ASSERT_EQ(ask(admin, {"ACL", "SETUSER", "ta", "resetchannels"}), "+OK\r\n");
    EXPECT_TRUE(chan->closed_by_peer()) << who << ": a subscriber kept its revoked channel";
    EXPECT_TRUE(pat->closed_by_peer()) << who << ": a subscriber kept its revoked pattern";
    // The user goes: its subscriber goes with it.
    ASSERT_EQ(ask(admin, {"ACL", "SETUSER", "ta", "&ta:*"}), "+OK\r\n");
    auto again = subscriber("s");
    ASSERT_EQ(ask(admin, {"ACL", "DELUSER", "ta"}), ":1\r\n");
    EXPECT_TRUE(again->closed_by_peer()) << who << ": a removed user's subscriber stayed";
    EXPECT_EQ(ask(admin, {"PUBLISH", "ta:*", "after"}), ":0\r\n") << who;
  }
}

// What plan a key is on, and which keys have plans of their own, are a tenant's own: WHICH
// on another's key is refused as any command on it is, OVERRIDES lists only keys the caller
// may use (an operator sees them all).
TEST(Acl, PolicyOverridesAndWhichShowATenantOnlyItsKeys) {
  NodeProcess node({"--user", "ta on >pw ~ta:* +@all -@dangerous", "--user",
                    "tb on >pw ~tb:* +@all -@dangerous"});
  ASSERT_TRUE(node.alive());
  Client ops(node.port()), ta(node.port());
  ASSERT_EQ(ask(ops, {"FG.POLICY", "SET", "gold", "sliding_log", "1000", "60000"}), "+OK\r\n");
  ASSERT_EQ(ask(ops, {"FG.POLICY", "OVERRIDE", "ta:vip", "gold"}), "+OK\r\n");
  ASSERT_EQ(ask(ops, {"FG.POLICY", "OVERRIDE", "tb:vip", "gold"}), "+OK\r\n");
  ASSERT_EQ(ask(ta, {"AUTH", "ta", "pw"}), "+OK\r\n");
  EXPECT_EQ(ask(ta, {"FG.POLICY", "OVERRIDES"}), "*1\r\n*2\r\n$6\r\nta:vip\r\n$4\r\ngold\r\n");
  EXPECT_EQ(ask(ops, {"FG.POLICY", "OVERRIDES"}).substr(0, 4), "*2\r\n");
  EXPECT_EQ(ask(ta, {"FG.POLICY", "WHICH", "tb:vip"}),
            "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n");
  EXPECT_EQ(ask(ta, {"FG.POLICY", "WHICH", "ta:vip"}).substr(0, 18), "*2\r\n$8\r\noverride\r\n");
  const std::string log = ask(ops, {"ACL", "LOG"});
  EXPECT_NE(log.find("tb:vip"), std::string::npos) << log;
}

// The users file is read again on SIGHUP and on ACL LOAD: changed rights apply to
// connections at once, a removed or disabled user's connections close, and a file that
// does not parse changes nothing.
TEST(Acl, TheUsersFileReloadsOnSighupAndAclLoad) {
  const std::string file = temp_file("reload.acl",
                                     "user ops on >opspw ~* +@all\n"
                                     "user a on >apw ~* +@all -flushall\n"
                                     "user b on >bpw ~* +@all\n");
  NodeProcess node({"--aclfile", file});
  ASSERT_TRUE(node.alive());
  Client ops(node.port()), a(node.port()), b(node.port());
  ASSERT_EQ(ask(ops, {"AUTH", "ops", "opspw"}), "+OK\r\n");
  ASSERT_EQ(ask(a, {"AUTH", "a", "apw"}), "+OK\r\n");
  ASSERT_EQ(ask(b, {"AUTH", "b", "bpw"}), "+OK\r\n");
  ASSERT_EQ(ask(a, {"INCR", "k"}), ":1\r\n");

  std::ofstream(file) << "user ops on >opspw ~* +@all\nuser a on >apw ~* +@all -incr\n";
  kill(node.pid(), SIGHUP);
  std::string r;
  for (int i = 0; i < 50; ++i) {  // (the reload is asynchronous)
    r = ask(a, {"INCR", "k"});
    if (r[0] == '-') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(r, "-NOPERM this user has no permissions to run the 'incr' command\r\n");
  EXPECT_EQ(ask(b, {"PING"}), "");  // b is gone: its connection closed
  Client b2(node.port());
  EXPECT_EQ(ask(b2, {"AUTH", "b", "bpw"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");

  // ACL LOAD: a bad file is refused whole, with where and why; a good one is taken.
  std::ofstream(file) << "user ops on >opspw ~* +@all\nuser a on >apw +nosuch\n";
  const std::string bad = ask(ops, {"ACL", "LOAD"});
  EXPECT_NE(bad.find(":2: Error in user declaration '+nosuch': Unknown command or category "
                     "name in ACL"),
            std::string::npos)
      << bad;
  EXPECT_EQ(ask(a, {"GET", "k"}).substr(0, 4), "$1\r\n");  // (still the old rules)
  std::ofstream(file) << "user ops on >opspw ~* +@all\nuser a off >apw ~* +@all\n";
  EXPECT_EQ(ask(ops, {"ACL", "LOAD"}), "+OK\r\n");
  EXPECT_EQ(ask(a, {"GET", "k"}), "");  // disabled: closed
  std::remove(file.c_str());
}

// Without an ACL file, ACL LOAD answers as redis-server does; a node whose users do not
// parse does not start, and says why.
TEST(Acl, BadUsersStopTheStartWithWhereAndWhy) {
  NodeProcess plain;
  Client c(plain.port());
  EXPECT_NE(ask(c, {"ACL", "LOAD"}).find("not configured to use an ACL file"), std::string::npos);
  // (and GENPASS: (bits + 3) / 4 hex digits, fresh each time)
  const std::string p1 = ask(c, {"ACL", "GENPASS"}), p2 = ask(c, {"ACL", "GENPASS"});
  EXPECT_EQ(p1.substr(0, 5), "$64\r\n");
  EXPECT_EQ(p1.find_first_not_of("0123456789abcdef", 5), 69u) << p1;
  EXPECT_NE(p1, p2);
  EXPECT_EQ(ask(c, {"ACL", "GENPASS", "10"}).substr(0, 4), "$3\r\n");
  const std::string out = run(std::string(FLOODGATE_BIN) + " --port 0 --user 'x on +@nosuch' 2>&1");
  EXPECT_NE(out.find("users:1: Error in user declaration '+@nosuch': Unknown command or "
                     "category name in ACL"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace fg::testing
