// Users and their rights: the ACL catalog (every command's categories and keys, from the
// command table) and the ACL command.
#include <openssl/rand.h>

#include <map>
#include <stdexcept>
#include <string>

#include "acl.hpp"
#include "command_context.hpp"
#include "command_table.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "words.hpp"

namespace fg {

namespace {

// Each command's categories: Redis 7.0's for the commands it shares (ACL CAT, compared
// with redis-server in tests), plus @admin on flushes and SCRIPT FLUSH; Floodgate's own
// commands take @limiter (an application's), or @admin and @dangerous (an operator's).
// Subcommands of containers are listed as Redis lists them, those Floodgate does not
// implement included, so an ACL file written for Redis loads.
const std::vector<std::pair<const char*, const char*>>& category_table() {
  static const std::vector<std::pair<const char*, const char*>> t = {
      {"cl.throttle", "write fast limiter"},
      {"fg.take", "write fast limiter"},
      {"fg.peek", "read fast limiter"},
      {"fg.reset", "keyspace write fast admin dangerous"},
      {"fg.acquire", "write fast limiter"},
      {"fg.renew", "write fast limiter"},
      {"fg.release", "write fast limiter"},
      {"fg.count", "read fast limiter"},
      {"fg.heartbeat", "write fast limiter"},
      {"fg.releaseall", "write fast limiter"},
      {"fg.policy", "slow"},
      {"fg.policy|set", "admin slow dangerous"},
      {"fg.policy|del", "admin slow dangerous"},
      {"fg.policy|map", "admin slow dangerous"},
      {"fg.policy|unmap", "admin slow dangerous"},
      {"fg.policy|override", "admin slow dangerous"},
      {"fg.policy|unoverride", "admin slow dangerous"},
      {"fg.policy|get", "read slow"},
      {"fg.policy|list", "read slow"},
      {"fg.policy|patterns", "read slow"},
      {"fg.policy|overrides", "read slow"},
      {"fg.policy|which", "read slow"},
      {"get", "read string fast"},
      {"set", "write string slow"},
      {"setnx", "write string fast"},
      {"setex", "write string slow"},
      {"psetex", "write string slow"},
      {"getdel", "write string fast"},
      {"getex", "write string fast"},
      {"incr", "write string fast"},
      {"incrby", "write string fast"},
      {"incrbyfloat", "write string fast"},
      {"decr", "write string fast"},
      {"decrby", "write string fast"},
      {"mget", "read string fast"},
      {"mset", "write string slow"},
      {"del", "keyspace write slow"},
      {"unlink", "keyspace write fast"},
      {"exists", "keyspace read fast"},
      {"type", "keyspace read fast"},
      {"expire", "keyspace write fast"},
      {"pexpire", "keyspace write fast"},
      {"expireat", "keyspace write fast"},
      {"pexpireat", "keyspace write fast"},
      {"ttl", "keyspace read fast"},
      {"pttl", "keyspace read fast"},
      {"expiretime", "keyspace read fast"},
      {"pexpiretime", "keyspace read fast"},
      {"persist", "keyspace write fast"},
      {"keys", "keyspace read slow dangerous"},
      {"scan", "keyspace read slow"},
      {"hget", "read hash fast"},
      {"hset", "write hash fast"},
      {"hsetnx", "write hash fast"},
      {"hmset", "write hash fast"},
      {"hmget", "read hash fast"},
      {"hincrby", "write hash fast"},
      {"hincrbyfloat", "write hash fast"},
      {"hdel", "write hash fast"},
      {"hgetall", "read hash slow"},
      {"hlen", "read hash fast"},
      {"hexists", "read hash fast"},
      {"zadd", "write sortedset fast"},
      {"zrem", "write sortedset fast"},
      {"zcard", "read sortedset fast"},
      {"zcount", "read sortedset fast"},
      {"zscore", "read sortedset fast"},
      {"zrange", "read sortedset slow"},
      {"zrangebyscore", "read sortedset slow"},
      {"zremrangebyscore", "write sortedset slow"},
      {"zremrangebyrank", "write sortedset slow"},
      {"zpopmin", "write sortedset fast"},
      {"lpush", "write list fast"},
      {"rpush", "write list fast"},
      {"lpop", "write list fast"},
      {"rpop", "write list fast"},
      {"llen", "read list fast"},
      {"lrange", "read list slow"},
      {"ltrim", "write list slow"},
      {"lindex", "read list slow"},
      {"multi", "fast transaction"},
      {"exec", "slow transaction"},
      {"discard", "fast transaction"},
      {"watch", "fast transaction"},
      {"unwatch", "fast transaction"},
      {"flushall", "keyspace write slow dangerous admin"},
      {"save", "admin slow dangerous"},
      {"bgsave", "admin slow dangerous"},
      {"lastsave", "admin fast dangerous"},
      {"shutdown", "admin slow dangerous"},
      {"flushdb", "keyspace write slow dangerous admin"},
      {"eval", "slow scripting"},
      {"evalsha", "slow scripting"},
      {"eval_ro", "slow scripting"},
      {"evalsha_ro", "slow scripting"},
      {"script", "slow"},
      {"script|debug", "slow scripting"},
      {"script|exists", "slow scripting"},
      {"script|flush", "slow scripting admin dangerous"},
      {"script|help", "slow scripting"},
      {"script|kill", "slow scripting"},
      {"script|load", "slow scripting"},
      {"ping", "fast connection"},
      {"echo", "fast connection"},
      {"hello", "fast connection"},
      {"auth", "fast connection"},
      {"quit", "fast connection"},
      {"select", "fast connection"},
      {"client", "slow"},
      {"client|caching", "slow connection"},
      {"client|getname", "slow connection"},
      {"client|getredir", "slow connection"},
      {"client|help", "slow connection"},
      {"client|id", "slow connection"},
      {"client|info", "slow connection"},
      {"client|kill", "admin slow dangerous connection"},
      {"client|list", "admin slow dangerous connection"},
      {"client|no-evict", "admin slow dangerous connection"},
      {"client|no-touch", "slow connection"},
      {"client|pause", "admin slow dangerous connection"},
      {"client|reply", "slow connection"},
      {"client|setinfo", "slow connection"},
      {"client|setname", "slow connection"},
      {"client|tracking", "slow connection"},
      {"client|trackinginfo", "slow connection"},
      {"client|unblock", "admin slow dangerous connection"},
      {"client|unpause", "admin slow dangerous connection"},
      {"info", "slow dangerous"},
      {"command", "slow connection"},
      {"command|count", "slow connection"},
      {"command|docs", "slow connection"},
      {"command|getkeys", "slow connection"},
      {"command|getkeysandflags", "slow connection"},
      {"command|help", "slow connection"},
      {"command|info", "slow connection"},
      {"command|list", "slow connection"},
      {"config", "slow"},
      {"config|get", "admin slow dangerous"},
      {"config|help", "slow"},
      {"config|resetstat", "admin slow dangerous"},
      {"config|rewrite", "admin slow dangerous"},
      {"config|set", "admin slow dangerous"},
      {"dbsize", "keyspace read fast"},
      {"time", "fast"},
      {"cluster", "slow"},
      {"cluster|addslots", "admin slow dangerous"},
      {"cluster|addslotsrange", "admin slow dangerous"},
      {"cluster|bumpepoch", "admin slow dangerous"},
      {"cluster|count-failure-reports", "admin slow dangerous"},
      {"cluster|countkeysinslot", "slow"},
      {"cluster|delslots", "admin slow dangerous"},
      {"cluster|delslotsrange", "admin slow dangerous"},
      {"cluster|failover", "admin slow dangerous"},
      {"cluster|flushslots", "admin slow dangerous"},
      {"cluster|forget", "admin slow dangerous"},
      {"cluster|getkeysinslot", "slow"},
      {"cluster|help", "slow"},
      {"cluster|info", "slow"},
      {"cluster|keyslot", "slow"},
      {"cluster|links", "slow"},
      {"cluster|meet", "admin slow dangerous"},
      {"cluster|myid", "slow"},
      {"cluster|myshardid", "slow"},
      {"cluster|nodes", "slow"},
      {"cluster|replicas", "admin slow dangerous"},
      {"cluster|replicate", "admin slow dangerous"},
      {"cluster|reset", "admin slow dangerous"},
      {"cluster|saveconfig", "admin slow dangerous"},
      {"cluster|set-config-epoch", "admin slow dangerous"},
      {"cluster|setslot", "admin slow dangerous"},
      {"cluster|shards", "slow"},
      {"cluster|slaves", "admin slow dangerous"},
      {"cluster|slots", "slow"},
      {"asking", "fast connection"},
      {"readonly", "fast connection"},
      {"readwrite", "fast connection"},
      {"acl", "slow"},
      {"acl|cat", "slow"},
      {"acl|deluser", "admin slow dangerous"},
      {"acl|dryrun", "admin slow dangerous"},
      {"acl|genpass", "slow"},
      {"acl|getuser", "admin slow dangerous"},
      {"acl|help", "slow"},
      {"acl|list", "admin slow dangerous"},
      {"acl|load", "admin slow dangerous"},
      {"acl|log", "admin slow dangerous"},
      {"acl|save", "admin slow dangerous"},
      {"acl|setuser", "admin slow dangerous"},
      {"acl|users", "admin slow dangerous"},
      {"acl|whoami", "slow"},
  };
  return t;
}

// What each keyed command does with its keys, as Redis 7.0's key specs say (R: reads,
// W: writes, "": neither — EXISTS, TYPE, the lengths, WATCH).
const std::map<std::string, std::string, std::less<>>& key_access_table() {
  static const std::map<std::string, std::string, std::less<>> t = {
      {"cl.throttle", "RW"},
      {"fg.take", "RW"},
      {"fg.peek", "R"},
      {"fg.reset", "W"},
      {"fg.acquire", "RW"},
      {"fg.renew", "RW"},
      {"fg.release", "RW"},
      {"fg.count", "R"},
      {"get", "R"},
      {"set", "W"},  // (and R with GET)
      {"setnx", "W"},
      {"setex", "W"},
      {"psetex", "W"},
      {"getdel", "RW"},
      {"getex", "RW"},
      {"incr", "RW"},
      {"incrby", "RW"},
      {"incrbyfloat", "RW"},
      {"decr", "RW"},
      {"decrby", "RW"},
      {"mget", "R"},
      {"mset", "W"},
      {"del", "W"},
      {"unlink", "W"},
      {"exists", ""},
      {"type", ""},
      {"expire", "W"},
      {"pexpire", "W"},
      {"expireat", "W"},
      {"pexpireat", "W"},
      {"ttl", "R"},
      {"pttl", "R"},
      {"expiretime", "R"},
      {"pexpiretime", "R"},
      {"persist", "W"},
      {"hget", "R"},
      {"hset", "W"},
      {"hsetnx", "W"},
      {"hmset", "W"},
      {"hmget", "R"},
      {"hincrby", "RW"},
      {"hincrbyfloat", "RW"},
      {"hdel", "W"},
      {"hgetall", "R"},
      {"hlen", ""},
      {"hexists", ""},
      {"zadd", "W"},
      {"zrem", "W"},
      {"zcard", ""},
      {"zcount", "R"},
      {"zscore", "R"},
      {"zrange", "R"},
      {"zrangebyscore", "R"},
      {"zremrangebyscore", "W"},
      {"zremrangebyrank", "W"},
      {"zpopmin", "RW"},
      {"lpush", "W"},
      {"rpush", "W"},
      {"lpop", "RW"},
      {"rpop", "RW"},
      {"llen", ""},
      {"lrange", "R"},
      {"ltrim", "W"},
      {"lindex", "R"},
      {"watch", ""},
      {"eval", "RW"},
      {"evalsha", "RW"},
      {"eval_ro", "R"},
      {"evalsha_ro", "R"},
  };
  return t;
}

AclCatalog build_catalog() {
  std::map<std::string, uint32_t, std::less<>> cats;
  for (const auto& [name, c] : category_table()) cats.emplace(name, acl_category_bits(c));
  std::vector<AclCommand> out;
  // The table's commands first, in its order: an entry's index is its command_id.
  for (const CommandSpec& spec : all_commands()) {
    const auto it = cats.find(spec.name);
    if (it == cats.end()) throw std::logic_error(std::string("no ACL categories for ") + spec.name);
    AclCommand c;
    c.name = spec.name;
    c.categories = it->second;
    if (spec.flags & kKeyed) {
      c.first_key = 1;
      c.last_key = spec.last_key;
      c.key_step = spec.key_step;
    }
    const std::string_view n = spec.name;
    if (n == "eval" || n == "evalsha" || n == "eval_ro" || n == "evalsha_ro") c.numkeys_at = 2;
    if (c.first_key > 0 || c.numkeys_at > 0) {
      const auto access = key_access_table().find(n);
      if (access == key_access_table().end())
        throw std::logic_error(std::string("no ACL key access for ") + spec.name);
      c.reads = access->second.find('R') != std::string::npos;
      c.writes = access->second.find('W') != std::string::npos;
      c.reads_with_get = n == "set";
    }
    out.push_back(std::move(c));
  }
  const size_t commands = out.size();
  for (const auto& [name, bits] : cats) {
    const std::string_view full = name;
    const size_t bar = full.find('|');
    if (bar == std::string_view::npos) continue;
    int parent = -1;
    for (size_t i = 0; i < commands; ++i)
      if (out[i].name == full.substr(0, bar)) parent = static_cast<int>(i);
    if (parent < 0) throw std::logic_error("ACL subcommand of an unknown command: " + name);
    AclCommand c;
    c.name = name;
    c.parent = parent;
    c.categories = bits;
    out.push_back(std::move(c));
  }
  return AclCatalog(std::move(out));
}

void reply_denied(RespWriter& w, const AclBook& book, AclDenied d, int entry,
                  const std::vector<std::string_view>& a, size_t pos) {
  if (d == AclDenied::kCommand) {
    w.bulk("This user has no permissions to run the '" + book.catalog().at(entry).name +
           "' command");
  } else {
    w.bulk("This user has no permissions to access the '" + std::string(a[pos]) + "' key");
  }
}

}  // namespace

const AclCatalog& acl_catalog() {
  static const AclCatalog catalog = build_catalog();
  return catalog;
}

bool CommandContext::acl_refuses(const CommandSpec& spec, const std::vector<std::string_view>& a,
                                 const char* context) {
  const AclUser* u = acl_.user();
  if (!u || u->unrestricted() || (spec.flags & kNoAuth)) return false;
  const AclCatalog& catalog = svc_.acl->catalog();
  const int entry = catalog.entry_for(command_id(&spec), a);
  size_t pos = 0;
  const AclDenied d = u->check(entry, a, &pos);
  if (d == AclDenied::kNone) return false;
  svc_.acl->refused(d, context, d == AclDenied::kKey ? a[pos] : catalog.at(entry).name, u->name(),
                    svc_.clients->describe(*client_, svc_.clock->now_ns() / 1'000'000));
  local().error(acl_denied_error(catalog, d, entry));
  return true;
}

// ACL WHOAMI | USERS | LIST | GETUSER | SETUSER | DELUSER | CAT | DRYRUN | LOAD | GENPASS | HELP
void cmd_acl(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  AclBook& book = *s.svc().acl;
  const std::string_view sub = a[1];
  const size_t n = a.size();
  if (iequals(sub, "whoami") && n == 2) {
    w.bulk(s.acl().name());
  } else if ((iequals(sub, "users") || iequals(sub, "list")) && n == 2) {
    const auto users = book.users();
    w.array(users.size());
    for (const auto& u : users) {
      if (iequals(sub, "users")) {
        w.bulk(u->name());
      } else {
        w.bulk("user " + u->name() + " " + u->describe());
      }
    }
  } else if (iequals(sub, "getuser") && n == 3) {
    const auto u = book.find(a[2]);
    if (!u) return w.null();
    w.map(6);
    w.bulk("flags");
    const auto flags = u->flags();
    w.set(flags.size());
    for (const auto& f : flags) w.bulk(f);
    w.bulk("passwords");
    w.array(u->password_hashes().size());
    for (const auto& p : u->password_hashes()) w.bulk(p);
    w.bulk("commands");
    w.bulk(u->describe_commands());
    w.bulk("keys");
    w.bulk(u->describe_keys());
    w.bulk("channels");
    w.bulk(u->describe_channels() == "resetchannels" ? "" : u->describe_channels());
    w.bulk("selectors");
    w.array(0);
  } else if (iequals(sub, "setuser") && n >= 3) {
    const std::vector<std::string_view> rules(a.begin() + 3, a.end());
    const std::string why = book.set_user(a[2], rules);
    if (!why.empty()) return w.error(why);
    w.ok();
  } else if (iequals(sub, "deluser") && n >= 3) {
    int64_t deleted = 0;
    const std::string why = book.del_users({a.begin() + 2, a.end()}, deleted);
    if (!why.empty()) return w.error(why);
    w.integer(deleted);
  } else if (iequals(sub, "cat") && (n == 2 || n == 3)) {
    if (n == 2) {
      w.array(acl_categories().size());
      for (const auto& [name, bit] : acl_categories()) w.bulk(name);
      return;
    }
    uint32_t bit = 0;
    for (const auto& [name, b] : acl_categories())
      if (iequals(a[2], name)) bit = b;
    if (!bit) return w.error("ERR Unknown category '" + std::string(a[2].substr(0, 128)) + "'");
    const AclCatalog& cat = book.catalog();
    std::vector<const std::string*> names;
    for (size_t i = 0; i < cat.size(); ++i) {
      const AclCommand& c = cat.at(static_cast<int>(i));
      if (c.categories & bit) names.push_back(&c.name);
    }
    w.array(names.size());
    for (const std::string* nm : names) w.bulk(*nm);
  } else if (iequals(sub, "dryrun") && n >= 4) {
    const auto u = book.find(a[2]);
    if (!u) return w.error("ERR User '" + std::string(a[2]) + "' not found");
    const std::vector<std::string_view> words(a.begin() + 3, a.end());
    const CommandSpec* spec = find_command(words[0]);
    if (!spec) return w.error("ERR Command '" + std::string(words[0]) + "' not found");
    const auto argc = static_cast<int>(words.size());
    if ((spec->arity > 0 && spec->arity != argc) || argc < -spec->arity) {
      const int entry = book.catalog().entry_for(command_id(spec), words);
      return w.error(err::wrong_arity(book.catalog().at(entry).name));
    }
    const int entry = book.catalog().entry_for(command_id(spec), words);
    size_t pos = 0;
    const AclDenied d = u->check(entry, words, &pos);
    if (d == AclDenied::kNone) return w.ok();
    reply_denied(w, book, d, entry, words, pos);
  } else if (iequals(sub, "load") && n == 2) {
    if (!s.svc().acl_load) {
      return w.error(
          "ERR This Redis instance is not configured to use an ACL file. You may want to "
          "specify users via the ACL SETUSER command and then issue a CONFIG REWRITE "
          "(assuming you have a Redis configuration file set) in order to store users in the "
          "Redis configuration.");
    }
    const std::string why = s.svc().acl_load();
    if (!why.empty()) return w.error("ERR " + why);
    w.ok();
  } else if (iequals(sub, "log") && (n == 2 || n == 3)) {
    int64_t count = 10;
    if (n == 3) {
      if (iequals(a[2], "reset")) {
        book.reset_log();
        return w.ok();
      }
      if (!parse_int(a[2], count)) return w.error(err::kNotInteger);
      if (count < 0) count = 0;
    }
    const auto entries = book.log(static_cast<size_t>(count));
    const int64_t now_ms = book.clock().now_ns() / 1'000'000;
    w.array(entries.size());
    for (const AclLogEntry& e : entries) {
      w.map(7);
      w.bulk("count");
      w.integer(e.count);
      w.bulk("reason");
      w.bulk(e.reason == AclDenied::kKey    ? "key"
             : e.reason == AclDenied::kAuth ? "auth"
                                            : "command");
      w.bulk("context");
      w.bulk(e.context);
      w.bulk("object");
      w.bulk(e.object);
      w.bulk("username");
      w.bulk(e.username);
      w.bulk("age-seconds");
      w.dbl(static_cast<double>(now_ms - e.time_ms) / 1000);
      w.bulk("client-info");
      w.bulk(e.client_info);
    }
  } else if (iequals(sub, "genpass") && (n == 2 || n == 3)) {
    int64_t bits = 256;
    if (n == 3 && !parse_int(a[2], bits)) return w.error(err::kNotInteger);
    if (bits <= 0 || bits > 4096) {
      return w.error(
          "ERR ACL GENPASS argument must be the number of bits for the output password, a "
          "positive number up to 4096");
    }
    const auto chars = static_cast<size_t>((bits + 3) / 4);
    std::string raw((chars + 1) / 2, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(raw.size())) !=
        1) {
      return w.error("ERR no random bytes available");
    }
    w.bulk(to_hex(raw).substr(0, chars));
  } else if (iequals(sub, "help") && n == 2) {
    static const char* lines[] = {
        "ACL <subcommand> [<arg> ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users (this node only).",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the "
        "command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "LOAD",
        "    Reload users from the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes (this node only).",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help."};
    w.array(std::size(lines));
    for (const char* l : lines) w.simple(l);
  } else if (s.svc().acl->catalog().find("acl|" + std::string(sub)) >= 0) {
    w.error(err::wrong_arity("acl|" + to_lower(sub)));
  } else {
    w.error(err::unknown_subcommand(sub, "ACL HELP"));
  }
}

}  // namespace fg
