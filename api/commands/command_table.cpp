// The table of every command, looked up case-insensitively on each request.
#include "command_table.hpp"

#include <cctype>
#include <string>
#include <unordered_map>

#include "handlers.hpp"

namespace fg {

const std::vector<CommandSpec>& all_commands() {
  static const std::vector<CommandSpec> table = {
      {"cl.throttle", -5, kKeyed | kWrite | kFast, "floodgate", "0.1.0",
       "GCRA rate limit with redis-cell's semantics and reply",
       "key max_burst count period [quantity]", cmd_cl_throttle},
      {"fg.take", -2, kKeyed | kWrite | kFast, "floodgate", "0.1.0",
       "Consume from a key's limiter (named policy or inline kind and parameters)",
       "key [policy|kind params...] [COST n]", cmd_fg_take},
      {"fg.peek", -2, kKeyed | kFast, "floodgate", "0.1.0",
       "Evaluate a key's limiter without consuming", "key [policy|kind params...] [COST n]",
       cmd_fg_peek},
      {"fg.reset", 2, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Forget a key's limiter state",
       "key", cmd_fg_reset},
      {"fg.acquire", -2, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Take a concurrency lease",
       "key [limit ttl_ms|policy] [HOLDER id | BOUND]", cmd_fg_acquire},
      {"fg.renew", 4, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Extend one lease",
       "key lease ttl_ms", cmd_fg_renew},
      {"fg.release", 3, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Give a lease back",
       "key lease", cmd_fg_release},
      {"fg.count", 2, kKeyed | kFast, "floodgate", "0.1.0", "Live leases of a key", "key",
       cmd_fg_count},
      {"fg.heartbeat", 3, kWrite, "floodgate", "0.1.0", "Renew every lease of a holder",
       "holder ttl_ms", cmd_fg_heartbeat},
      {"fg.releaseall", 2, kWrite, "floodgate", "0.1.0", "Release every lease of a holder",
       "holder", cmd_fg_releaseall},
      {"fg.policy", -2, 0, "floodgate", "0.1.0",
       "Change or show policies, key patterns and per-key overrides, cluster-wide",
       "SET name kind params... | GET name | DEL name | LIST | MAP pattern policy | "
       "UNMAP pattern | PATTERNS | OVERRIDE key policy|kind params... | UNOVERRIDE key | "
       "OVERRIDES | WHICH key [policy]",
       cmd_fg_policy},
      {"get", 2, kKeyed | kFast, "string", "1.0.0", "Returns the string value of a key", "key",
       cmd_data<DataCmd::kGet>},
      {"set", -3, kKeyed | kWrite, "string", "1.0.0",
       "Sets the string value of a key, ignoring its type; the key is created if it doesn't exist",
       "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
       "unix-time-milliseconds | KEEPTTL]",
       cmd_data<DataCmd::kSet>},
      {"setnx", 3, kKeyed | kWrite | kFast, "string", "1.0.0",
       "Sets the string value of a key only when the key doesn't exist", "key value",
       cmd_data<DataCmd::kSetNx>},
      {"setex", 4, kKeyed | kWrite, "string", "2.0.0",
       "Sets the string value and expiration time of a key", "key seconds value",
       cmd_data<DataCmd::kSetEx>},
      {"psetex", 4, kKeyed | kWrite, "string", "2.6.0",
       "Sets both string value and expiration time in milliseconds of a key",
       "key milliseconds value", cmd_data<DataCmd::kPSetEx>},
      {"getdel", 2, kKeyed | kWrite | kFast, "string", "6.2.0",
       "Returns the string value of a key after deleting the key", "key",
       cmd_data<DataCmd::kGetDel>},
      {"getex", -2, kKeyed | kWrite | kFast, "string", "6.2.0",
       "Returns the string value of a key after setting its expiration time",
       "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | "
       "PERSIST]",
       cmd_data<DataCmd::kGetEx>},
      {"incr", 2, kKeyed | kWrite | kFast, "string", "1.0.0",
       "Increments the integer value of a key by one", "key", cmd_data<DataCmd::kIncr>},
      {"incrby", 3, kKeyed | kWrite | kFast, "string", "1.0.0",
       "Increments the integer value of a key by a number", "key increment",
       cmd_data<DataCmd::kIncrBy>},
      {"incrbyfloat", 3, kKeyed | kWrite | kFast, "string", "2.6.0",
       "Increment the floating point value of a key by a number", "key increment",
       cmd_data<DataCmd::kIncrByFloat>},
      {"decr", 2, kKeyed | kWrite | kFast, "string", "1.0.0",
       "Decrements the integer value of a key by one", "key", cmd_data<DataCmd::kDecr>},
      {"decrby", 3, kKeyed | kWrite | kFast, "string", "1.0.0",
       "Decrements a number from the integer value of a key", "key decrement",
       cmd_data<DataCmd::kDecrBy>},
      {"mget", -2, kKeyed | kFast, "string", "1.0.0",
       "Atomically returns the string values of one or more keys", "key [key ...]",
       cmd_data<DataCmd::kMGet>, -1, 1},
      {"mset", -3, kKeyed | kWrite, "string", "1.0.1",
       "Atomically creates or modifies the string values of one or more keys",
       "key value [key value ...]", cmd_data<DataCmd::kMSet>, -1, 2},
      {"del", -2, kKeyed | kWrite, "generic", "1.0.0", "Deletes one or more keys", "key [key ...]",
       cmd_data<DataCmd::kDel>, -1, 1},
      {"unlink", -2, kKeyed | kWrite | kFast, "generic", "4.0.0",
       "Asynchronously deletes one or more keys", "key [key ...]", cmd_data<DataCmd::kUnlink>, -1,
       1},
      {"exists", -2, kKeyed | kFast, "generic", "3.0.3",
       "Determines whether one or more keys exist", "key [key ...]", cmd_data<DataCmd::kExists>, -1,
       1},
      {"type", 2, kKeyed | kFast, "generic", "1.0.0",
       "Determines the type of value stored at a key", "key", cmd_data<DataCmd::kType>},
      {"expire", -3, kKeyed | kWrite | kFast, "generic", "1.0.0",
       "Sets the expiration time of a key in seconds", "key seconds [NX | XX | GT | LT]",
       cmd_data<DataCmd::kExpire>},
      {"pexpire", -3, kKeyed | kWrite | kFast, "generic", "2.6.0",
       "Sets the expiration time of a key in milliseconds", "key milliseconds [NX | XX | GT | LT]",
       cmd_data<DataCmd::kPExpire>},
      {"expireat", -3, kKeyed | kWrite | kFast, "generic", "1.2.0",
       "Sets the expiration time of a key to a Unix timestamp",
       "key unix-time-seconds [NX | XX | GT | LT]", cmd_data<DataCmd::kExpireAt>},
      {"pexpireat", -3, kKeyed | kWrite | kFast, "generic", "2.6.0",
       "Sets the expiration time of a key to a Unix milliseconds timestamp",
       "key unix-time-milliseconds [NX | XX | GT | LT]", cmd_data<DataCmd::kPExpireAt>},
      {"ttl", 2, kKeyed | kFast, "generic", "1.0.0",
       "Returns the expiration time in seconds of a key", "key", cmd_data<DataCmd::kTtl>},
      {"pttl", 2, kKeyed | kFast, "generic", "2.6.0",
       "Returns the expiration time in milliseconds of a key", "key", cmd_data<DataCmd::kPTtl>},
      {"expiretime", 2, kKeyed | kFast, "generic", "7.0.0",
       "Returns the expiration time of a key as a Unix timestamp", "key",
       cmd_data<DataCmd::kExpireTime>},
      {"pexpiretime", 2, kKeyed | kFast, "generic", "7.0.0",
       "Returns the expiration time of a key as a Unix milliseconds timestamp", "key",
       cmd_data<DataCmd::kPExpireTime>},
      {"persist", 2, kKeyed | kWrite | kFast, "generic", "2.2.0",
       "Removes the expiration time of a key", "key", cmd_data<DataCmd::kPersist>},
      {"keys", 2, 0, "generic", "1.0.0",
       "Returns all key names that match a pattern (this node's keys; a pattern with a "
       "{hash tag} before any wildcard is answered by the tag's owner)",
       "pattern", cmd_data<DataCmd::kKeys>},
      {"scan", -2, 0, "generic", "2.8.0",
       "Iterates over the key names (every match in one reply, cursor 0)",
       "cursor [MATCH pattern] [COUNT count] [TYPE type]", cmd_data<DataCmd::kScan>},
      {"hget", 3, kKeyed | kFast, "hash", "2.0.0", "Returns the value of a field in a hash",
       "key field", cmd_data<DataCmd::kHGet>},
      {"hset", -4, kKeyed | kWrite | kFast, "hash", "2.0.0",
       "Creates or modifies the value of a field in a hash", "key field value [field value ...]",
       cmd_data<DataCmd::kHSet>},
      {"hsetnx", 4, kKeyed | kWrite | kFast, "hash", "2.0.0",
       "Sets the value of a field in a hash only when the field doesn't exist", "key field value",
       cmd_data<DataCmd::kHSetNx>},
      {"hmset", -4, kKeyed | kWrite | kFast, "hash", "2.0.0", "Sets the values of multiple fields",
       "key field value [field value ...]", cmd_data<DataCmd::kHMSet>},
      {"hmget", -3, kKeyed | kFast, "hash", "2.0.0", "Returns the values of all fields in a hash",
       "key field [field ...]", cmd_data<DataCmd::kHMGet>},
      {"hincrby", 4, kKeyed | kWrite | kFast, "hash", "2.0.0",
       "Increments the integer value of a field in a hash by a number", "key field increment",
       cmd_data<DataCmd::kHIncrBy>},
      {"hincrbyfloat", 4, kKeyed | kWrite | kFast, "hash", "2.6.0",
       "Increments the floating point value of a field by a number", "key field increment",
       cmd_data<DataCmd::kHIncrByFloat>},
      {"hdel", -3, kKeyed | kWrite | kFast, "hash", "2.0.0",
       "Deletes one or more fields and their values from a hash", "key field [field ...]",
       cmd_data<DataCmd::kHDel>},
      {"hgetall", 2, kKeyed, "hash", "2.0.0", "Returns all fields and values in a hash", "key",
       cmd_data<DataCmd::kHGetAll>},
      {"hlen", 2, kKeyed | kFast, "hash", "2.0.0", "Returns the number of fields in a hash", "key",
       cmd_data<DataCmd::kHLen>},
      {"hexists", 3, kKeyed | kFast, "hash", "2.0.0", "Determines whether a field exists in a hash",
       "key field", cmd_data<DataCmd::kHExists>},
      {"zadd", -4, kKeyed | kWrite | kFast, "sorted-set", "1.2.0",
       "Adds one or more members to a sorted set, or updates their scores",
       "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]",
       cmd_data<DataCmd::kZAdd>},
      {"zrem", -3, kKeyed | kWrite | kFast, "sorted-set", "1.2.0",
       "Removes one or more members from a sorted set", "key member [member ...]",
       cmd_data<DataCmd::kZRem>},
      {"zcard", 2, kKeyed | kFast, "sorted-set", "1.2.0",
       "Returns the number of members in a sorted set", "key", cmd_data<DataCmd::kZCard>},
      {"zcount", 4, kKeyed | kFast, "sorted-set", "2.0.0",
       "Returns the count of members in a sorted set that have scores within a range",
       "key min max", cmd_data<DataCmd::kZCount>},
      {"zscore", 3, kKeyed | kFast, "sorted-set", "1.2.0",
       "Returns the score of a member in a sorted set", "key member", cmd_data<DataCmd::kZScore>},
      {"zrange", -4, kKeyed, "sorted-set", "1.2.0",
       "Returns members in a sorted set within a range of indexes or scores",
       "key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES]",
       cmd_data<DataCmd::kZRange>},
      {"zrangebyscore", -4, kKeyed, "sorted-set", "1.0.5",
       "Returns members in a sorted set within a range of scores",
       "key min max [WITHSCORES] [LIMIT offset count]", cmd_data<DataCmd::kZRangeByScore>},
      {"zremrangebyscore", 4, kKeyed | kWrite, "sorted-set", "1.2.0",
       "Removes members in a sorted set within a range of scores", "key min max",
       cmd_data<DataCmd::kZRemRangeByScore>},
      {"zremrangebyrank", 4, kKeyed | kWrite, "sorted-set", "2.0.0",
       "Removes members in a sorted set within a range of indexes", "key start stop",
       cmd_data<DataCmd::kZRemRangeByRank>},
      {"zpopmin", -2, kKeyed | kWrite | kFast, "sorted-set", "5.0.0",
       "Returns the lowest-scoring members from a sorted set after removing them", "key [count]",
       cmd_data<DataCmd::kZPopMin>},
      {"multi", 1, kFast, "transactions", "1.2.0", "Starts a transaction", "", cmd_multi},
      {"exec", 1, 0, "transactions", "1.2.0", "Executes all commands in a transaction", "",
       cmd_exec},
      {"discard", 1, kFast, "transactions", "2.0.0", "Discards a transaction", "", cmd_discard},
      {"ping", -1, kFast, "connection", "1.0.0", "Returns the server's liveliness response",
       "[message]", cmd_ping},
      {"echo", 2, kFast, "connection", "1.0.0", "Returns the given string", "message", cmd_echo},
      {"hello", -1, kNoAuth | kBarrier | kFast, "connection", "6.0.0", "Handshakes with the server",
       "[protover [AUTH username password] [SETNAME clientname]]", cmd_hello},
      {"auth", -2, kNoAuth | kBarrier | kFast, "connection", "1.0.0",
       "Authenticates the connection", "[username] password", cmd_auth},
      {"quit", -1, kNoAuth | kBarrier | kFast, "connection", "1.0.0", "Closes the connection", "",
       cmd_quit},
      {"select", 2, kFast, "connection", "1.0.0", "Selects the database (only 0 exists)", "index",
       cmd_select},
      {"client", -2, 0, "connection", "2.4.0", "Client connection commands",
       "SETNAME|GETNAME|ID|SETINFO|LIST|INFO|HELP ...", cmd_client},
      {"info", -1, kBarrier, "server", "1.0.0", "Returns information and statistics about the node",
       "[section ...]", cmd_info},
      {"command", -1, 0, "server", "2.8.13", "Returns detailed information about all commands",
       "[COUNT | LIST | INFO name... | DOCS [name...]]", cmd_command},
      {"config", -2, 0, "server", "2.0.0", "Reads configuration parameters",
       "GET parameter [parameter ...]", cmd_config},
      {"dbsize", 1, kBarrier | kFast, "server", "1.0.0", "Returns the number of keys", "",
       cmd_dbsize},
      {"time", 1, kFast, "server", "2.6.0", "Returns the server time", "", cmd_time},
      {"cluster", -2, 0, "cluster", "3.0.0", "The cluster's topology and this node's place in it",
       "SLOTS | SHARDS | NODES | INFO | KEYSLOT key | MYID | HELP", cmd_cluster},
      {"asking", 1, kFast, "cluster", "3.0.0", "Accepted for cluster clients; changes nothing", "",
       cmd_asking},
      {"readonly", 1, kFast, "cluster", "3.0.0", "Accepted for cluster clients; changes nothing",
       "", cmd_asking},
      {"readwrite", 1, kFast, "cluster", "3.0.0", "Accepted for cluster clients; changes nothing",
       "", cmd_asking},
  };
  return table;
}

const CommandSpec* find_command(std::string_view name) {
  static const auto index = [] {
    std::unordered_map<std::string_view, const CommandSpec*> m;
    for (const auto& c : all_commands()) m.emplace(c.name, &c);
    return m;
  }();
  char buf[32];
  if (name.size() >= sizeof buf) return nullptr;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
  }
  auto it = index.find(std::string_view(buf, name.size()));
  return it == index.end() ? nullptr : it->second;
}

std::string command_id_name(uint16_t id) {
  static constexpr const char* kNative[] = {
      "unknown",   "take",        "peek",    "reset",  "acquire", "renew",    "release", "count",
      "heartbeat", "release_all", "reserve", "commit", "cancel",  "topology", "ping"};
  const auto& all = all_commands();
  if (id < all.size()) return all[id].name;
  if (id >= kNativeCommandBase &&
      static_cast<size_t>(id - kNativeCommandBase) < std::size(kNative)) {
    return std::string("native.") + kNative[id - kNativeCommandBase];
  }
  return "unknown";
}

}  // namespace fg
