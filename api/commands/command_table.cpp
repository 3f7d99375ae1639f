// The registry's rows, looked up case-insensitively on each request, and what is derived
// from them for the script engine and metrics.
#include "command_table.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "handlers.hpp"
#include "native.pb.h"
#include "script_engine.hpp"
#include "words.hpp"

namespace fg {

namespace pb = floodgate::native;

namespace {

// The words of `c` as the registry and as the data op's row (actors/data_cmd.cpp) take them
// for keys must agree: tried on each length its arity allows, up to six words past its
// least, with a count of 2 where the registry expects a count of keys.
bool same_keys(const CommandSpec& c) {
  const size_t least = static_cast<size_t>(c.arity < 0 ? -c.arity : c.arity);
  const size_t most = c.arity < 0 ? least + 6 : least;
  static const std::string kWords[] = {"k1", "k2", "k3",  "k4",  "k5",  "k6",  "k7",
                                       "k8", "k9", "k10", "k11", "k12", "k13", "k14"};
  for (size_t n = std::max<size_t>(least, 2); n <= most && n <= std::size(kWords); ++n) {
    std::vector<std::string_view> words(kWords, kWords + n);
    words[0] = c.name;
    if (c.keys.numkeys_at > 0 && static_cast<size_t>(c.keys.numkeys_at) < n)
      words[static_cast<size_t>(c.keys.numkeys_at)] = "2";
    std::vector<size_t> data;
    each_data_key(c.run.data, words, [&](size_t j) { data.push_back(j); });
    std::vector<size_t> registry = c.key_positions(words);
    std::sort(data.begin(), data.end());
    std::sort(registry.begin(), registry.end());
    if (data != registry) return false;
  }
  return true;
}

// Checks the facts the shard keeps about its data ops (actors/data_cmd.cpp: the name its
// errors quote, whether it writes, where its keys are) against the rows that run them, and
// that every data op a client can send has exactly one row: a drift fails the first lookup,
// so every test.
void check_rows(const std::vector<CommandSpec>& rows) {
  // (a row's place is its command id, which shares a byte with the native ops' ids)
  if (rows.size() >= kNativeCommandBase)
    throw std::logic_error("more command rows than command ids below kNativeCommandBase");
  for (uint8_t d = 0; d <= kLastDataCmd; ++d) {  // (the data ops' table: each row in its place)
    if (static_cast<uint8_t>(data_cmd_info(static_cast<DataCmd>(d)).op) != d)
      throw std::logic_error("a data op's row is out of DataCmd's order (actors/data_cmd.cpp)");
  }
  std::vector<int> seen(kLastDataCmd + 1, 0);
  for (const CommandSpec& c : rows) {
    if (c.run.handler == nullptr && c.run.data == DataCmd::kNone)
      throw std::logic_error(std::string("a command needs a handler or a data op: ") + c.name);
    if (c.run.data == DataCmd::kNone) continue;
    const DataCmdInfo& info = data_cmd_info(c.run.data);
    // (EVAL, EVALSHA and their read-only forms: one op, the words say which)
    const bool is_eval = c.run.data == DataCmd::kEval;
    if (!is_eval && std::string_view(info.name) != c.name)
      throw std::logic_error(std::string("data op named otherwise than its row: ") + c.name);
    if (!is_eval && info.writes != ((c.flags & kWrite) != 0))
      throw std::logic_error(std::string("data op writes otherwise than its row: ") + c.name);
    if (!same_keys(c))
      throw std::logic_error(std::string("data op's keys lie otherwise than its row's: ") + c.name);
    ++seen[static_cast<size_t>(c.run.data)];
  }
  for (uint8_t d = 1; d <= kLastDataCmd; ++d) {
    const auto op = static_cast<DataCmd>(d);
    // (the transaction's own ops come from MULTI, WATCH, EXEC, not from a row)
    if (op == DataCmd::kWatch || op == DataCmd::kUnwatch || op == DataCmd::kWatchCheck) continue;
    if (seen[d] == 0 || (seen[d] > 1 && op != DataCmd::kEval))
      throw std::logic_error(std::string("data op without one row: ") + data_cmd_info(op).name);
  }
}

std::vector<CommandSpec> make_rows() {
  // name, arity, flags, ACL categories (besides those the flags imply), keys, handler or
  // data op, then COMMAND DOCS's group, since, summary and syntax; containers last list
  // their subcommands as Redis lists them, those Floodgate does not implement included, so
  // an ACL file written for Redis loads. Categories are Redis 7.0's for the commands both
  // have (compared with redis-server in tests), plus @admin on the flushes and SCRIPT FLUSH;
  // Floodgate's own commands take @limiter (an application's), or @admin and @dangerous
  // (an operator's).
  const uint32_t kW = kWrite, kF = kFast, kWF = kWrite | kFast;
  const uint32_t kD = kDecides;
  KeySpec kSetKey = key1(kWrites);
  // A source and a destination (RENAME, SMOVE, LMOVE): one is read, both are written.
  const KeySpec kTwoKeys{1, 2, 1, 0, kReadsWrites, false};
  // Every argument but the last (BLPOP key ... timeout).
  const KeySpec kBlockKeys{1, -2, 1, 0, kReadsWrites, false};
  // A destination, then a count of keys (ZUNIONSTORE).
  const KeySpec kStoreCounted{1, 1, 1, 2, kReadsWrites, false};
  kSetKey.reads_with_get = true;
  // Containers' subcommands
  const std::vector<SubcommandSpec> kPolicySubs = {{"set", "admin slow dangerous"},
                                                   {"del", "admin slow dangerous"},
                                                   {"map", "admin slow dangerous"},
                                                   {"unmap", "admin slow dangerous"},
                                                   {"override", "admin slow dangerous"},
                                                   {"unoverride", "admin slow dangerous"},
                                                   {"get", "read slow"},
                                                   {"list", "read slow"},
                                                   {"patterns", "read slow"},
                                                   {"overrides", "read slow"},
                                                   {"which", "read slow"}};
  const std::vector<SubcommandSpec> kRlsSubs = {{"config", "read slow"},
                                                {"reload", "admin slow dangerous"}};
  const std::vector<SubcommandSpec> kScriptSubs = {{"debug", "slow scripting"},
                                                   {"exists", "slow scripting"},
                                                   {"flush", "slow scripting admin dangerous"},
                                                   {"help", "slow scripting"},
                                                   {"kill", "slow scripting"},
                                                   {"load", "slow scripting"}};
  const std::vector<SubcommandSpec> kFunctionSubs = {
      {"delete", "write slow scripting"}, {"dump", "slow scripting"},
      {"flush", "write slow scripting"},  {"help", "slow scripting"},
      {"kill", "slow scripting"},         {"list", "slow scripting"},
      {"load", "write slow scripting"},   {"restore", "write slow scripting"},
      {"stats", "slow scripting"}};
  const std::vector<SubcommandSpec> kObjectSubs = {{"encoding", "keyspace read slow", 3},
                                                   {"freq", "keyspace read slow", 3},
                                                   {"help", "keyspace slow", 2},
                                                   {"idletime", "keyspace read slow", 3},
                                                   {"refcount", "keyspace read slow", 3}};
  const std::vector<SubcommandSpec> kXInfoSubs = {{"consumers", "read stream slow", 4},
                                                  {"groups", "read stream slow", 3},
                                                  {"help", "stream slow", 2},
                                                  {"stream", "read stream slow", -3}};
  const std::vector<SubcommandSpec> kMemorySubs = {
      {"doctor", "slow"}, {"help", "slow"},  {"malloc-stats", "slow"},
      {"purge", "slow"},  {"stats", "slow"}, {"usage", "read slow"}};
  const std::vector<SubcommandSpec> kClientSubs = {{"caching", "slow connection"},
                                                   {"getname", "slow connection"},
                                                   {"getredir", "slow connection"},
                                                   {"help", "slow connection"},
                                                   {"id", "slow connection"},
                                                   {"info", "slow connection"},
                                                   {"kill", "admin slow dangerous connection", -3},
                                                   {"list", "admin slow dangerous connection"},
                                                   {"no-evict", "admin slow dangerous connection"},
                                                   {"no-touch", "slow connection"},
                                                   {"pause", "admin slow dangerous connection"},
                                                   {"reply", "slow connection"},
                                                   {"setinfo", "slow connection"},
                                                   {"setname", "slow connection"},
                                                   {"tracking", "slow connection"},
                                                   {"trackinginfo", "slow connection"},
                                                   {"unblock", "admin slow dangerous connection"},
                                                   {"unpause", "admin slow dangerous connection"}};
  const std::vector<SubcommandSpec> kCommandSubs = {
      {"count", "slow connection"},   {"docs", "slow connection"},
      {"getkeys", "slow connection"}, {"getkeysandflags", "slow connection"},
      {"help", "slow connection"},    {"info", "slow connection"},
      {"list", "slow connection"}};
  const std::vector<SubcommandSpec> kAclSubs = {{"cat", "slow"},
                                                {"deluser", "admin slow dangerous"},
                                                {"dryrun", "admin slow dangerous"},
                                                {"genpass", "slow"},
                                                {"getuser", "admin slow dangerous"},
                                                {"help", "slow"},
                                                {"list", "admin slow dangerous"},
                                                {"load", "admin slow dangerous"},
                                                {"log", "admin slow dangerous"},
                                                {"save", "admin slow dangerous"},
                                                {"setuser", "admin slow dangerous"},
                                                {"users", "admin slow dangerous"},
                                                {"whoami", "slow"}};
  const std::vector<SubcommandSpec> kConfigSubs = {{"get", "admin slow dangerous"},
                                                   {"help", "slow"},
                                                   {"resetstat", "admin slow dangerous"},
                                                   {"rewrite", "admin slow dangerous"},
                                                   {"set", "admin slow dangerous"}};
  const std::vector<SubcommandSpec> kSlowlogSubs = {{"get", "admin slow dangerous"},
                                                    {"help", "slow"},
                                                    {"len", "admin slow dangerous"},
                                                    {"reset", "admin slow dangerous"}};
  constexpr auto kSubCh = AclCommand::Channels::kSubscribe;
  constexpr auto kPatCh = AclCommand::Channels::kPatterns;
  constexpr auto kPubCh = AclCommand::Channels::kPublish;
  const std::vector<SubcommandSpec> kPubSubSubs = {
      {"channels", "pubsub slow"},      {"help", "slow"},
      {"numpat", "pubsub slow"},        {"numsub", "pubsub slow"},
      {"shardchannels", "pubsub slow"}, {"shardnumsub", "pubsub slow"}};
  const std::vector<SubcommandSpec> kClusterSubs = {
      {"addslots", "admin slow dangerous"},
      {"addslotsrange", "admin slow dangerous"},
      {"bumpepoch", "admin slow dangerous"},
      {"count-failure-reports", "admin slow dangerous"},
      {"countkeysinslot", "slow"},
      {"delslots", "admin slow dangerous"},
      {"delslotsrange", "admin slow dangerous"},
      {"failover", "admin slow dangerous"},
      {"flushslots", "admin slow dangerous"},
      {"forget", "admin slow dangerous"},
      {"getkeysinslot", "slow"},
      {"help", "slow"},
      {"info", "slow"},
      {"keyslot", "slow"},
      {"links", "slow"},
      {"meet", "admin slow dangerous"},
      {"myid", "slow"},
      {"myshardid", "slow"},
      {"nodes", "slow"},
      {"replicas", "admin slow dangerous"},
      {"replicate", "admin slow dangerous"},
      {"reset", "admin slow dangerous"},
      {"saveconfig", "admin slow dangerous"},
      {"set-config-epoch", "admin slow dangerous"},
      {"setslot", "admin slow dangerous"},
      {"shards", "slow"},
      {"slaves", "admin slow dangerous"},
      {"slots", "slow"}};
  std::vector<CommandSpec> t = {
      // Floodgate's limiters
      {"cl.throttle", -5, kWF | kD, "limiter", key1(kReadsWrites), cmd_cl_throttle, "floodgate",
       "0.1.0", "GCRA rate limit with redis-cell's semantics and reply",
       "key max_burst count period [quantity]"},
      {"rl.throttle", -5, kWF | kD, "limiter", key1(kReadsWrites), cmd_cl_throttle, "floodgate",
       "0.1.0", "CL.THROTTLE by the name managed servers without modules give it",
       "key max_burst count period [quantity]"},
      {"fg.take", -2, kWF | kD, "limiter", key1(kReadsWrites), cmd_fg_take, "floodgate", "0.1.0",
       "Consume from a key's limiter (named policy or inline kind and parameters)",
       "key [policy|kind params...] [COST n] [WAIT ms]"},
      {"fg.takeall", -3, kW | kD, "limiter", kNoKeys, cmd_fg_takeall, "floodgate", "0.3.0",
       "Consume from several limiters only if every one allows (reserve, then commit or cancel)",
       "[COST n] key policy|kind params... [key policy|kind params... ...]"},
      {"fg.peek", -2, kF | kD, "read limiter", key1(kReads), cmd_fg_peek, "floodgate", "0.1.0",
       "Evaluate a key's limiter without consuming", "key [policy|kind params...] [COST n]"},
      {"fg.adjust", -3, kWF, "limiter", key1(kReadsWrites), cmd_fg_adjust, "floodgate", "0.2.0",
       "Charge (delta > 0, into debt) or refund (delta < 0) a cost known only after the request",
       "key [policy|kind params...] delta"},
      {"fg.reset", 2, kWF, "keyspace admin dangerous", key1(kWrites), cmd_fg_reset, "floodgate",
       "0.1.0", "Forget a key's limiter state", "key"},
      {"fg.acquire", -2, kWF | kD, "limiter", key1(kReadsWrites), cmd_fg_acquire, "floodgate",
       "0.1.0", "Take a concurrency lease", "key [limit ttl_ms|policy] [HOLDER id | BOUND]"},
      {"fg.renew", 4, kWF, "limiter", key1(kReadsWrites), cmd_fg_renew, "floodgate", "0.1.0",
       "Extend one lease", "key lease ttl_ms"},
      {"fg.release", 3, kWF, "limiter", key1(kReadsWrites), cmd_fg_release, "floodgate", "0.1.0",
       "Give a lease back", "key lease"},
      {"fg.count", 2, kF, "read limiter", key1(kReads), cmd_fg_count, "floodgate", "0.1.0",
       "Live leases of a key", "key"},
      {"fg.heartbeat", 3, kWF, "limiter", kNoKeys, cmd_fg_heartbeat, "floodgate", "0.1.0",
       "Renew every lease of a holder", "holder ttl_ms"},
      {"fg.releaseall", 2, kWF, "limiter", kNoKeys, cmd_fg_releaseall, "floodgate", "0.1.0",
       "Release every lease of a holder", "holder"},
      {"fg.policy", -2, 0, "", kNoKeys, cmd_fg_policy, "floodgate", "0.1.0",
       "Change or show policies, key patterns and per-key overrides, cluster-wide",
       "SET name kind params... | GET name | DEL name | LIST | MAP pattern policy | "
       "UNMAP pattern | PATTERNS | OVERRIDE key policy|kind params... | UNOVERRIDE key | "
       "OVERRIDES | WHICH key [policy]",
       kPolicySubs},
      {"fg.rls", -2, 0, "", kNoKeys, cmd_fg_rls, "floodgate", "0.1.0",
       "Show or reload the gateway door's rate-limit configuration (envoyproxy/ratelimit YAML)",
       "CONFIG | RELOAD", kRlsSubs},
      // strings
      {"get", 2, kF, "read string", key1(kReads), DataCmd::kGet, "string", "1.0.0",
       "Returns the string value of a key", "key"},
      {"set", -3, kW, "string", kSetKey, DataCmd::kSet, "string", "1.0.0",
       "Sets the string value of a key, ignoring its type; the key is created if it doesn't exist",
       "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
       "unix-time-milliseconds | KEEPTTL]"},
      {"setnx", 3, kWF, "string", key1(kWrites), DataCmd::kSetNx, "string", "1.0.0",
       "Sets the string value of a key only when the key doesn't exist", "key value"},
      {"setex", 4, kW, "string", key1(kWrites), DataCmd::kSetEx, "string", "2.0.0",
       "Sets the string value and expiration time of a key", "key seconds value"},
      {"psetex", 4, kW, "string", key1(kWrites), DataCmd::kPSetEx, "string", "2.6.0",
       "Sets both string value and expiration time in milliseconds of a key",
       "key milliseconds value"},
      {"getdel", 2, kWF, "string", key1(kReadsWrites), DataCmd::kGetDel, "string", "6.2.0",
       "Returns the string value of a key after deleting the key", "key"},
      {"getex", -2, kWF, "string", key1(kReadsWrites), DataCmd::kGetEx, "string", "6.2.0",
       "Returns the string value of a key after setting its expiration time",
       "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | "
       "PERSIST]"},
      {"incr", 2, kWF, "string", key1(kReadsWrites), DataCmd::kIncr, "string", "1.0.0",
       "Increments the integer value of a key by one", "key"},
      {"incrby", 3, kWF, "string", key1(kReadsWrites), DataCmd::kIncrBy, "string", "1.0.0",
       "Increments the integer value of a key by a number", "key increment"},
      {"incrbyfloat", 3, kWF, "string", key1(kReadsWrites), DataCmd::kIncrByFloat, "string",
       "2.6.0", "Increment the floating point value of a key by a number", "key increment"},
      {"decr", 2, kWF, "string", key1(kReadsWrites), DataCmd::kDecr, "string", "1.0.0",
       "Decrements the integer value of a key by one", "key"},
      {"decrby", 3, kWF, "string", key1(kReadsWrites), DataCmd::kDecrBy, "string", "1.0.0",
       "Decrements a number from the integer value of a key", "key decrement"},
      {"mget", -2, kF, "read string", all_keys(kReads), DataCmd::kMGet, "string", "1.0.0",
       "Atomically returns the string values of one or more keys", "key [key ...]"},
      {"mset", -3, kW, "string", all_keys(kWrites, 2), DataCmd::kMSet, "string", "1.0.1",
       "Atomically creates or modifies the string values of one or more keys",
       "key value [key value ...]"},
      {"append", 3, kWF, "string", key1(kReadsWrites), DataCmd::kAppend, "string", "2.0.0",
       "Appends a string to the value of a key; creates the key if it doesn't exist", "key value"},
      {"strlen", 2, kF, "read string", key1(kNoAccess), DataCmd::kStrlen, "string", "2.2.0",
       "Returns the length of a string value", "key"},
      {"getrange", 4, 0, "read string", key1(kReads), DataCmd::kGetRange, "string", "2.4.0",
       "Returns a substring of the string stored at a key", "key start end"},
      {"substr", 4, 0, "read string", key1(kReads), DataCmd::kSubstr, "string", "1.0.0",
       "Returns a substring from a string value (as GETRANGE)", "key start end"},
      {"setrange", 4, kW, "string", key1(kReadsWrites), DataCmd::kSetRange, "string", "2.2.0",
       "Overwrites a part of a string value with another by an offset; creates the key if it "
       "doesn't exist",
       "key offset value"},
      {"increx", -2, kWF, "string", key1(kReadsWrites), DataCmd::kIncrEx, "string", "8.8.0",
       "Increments the number at a key within bounds and sets its expiration, in one step",
       "key [BYINT increment | BYFLOAT increment] [LBOUND lowerbound] [UBOUND upperbound] "
       "[SATURATE] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
       "unix-time-milliseconds | PERSIST] [ENX] [NX | XX]"},
      {"getset", 3, kWF, "string", key1(kReadsWrites), DataCmd::kGetSet, "string", "1.0.0",
       "Returns the previous string value of a key after setting it to a new value", "key value"},
      {"msetnx",
       -3,
       kW,
       "string",
       all_keys(kWrites, 2),
       DataCmd::kMSetNx,
       "string",
       "1.0.1",
       "Atomically modifies the string values of one or more keys only when all keys don't "
       "exist",
       "key value [key value ...]",
       {},
       AclCommand::Channels::kNone,
       "request_policy:multi_shard response_policy:agg_min"},
      // keys and TTLs
      {"rename", 3, kW, "keyspace", kTwoKeys, DataCmd::kRename, "generic", "1.0.0",
       "Renames a key and overwrites the destination", "key newkey"},
      {"renamenx", 3, kWF, "keyspace", kTwoKeys, DataCmd::kRenameNx, "generic", "1.0.0",
       "Renames a key only when the target key name doesn't exist", "key newkey"},
      {"copy", -3, kW, "keyspace", kTwoKeys, DataCmd::kCopy, "generic", "6.2.0",
       "Copies the value of a key to a new key",
       "source destination [DB destination-db] [REPLACE]"},
      {"del", -2, kW, "keyspace", all_keys(kWrites), DataCmd::kDel, "generic", "1.0.0",
       "Deletes one or more keys", "key [key ...]"},
      {"unlink", -2, kWF, "keyspace", all_keys(kWrites), DataCmd::kUnlink, "generic", "4.0.0",
       "Asynchronously deletes one or more keys", "key [key ...]"},
      {"exists", -2, kF, "keyspace read", all_keys(kNoAccess), DataCmd::kExists, "generic", "3.0.3",
       "Determines whether one or more keys exist", "key [key ...]"},
      {"touch", -2, kF, "keyspace read", all_keys(kNoAccess), DataCmd::kTouch, "generic", "3.2.1",
       "Returns the number of existing keys out of those specified after updating the time they "
       "were last accessed",
       "key [key ...]"},
      {"object", -2, 0, "", KeySpec{2, 2, 1, 0, kNoAccess, false},
       CommandRun(cmd_object, DataCmd::kObject), "generic", "2.2.3",
       "The internal representation of a key's value, as redis-server 7.0 would keep it",
       "ENCODING key | REFCOUNT key | IDLETIME key | FREQ key | HELP", kObjectSubs},
      {"memory", -2, 0, "", KeySpec{2, 2, 1, 0, kNoAccess, false}, cmd_memory, "server", "4.0.0",
       "Estimates the memory a key and its value take", "USAGE key [SAMPLES count] | HELP",
       kMemorySubs},
      {"type", 2, kF, "keyspace read", key1(kNoAccess), DataCmd::kType, "generic", "1.0.0",
       "Determines the type of value stored at a key", "key"},
      {"expire", -3, kWF, "keyspace", key1(kWrites), DataCmd::kExpire, "generic", "1.0.0",
       "Sets the expiration time of a key in seconds", "key seconds [NX | XX | GT | LT]"},
      {"pexpire", -3, kWF, "keyspace", key1(kWrites), DataCmd::kPExpire, "generic", "2.6.0",
       "Sets the expiration time of a key in milliseconds", "key milliseconds [NX | XX | GT | LT]"},
      {"expireat", -3, kWF, "keyspace", key1(kWrites), DataCmd::kExpireAt, "generic", "1.2.0",
       "Sets the expiration time of a key to a Unix timestamp",
       "key unix-time-seconds [NX | XX | GT | LT]"},
      {"pexpireat", -3, kWF, "keyspace", key1(kWrites), DataCmd::kPExpireAt, "generic", "2.6.0",
       "Sets the expiration time of a key to a Unix milliseconds timestamp",
       "key unix-time-milliseconds [NX | XX | GT | LT]"},
      {"ttl",
       2,
       kF,
       "keyspace read",
       key1(kReads),
       DataCmd::kTtl,
       "generic",
       "1.0.0",
       "Returns the expiration time in seconds of a key",
       "key",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"pttl",
       2,
       kF,
       "keyspace read",
       key1(kReads),
       DataCmd::kPTtl,
       "generic",
       "2.6.0",
       "Returns the expiration time in milliseconds of a key",
       "key",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"expiretime", 2, kF, "keyspace read", key1(kReads), DataCmd::kExpireTime, "generic", "7.0.0",
       "Returns the expiration time of a key as a Unix timestamp", "key"},
      {"pexpiretime", 2, kF, "keyspace read", key1(kReads), DataCmd::kPExpireTime, "generic",
       "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp", "key"},
      {"persist", 2, kWF, "keyspace", key1(kWrites), DataCmd::kPersist, "generic", "2.2.0",
       "Removes the expiration time of a key", "key"},
      {"keys",
       2,
       0,
       "keyspace read dangerous",
       kNoKeys,
       DataCmd::kKeys,
       "generic",
       "1.0.0",
       "Returns all key names that match a pattern (this node's keys; a pattern with a "
       "{hash tag} before any wildcard is answered by the tag's owner)",
       "pattern",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"randomkey",
       1,
       0,
       "keyspace read",
       kNoKeys,
       DataCmd::kRandomKey,
       "generic",
       "1.0.0",
       "Returns a random key name from the database (a cluster node: of the slots it serves)",
       "",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      // (SCAN answers every match at once, which a script's time budget was not made for)
      {"scan",
       -2,
       kNoScript,
       "keyspace read",
       kNoKeys,
       DataCmd::kScan,
       "generic",
       "2.8.0",
       "Iterates over the key names in the database",
       "cursor [MATCH pattern] [COUNT count] [TYPE type]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output request_policy:special"},
      // hashes
      {"hget", 3, kF, "read hash", key1(kReads), DataCmd::kHGet, "hash", "2.0.0",
       "Returns the value of a field in a hash", "key field"},
      {"hset", -4, kWF, "hash", key1(kWrites), DataCmd::kHSet, "hash", "2.0.0",
       "Creates or modifies the value of a field in a hash", "key field value [field value ...]"},
      {"hsetnx", 4, kWF, "hash", key1(kWrites), DataCmd::kHSetNx, "hash", "2.0.0",
       "Sets the value of a field in a hash only when the field doesn't exist", "key field value"},
      {"hmset", -4, kWF, "hash", key1(kWrites), DataCmd::kHMSet, "hash", "2.0.0",
       "Sets the values of multiple fields", "key field value [field value ...]"},
      {"hmget", -3, kF, "read hash", key1(kReads), DataCmd::kHMGet, "hash", "2.0.0",
       "Returns the values of all fields in a hash", "key field [field ...]"},
      {"hincrby", 4, kWF, "hash", key1(kReadsWrites), DataCmd::kHIncrBy, "hash", "2.0.0",
       "Increments the integer value of a field in a hash by a number", "key field increment"},
      {"hincrbyfloat", 4, kWF, "hash", key1(kReadsWrites), DataCmd::kHIncrByFloat, "hash", "2.6.0",
       "Increments the floating point value of a field by a number", "key field increment"},
      {"hdel", -3, kWF, "hash", key1(kWrites), DataCmd::kHDel, "hash", "2.0.0",
       "Deletes one or more fields and their values from a hash", "key field [field ...]"},
      {"hgetall",
       2,
       0,
       "read hash",
       key1(kReads),
       DataCmd::kHGetAll,
       "hash",
       "2.0.0",
       "Returns all fields and values in a hash",
       "key",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"hlen", 2, kF, "read hash", key1(kNoAccess), DataCmd::kHLen, "hash", "2.0.0",
       "Returns the number of fields in a hash", "key"},
      {"hexists", 3, kF, "read hash", key1(kNoAccess), DataCmd::kHExists, "hash", "2.0.0",
       "Determines whether a field exists in a hash", "key field"},
      {"hkeys",
       2,
       0,
       "read hash",
       key1(kReads),
       DataCmd::kHKeys,
       "hash",
       "2.0.0",
       "Returns all fields in a hash",
       "key",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"hvals",
       2,
       0,
       "read hash",
       key1(kReads),
       DataCmd::kHVals,
       "hash",
       "2.0.0",
       "Returns all values in a hash",
       "key",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"hstrlen", 3, kF, "read hash", key1(kNoAccess), DataCmd::kHStrlen, "hash", "3.2.0",
       "Returns the length of the value of a field", "key field"},
      {"hscan",
       -3,
       0,
       "read hash",
       key1(kReads),
       DataCmd::kHScan,
       "hash",
       "2.8.0",
       "Iterates over fields and values of a hash",
       "key cursor [MATCH pattern] [COUNT count]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      // sorted sets
      {"zadd", -4, kWF, "sortedset", key1(kWrites), DataCmd::kZAdd, "sorted-set", "1.2.0",
       "Adds one or more members to a sorted set, or updates their scores",
       "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]"},
      {"zrem", -3, kWF, "sortedset", key1(kWrites), DataCmd::kZRem, "sorted-set", "1.2.0",
       "Removes one or more members from a sorted set", "key member [member ...]"},
      {"zcard", 2, kF, "read sortedset", key1(kNoAccess), DataCmd::kZCard, "sorted-set", "1.2.0",
       "Returns the number of members in a sorted set", "key"},
      {"zcount", 4, kF, "read sortedset", key1(kReads), DataCmd::kZCount, "sorted-set", "2.0.0",
       "Returns the count of members in a sorted set that have scores within a range",
       "key min max"},
      {"zscore", 3, kF, "read sortedset", key1(kReads), DataCmd::kZScore, "sorted-set", "1.2.0",
       "Returns the score of a member in a sorted set", "key member"},
      {"zrange", -4, 0, "read sortedset", key1(kReads), DataCmd::kZRange, "sorted-set", "1.2.0",
       "Returns members in a sorted set within a range of indexes or scores",
       "key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES]"},
      {"zrangebyscore", -4, 0, "read sortedset", key1(kReads), DataCmd::kZRangeByScore,
       "sorted-set", "1.0.5", "Returns members in a sorted set within a range of scores",
       "key min max [WITHSCORES] [LIMIT offset count]"},
      {"zremrangebyscore", 4, kW, "sortedset", key1(kWrites), DataCmd::kZRemRangeByScore,
       "sorted-set", "1.2.0", "Removes members in a sorted set within a range of scores",
       "key min max"},
      {"zremrangebyrank", 4, kW, "sortedset", key1(kWrites), DataCmd::kZRemRangeByRank,
       "sorted-set", "2.0.0", "Removes members in a sorted set within a range of indexes",
       "key start stop"},
      {"zpopmin", -2, kWF, "sortedset", key1(kReadsWrites), DataCmd::kZPopMin, "sorted-set",
       "5.0.0", "Returns the lowest-scoring members from a sorted set after removing them",
       "key [count]"},
      {"zrangebylex", -4, 0, "read sortedset", key1(kReads), DataCmd::kZRangeByLex, "sorted-set",
       "2.8.9", "Returns members in a sorted set within a lexicographical range",
       "key min max [LIMIT offset count]"},
      {"zrevrangebylex", -4, 0, "read sortedset", key1(kReads), DataCmd::kZRevRangeByLex,
       "sorted-set", "2.8.9",
       "Returns members in a sorted set within a lexicographical range in reverse order",
       "key max min [LIMIT offset count]"},
      {"zlexcount", 4, kF, "read sortedset", key1(kReads), DataCmd::kZLexCount, "sorted-set",
       "2.8.9", "Returns the number of members in a sorted set within a lexicographical range",
       "key min max"},
      {"zremrangebylex", 4, kW, "sortedset", key1(kWrites), DataCmd::kZRemRangeByLex, "sorted-set",
       "2.8.9", "Removes members in a sorted set within a lexicographical range", "key min max"},
      {"zpopmax", -2, kWF, "sortedset", key1(kReadsWrites), DataCmd::kZPopMax, "sorted-set",
       "5.0.0", "Returns the highest-scoring members from a sorted set after removing them",
       "key [count]"},
      {"zincrby", 4, kWF, "sortedset", key1(kReadsWrites), DataCmd::kZIncrBy, "sorted-set", "1.2.0",
       "Increments the score of a member in a sorted set", "key increment member"},
      {"zmscore", -3, kF, "read sortedset", key1(kReads), DataCmd::kZMScore, "sorted-set", "6.2.0",
       "Returns the score of one or more members in a sorted set", "key member [member ...]"},
      {"zrank", 3, kF, "read sortedset", key1(kReads), DataCmd::kZRank, "sorted-set", "2.0.0",
       "Returns the index of a member in a sorted set ordered by ascending scores", "key member"},
      {"zrevrank", 3, kF, "read sortedset", key1(kReads), DataCmd::kZRevRank, "sorted-set", "2.0.0",
       "Returns the index of a member in a sorted set ordered by descending scores", "key member"},
      {"zrevrange", -4, 0, "read sortedset", key1(kReads), DataCmd::kZRevRange, "sorted-set",
       "1.2.0", "Returns members in a sorted set within a range of indexes, highest score first",
       "key start stop [WITHSCORES]"},
      {"zrevrangebyscore", -4, 0, "read sortedset", key1(kReads), DataCmd::kZRevRangeByScore,
       "sorted-set", "2.2.0",
       "Returns members in a sorted set within a range of scores, highest score first",
       "key max min [WITHSCORES] [LIMIT offset count]"},
      // lists
      {"lpush", -3, kWF, "list", key1(kWrites), DataCmd::kLPush, "list", "1.0.0",
       "Prepends one or more elements to a list", "key element [element ...]"},
      {"rpush", -3, kWF, "list", key1(kWrites), DataCmd::kRPush, "list", "1.0.0",
       "Appends one or more elements to a list", "key element [element ...]"},
      {"lpop", -2, kWF, "list", key1(kReadsWrites), DataCmd::kLPop, "list", "1.0.0",
       "Returns the first elements in a list after removing them", "key [count]"},
      {"rpop", -2, kWF, "list", key1(kReadsWrites), DataCmd::kRPop, "list", "1.0.0",
       "Returns and removes the last elements of a list", "key [count]"},
      {"llen", 2, kF, "read list", key1(kNoAccess), DataCmd::kLLen, "list", "1.0.0",
       "Returns the length of a list", "key"},
      {"lrange", 4, 0, "read list", key1(kReads), DataCmd::kLRange, "list", "1.0.0",
       "Returns a range of elements from a list", "key start stop"},
      {"ltrim", 4, kW, "list", key1(kWrites), DataCmd::kLTrim, "list", "1.0.0",
       "Removes elements from both ends a list", "key start stop"},
      {"lindex", 3, 0, "read list", key1(kReads), DataCmd::kLIndex, "list", "1.0.0",
       "Returns an element from a list by its index", "key index"},
      {"lpushx", -3, kWF, "list", key1(kWrites), DataCmd::kLPushX, "list", "2.2.0",
       "Prepends one or more elements to a list only when the list exists",
       "key element [element ...]"},
      {"rpushx", -3, kWF, "list", key1(kWrites), DataCmd::kRPushX, "list", "2.2.0",
       "Appends one or more elements to a list only when the list exists",
       "key element [element ...]"},
      {"lset", 4, kW, "list", key1(kWrites), DataCmd::kLSet, "list", "1.0.0",
       "Sets the value of an element in a list by its index", "key index element"},
      {"linsert", 5, kW, "list", key1(kWrites), DataCmd::kLInsert, "list", "2.2.0",
       "Inserts an element before or after another element in a list",
       "key BEFORE|AFTER pivot element"},
      {"lrem", 4, kW, "list", key1(kWrites), DataCmd::kLRem, "list", "1.0.0",
       "Removes elements from a list", "key count element"},
      {"lpos", -3, 0, "read list", key1(kReads), DataCmd::kLPos, "list", "6.0.6",
       "Returns the index of matching elements in a list",
       "key element [RANK rank] [COUNT num-matches] [MAXLEN len]"},
      {"rpoplpush", 3, kW, "list", kTwoKeys, DataCmd::kRPopLPush, "list", "1.2.0",
       "Returns the last element of a list after removing and pushing it to another list",
       "source destination"},
      {"lmove", 5, kW, "list", kTwoKeys, DataCmd::kLMove, "list", "6.2.0",
       "Returns an element after popping it from one list and pushing it to another",
       "source destination LEFT|RIGHT LEFT|RIGHT"},
      // blocking pops: the client waits while every key is empty (api/server/resp_session.cpp)
      {"blpop", -3, kW | kNoScript, "list blocking", kBlockKeys,
       CommandRun(cmd_block, DataCmd::kBLPop), "list", "2.0.0",
       "Removes and returns the first element in a list, or blocks until one is available",
       "key [key ...] timeout"},
      {"brpop", -3, kW | kNoScript, "list blocking", kBlockKeys,
       CommandRun(cmd_block, DataCmd::kBRPop), "list", "2.0.0",
       "Removes and returns the last element in a list, or blocks until one is available",
       "key [key ...] timeout"},
      {"brpoplpush", 4, kW | kNoScript, "list blocking", kTwoKeys,
       CommandRun(cmd_block, DataCmd::kBRPopLPush), "list", "2.2.0",
       "Pops an element from a list, pushes it to another list and returns it, or blocks until "
       "one is available",
       "source destination timeout"},
      {"blmove", 6, kW | kNoScript, "list blocking", kTwoKeys,
       CommandRun(cmd_block, DataCmd::kBLMove), "list", "6.2.0",
       "Pops an element from a list, pushes it to another list and returns it, or blocks until "
       "one is available",
       "source destination LEFT|RIGHT LEFT|RIGHT timeout"},
      {"blmpop", -5, kW, "list blocking", counted_keys(kReadsWrites, 2),
       CommandRun(cmd_block, DataCmd::kBLMPop), "list", "7.0.0",
       "Pops the first elements from one of multiple lists, or blocks until one is available",
       "timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]"},
      {"bzpopmin", -3, kWF | kNoScript, "sortedset blocking", kBlockKeys,
       CommandRun(cmd_block, DataCmd::kBZPopMin), "sorted-set", "5.0.0",
       "Removes and returns the member with the lowest score from one or more sorted sets, or "
       "blocks until one is available",
       "key [key ...] timeout"},
      {"bzpopmax", -3, kWF | kNoScript, "sortedset blocking", kBlockKeys,
       CommandRun(cmd_block, DataCmd::kBZPopMax), "sorted-set", "5.0.0",
       "Removes and returns the member with the highest score from one or more sorted sets, or "
       "blocks until one is available",
       "key [key ...] timeout"},
      {"bzmpop", -5, kW, "sortedset blocking", counted_keys(kReadsWrites, 2),
       CommandRun(cmd_block, DataCmd::kBZMPop), "sorted-set", "7.0.0",
       "Removes and returns members by score from one or more sorted sets, or blocks until one "
       "is available",
       "timeout numkeys key [key ...] MIN|MAX [COUNT count]"},
      // sets
      {"sadd", -3, kWF, "set", key1(kWrites), DataCmd::kSAdd, "set", "1.0.0",
       "Adds one or more members to a set", "key member [member ...]"},
      {"srem", -3, kWF, "set", key1(kWrites), DataCmd::kSRem, "set", "1.0.0",
       "Removes one or more members from a set", "key member [member ...]"},
      {"scard", 2, kF, "read set", key1(kReads), DataCmd::kSCard, "set", "1.0.0",
       "Returns the number of members in a set", "key"},
      {"sismember", 3, kF, "read set", key1(kReads), DataCmd::kSIsMember, "set", "1.0.0",
       "Determines whether a member belongs to a set", "key member"},
      {"smismember", -3, kF, "read set", key1(kReads), DataCmd::kSMIsMember, "set", "6.2.0",
       "Determines whether multiple members belong to a set", "key member [member ...]"},
      {"smembers",
       2,
       0,
       "read set",
       key1(kReads),
       DataCmd::kSMembers,
       "set",
       "1.0.0",
       "Returns all members of a set",
       "key",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"spop",
       -2,
       kWF,
       "set",
       key1(kReadsWrites),
       DataCmd::kSPop,
       "set",
       "1.0.0",
       "Returns one or more random members from a set after removing them",
       "key [count]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"srandmember",
       -2,
       0,
       "read set",
       key1(kReads),
       DataCmd::kSRandMember,
       "set",
       "1.0.0",
       "Get one or multiple random members from a set",
       "key [count]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"sscan",
       -3,
       0,
       "read set",
       key1(kReads),
       DataCmd::kSScan,
       "set",
       "2.8.0",
       "Iterates over members of a set",
       "key cursor [MATCH pattern] [COUNT count]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"hrandfield",
       -2,
       0,
       "read hash",
       key1(kReads),
       DataCmd::kHRandField,
       "hash",
       "6.2.0",
       "Returns one or more random fields from a hash",
       "key [count [WITHVALUES]]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"zrandmember",
       -2,
       0,
       "read sortedset",
       key1(kReads),
       DataCmd::kZRandMember,
       "sorted-set",
       "6.2.0",
       "Returns one or more random members from a sorted set",
       "key [count [WITHSCORES]]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"zscan",
       -3,
       0,
       "read sortedset",
       key1(kReads),
       DataCmd::kZScan,
       "sorted-set",
       "2.8.0",
       "Iterates over members and scores of a sorted set",
       "key cursor [MATCH pattern] [COUNT count]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"zunionstore", -4, kW, "sortedset", kStoreCounted, DataCmd::kZUnionStore, "sorted-set",
       "2.0.0", "Stores the union of multiple sorted sets in a key",
       "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]"},
      {"zinterstore", -4, kW, "sortedset", kStoreCounted, DataCmd::kZInterStore, "sorted-set",
       "2.0.0", "Stores the intersect of multiple sorted sets in a key",
       "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]"},
      {"zdiffstore", -4, kW, "sortedset", kStoreCounted, DataCmd::kZDiffStore, "sorted-set",
       "6.2.0", "Stores the difference of multiple sorted sets in a key",
       "destination numkeys key [key ...]"},
      {"zunion", -3, 0, "read sortedset", counted_keys(kReads, 1), DataCmd::kZUnion, "sorted-set",
       "6.2.0", "Returns the union of multiple sorted sets",
       "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]"},
      {"zinter", -3, 0, "read sortedset", counted_keys(kReads, 1), DataCmd::kZInter, "sorted-set",
       "6.2.0", "Returns the intersect of multiple sorted sets",
       "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]"},
      {"zdiff", -3, 0, "read sortedset", counted_keys(kReads, 1), DataCmd::kZDiff, "sorted-set",
       "6.2.0", "Returns the difference between multiple sorted sets",
       "numkeys key [key ...] [WITHSCORES]"},
      {"zintercard", -3, 0, "read sortedset", counted_keys(kReads, 1), DataCmd::kZInterCard,
       "sorted-set", "7.0.0",
       "Returns the number of members of the intersect of multiple sorted sets",
       "numkeys key [key ...] [LIMIT limit]"},
      {"zrangestore", -5, kW, "sortedset", kTwoKeys, DataCmd::kZRangeStore, "sorted-set", "6.2.0",
       "Stores a range of members from sorted set in a key",
       "dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]"},
      {"zmpop", -4, kW, "sortedset", counted_keys(kReadsWrites, 1), DataCmd::kZMPop, "sorted-set",
       "7.0.0",
       "Returns the highest- or lowest-scoring members from one or more sorted sets after "
       "removing them",
       "numkeys key [key ...] MIN|MAX [COUNT count]"},
      {"lmpop", -4, kW, "list", counted_keys(kReadsWrites, 1), DataCmd::kLMPop, "list", "7.0.0",
       "Returns multiple elements from a list after removing them",
       "numkeys key [key ...] LEFT|RIGHT [COUNT count]"},
      {"smove", 4, kWF, "set", kTwoKeys, DataCmd::kSMove, "set", "1.0.0",
       "Moves a member from one set to another", "source destination member"},
      {"sinter",
       -2,
       0,
       "read set",
       all_keys(kReads),
       DataCmd::kSInter,
       "set",
       "1.0.0",
       "Returns the intersect of multiple sets",
       "key [key ...]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"sintercard", -3, 0, "read set", counted_keys(kReads, 1), DataCmd::kSInterCard, "set",
       "7.0.0", "Returns the number of members of the intersect of multiple sets",
       "numkeys key [key ...] [LIMIT limit]"},
      {"sinterstore", -3, kW, "set", all_keys(kReadsWrites), DataCmd::kSInterStore, "set", "1.0.0",
       "Stores the intersect of multiple sets in a key", "destination key [key ...]"},
      {"sunion",
       -2,
       0,
       "read set",
       all_keys(kReads),
       DataCmd::kSUnion,
       "set",
       "1.0.0",
       "Returns the union of multiple sets",
       "key [key ...]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"sunionstore", -3, kW, "set", all_keys(kReadsWrites), DataCmd::kSUnionStore, "set", "1.0.0",
       "Stores the union of multiple sets in a key", "destination key [key ...]"},
      {"sdiff",
       -2,
       0,
       "read set",
       all_keys(kReads),
       DataCmd::kSDiff,
       "set",
       "1.0.0",
       "Returns the difference of multiple sets",
       "key [key ...]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output_order"},
      {"sdiffstore", -3, kW, "set", all_keys(kReadsWrites), DataCmd::kSDiffStore, "set", "1.0.0",
       "Stores the difference of multiple sets in a key", "destination key [key ...]"},
      // transactions
      {"multi", 1, kF | kNotQueued, "transaction", kNoKeys, cmd_multi, "transactions", "1.2.0",
       "Starts a transaction", ""},
      {"exec", 1, kNotQueued, "transaction", kNoKeys, cmd_exec, "transactions", "1.2.0",
       "Executes all commands in a transaction", ""},
      {"discard", 1, kF | kNotQueued, "transaction", kNoKeys, cmd_discard, "transactions", "2.0.0",
       "Discards a transaction", ""},
      {"watch", -2, kF | kNotQueued, "transaction", all_keys(kNoAccess), cmd_watch, "transactions",
       "2.2.0", "Monitors changes to keys to determine the execution of a transaction",
       "key [key ...]"},
      {"unwatch", 1, kF, "transaction", kNoKeys, cmd_unwatch, "transactions", "2.2.0",
       "Forgets about watched keys of a transaction", ""},
      // the whole keyspace
      {"flushall", -1, kW | kNoScript, "keyspace dangerous admin", kNoKeys, DataCmd::kFlushAll,
       "server", "1.0.0", "Removes all keys (a cluster node: of the slots it serves)",
       "[ASYNC | SYNC]"},
      {"flushdb", -1, kW | kNoScript, "keyspace dangerous admin", kNoKeys, DataCmd::kFlushDb,
       "server", "1.0.0", "Removes all keys of the database (only 0 exists; as FLUSHALL)",
       "[ASYNC | SYNC]"},
      // scripts (a script's keys are checked when it calls them)
      {"eval", -3, kW | kScript | kNoScript, "scripting", counted_keys(kReadsWrites),
       CommandRun(cmd_eval, DataCmd::kEval), "scripting", "2.6.0", "Runs a Lua script on the node",
       "script numkeys [key [key ...]] [arg [arg ...]]"},
      {"evalsha", -3, kW | kScript | kNoScript, "scripting", counted_keys(kReadsWrites),
       CommandRun(cmd_eval, DataCmd::kEval), "scripting", "2.6.0",
       "Runs a cached Lua script by its SHA1", "sha1 numkeys [key [key ...]] [arg [arg ...]]"},
      {"eval_ro", -3, kScript | kNoScript, "scripting", counted_keys(kReads),
       CommandRun(cmd_eval, DataCmd::kEval), "scripting", "7.0.0", "Runs a read-only Lua script",
       "script numkeys [key [key ...]] [arg [arg ...]]"},
      {"evalsha_ro", -3, kScript | kNoScript, "scripting", counted_keys(kReads),
       CommandRun(cmd_eval, DataCmd::kEval), "scripting", "7.0.0",
       "Runs a cached read-only Lua script", "sha1 numkeys [key [key ...]] [arg [arg ...]]"},
      {"script", -2, 0, "", kNoKeys, cmd_script, "scripting", "2.6.0", "The script cache",
       "LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC | SYNC] | KILL | HELP", kScriptSubs},
      {"function", -2, 0, "", kNoKeys, cmd_function, "scripting", "7.0.0",
       "Function libraries: there are none here (scripts are EVAL and EVALSHA)",
       "LIST [LIBRARYNAME pattern] [WITHCODE] | STATS | DELETE library | FLUSH [ASYNC | SYNC] | "
       "HELP",
       kFunctionSubs},
      // the connection
      {"ping",
       -1,
       kF | kSubscribeMode,
       "connection",
       kNoKeys,
       cmd_ping,
       "connection",
       "1.0.0",
       "Returns the server's liveliness response",
       "[message]",
       {},
       AclCommand::Channels::kNone,
       "request_policy:all_shards response_policy:all_succeeded"},
      {"echo", 2, kF, "connection", kNoKeys, cmd_echo, "connection", "1.0.0",
       "Returns the given string", "message"},
      {"hello", -1, kNoAuth | kBarrier | kF, "connection", kNoKeys, cmd_hello, "connection",
       "6.0.0", "Handshakes with the server",
       "[protover [AUTH username password] [SETNAME clientname]]"},
      {"auth", -2, kNoAuth | kBarrier | kF, "connection", kNoKeys, cmd_auth, "connection", "1.0.0",
       "Authenticates the connection", "[username] password"},
      {"quit", -1, kNoAuth | kBarrier | kF | kNotQueued | kSubscribeMode, "connection", kNoKeys,
       cmd_quit, "connection", "1.0.0", "Closes the connection", ""},
      {"reset", 1, kNoAuth | kBarrier | kF | kNotQueued | kSubscribeMode, "connection", kNoKeys,
       cmd_reset, "connection", "6.2.0", "Resets the connection", ""},
      {"select", 2, kF, "connection", kNoKeys, cmd_select, "connection", "1.0.0",
       "Selects the database (only 0 exists)", "index"},
      {"fg.deadline", -1, kF, "connection", kNoKeys, cmd_fg_deadline, "floodgate", "0.3.0",
       "Refuse this connection's limiter commands, undecided, once they waited this long",
       "[ms | DEFAULT]"},
      {"client", -2, 0, "", kNoKeys, cmd_client, "connection", "2.4.0",
       "Client connection commands",
       "SETNAME connection-name | GETNAME | ID | SETINFO LIB-NAME|LIB-VER value | LIST [TYPE "
       "type | ID client-id [client-id ...] | DOOR door] | INFO | KILL [ID client-id] [TYPE type] "
       "[USER username] [ADDR ip:port] [LADDR ip:port] [SKIPME YES|NO] [MAXAGE maxage] [DOOR "
       "door] | NO-EVICT ON|OFF | NO-TOUCH ON|OFF | REPLY ON|OFF|SKIP | UNBLOCK client-id "
       "[TIMEOUT|ERROR] | HELP",
       kClientSubs},
      // pub/sub (subscriptions are the connection's; messages reach every node's subscribers)
      {"subscribe",
       -2,
       kSubscribeMode | kPushes,
       "pubsub",
       kNoKeys,
       cmd_subscribe,
       "pubsub",
       "2.0.0",
       "Listens for messages published to channels",
       "channel [channel ...]",
       {},
       kSubCh},
      {"unsubscribe", -1, kSubscribeMode | kPushes, "pubsub", kNoKeys, cmd_unsubscribe, "pubsub",
       "2.0.0", "Stops listening to messages posted to channels", "[channel [channel ...]]"},
      {"psubscribe",
       -2,
       kSubscribeMode | kPushes,
       "pubsub",
       kNoKeys,
       cmd_psubscribe,
       "pubsub",
       "2.0.0",
       "Listens for messages published to channels that match one or more patterns",
       "pattern [pattern ...]",
       {},
       kPatCh},
      {"punsubscribe", -1, kSubscribeMode | kPushes, "pubsub", kNoKeys, cmd_punsubscribe, "pubsub",
       "2.0.0", "Stops listening to messages published to channels that match one or more patterns",
       "[pattern [pattern ...]]"},
      {"ssubscribe",
       -2,
       kSubscribeMode | kPushes,
       "pubsub",
       kNoKeys,
       cmd_ssubscribe,
       "pubsub",
       "7.0.0",
       "Listens for messages published to shard channels",
       "shardchannel [shardchannel ...]",
       {},
       kSubCh},
      {"sunsubscribe", -1, kSubscribeMode | kPushes, "pubsub", kNoKeys, cmd_sunsubscribe, "pubsub",
       "7.0.0", "Stops listening to messages posted to shard channels",
       "[shardchannel [shardchannel ...]]"},
      {"publish",
       3,
       kF,
       "pubsub",
       kNoKeys,
       cmd_publish,
       "pubsub",
       "2.0.0",
       "Posts a message to a channel",
       "channel message",
       {},
       kPubCh},
      {"spublish",
       3,
       kF,
       "pubsub",
       kNoKeys,
       cmd_spublish,
       "pubsub",
       "7.0.0",
       "Posts a message to a shard channel",
       "shardchannel message",
       {},
       kPubCh},
      {"pubsub", -2, 0, "", kNoKeys, cmd_pubsub, "pubsub", "2.8.0",
       "This node's channels and subscribers",
       "CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS [pattern] | "
       "SHARDNUMSUB [shardchannel ...] | HELP",
       kPubSubSubs},
      // the server
      {"info",
       -1,
       kBarrier,
       "dangerous",
       kNoKeys,
       cmd_info,
       "server",
       "1.0.0",
       "Returns information and statistics about the node",
       "[section ...]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output request_policy:all_shards response_policy:special"},
      {"command", -1, 0, "connection", kNoKeys, cmd_command, "server", "2.8.13",
       "Returns detailed information about all commands",
       "[COUNT | LIST | INFO name... | DOCS [name...] | GETKEYS command arg... | GETKEYSANDFLAGS "
       "command arg...]",
       kCommandSubs, AclCommand::Channels::kNone, "nondeterministic_output_order"},
      {"acl", -2, 0, "", kNoKeys, cmd_acl, "server", "6.0.0",
       "Users and their rights (this node's)",
       "WHOAMI | USERS | LIST | GETUSER user | SETUSER user rule... | DELUSER user... | CAT "
       "[category] | DRYRUN user command [arg...] | LOAD | GENPASS [bits] | HELP",
       kAclSubs},
      {"config", -2, 0, "", kNoKeys, cmd_config, "server", "2.0.0",
       "Reads the node's settings; changes those a running node can take and writes them to "
       "its config file",
       "GET parameter [parameter ...] | SET parameter value [parameter value ...] | REWRITE | "
       "RESETSTAT",
       kConfigSubs},
      {"slowlog", -2, 0, "", kNoKeys, cmd_slowlog, "server", "2.2.12",
       "The node's slow log: the commands that took longer than slowlog-log-slower-than",
       "GET [count] | LEN | RESET | HELP", kSlowlogSubs},
      {"save", 1, kBarrier | kNoMulti, "admin dangerous", kNoKeys, cmd_save, "server", "1.0.0",
       "Writes the node's state to its snapshot file and answers when it is on disk", ""},
      {"bgsave", -1, kBarrier, "admin dangerous", kNoKeys, cmd_bgsave, "server", "1.0.0",
       "Starts writing the node's state to its snapshot file", "[SCHEDULE]"},
      {"lastsave",
       1,
       kF,
       "admin dangerous",
       kNoKeys,
       cmd_lastsave,
       "server",
       "1.0.0",
       "The Unix time of the last good save of the node's state",
       "",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"shutdown", -1, kBarrier | kNoMulti, "admin dangerous", kNoKeys, cmd_shutdown, "server",
       "1.0.0", "Stops the node (saving its state first when it has a dir)",
       "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"},
      {"dbsize",
       1,
       kBarrier | kF,
       "keyspace read",
       kNoKeys,
       cmd_dbsize,
       "server",
       "1.0.0",
       "Returns the number of keys",
       "",
       {},
       AclCommand::Channels::kNone,
       "request_policy:all_shards response_policy:agg_sum"},
      {"time",
       1,
       kF,
       "",
       kNoKeys,
       cmd_time,
       "server",
       "2.6.0",
       "Returns the server time",
       "",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      // the cluster
      {"cluster", -2, 0, "", kNoKeys, cmd_cluster, "cluster", "3.0.0",
       "The cluster's topology and this node's place in it",
       "SLOTS | SHARDS | NODES | INFO | KEYSLOT key | MYID | HELP", kClusterSubs},
      {"asking", 1, kF, "connection", kNoKeys, cmd_asking, "cluster", "3.0.0",
       "Accepted for cluster clients; changes nothing", ""},
      {"readonly", 1, kF, "connection", kNoKeys, cmd_asking, "cluster", "3.0.0",
       "Accepted for cluster clients; changes nothing", ""},
      {"readwrite", 1, kF, "connection", kNoKeys, cmd_asking, "cluster", "3.0.0",
       "Accepted for cluster clients; changes nothing", ""},
      // streams (actors/data_stream.cpp)
      {"xadd", -5, kWF, "stream", key1(kWrites), DataCmd::kXAdd, "stream", "5.0.0",
       "Appends a new message to a stream. Creates the key if it doesn't exist",
       "key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value "
       "[field value ...]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"xlen", 2, kF, "read stream", key1(kReads), DataCmd::kXLen, "stream", "5.0.0",
       "Return the number of messages in a stream", "key"},
      {"xrange", -4, 0, "read stream", key1(kReads), DataCmd::kXRange, "stream", "5.0.0",
       "Returns the messages from a stream within a range of IDs", "key start end [COUNT count]"},
      {"xrevrange", -4, 0, "read stream", key1(kReads), DataCmd::kXRevRange, "stream", "5.0.0",
       "Returns the messages from a stream within a range of IDs in reverse order",
       "key end start [COUNT count]"},
      {"xdel", -3, kWF, "stream", key1(kWrites), DataCmd::kXDel, "stream", "5.0.0",
       "Returns the number of messages after removing them from a stream", "key id [id ...]"},
      {"xtrim", -4, kW, "stream", key1(kWrites), DataCmd::kXTrim, "stream", "5.0.0",
       "Deletes messages from the beginning of a stream",
       "key MAXLEN|MINID [=|~] threshold [LIMIT count]",
       {},
       AclCommand::Channels::kNone,
       "nondeterministic_output"},
      {"xsetid", -3, kWF, "stream", key1(kWrites), DataCmd::kXSetId, "stream", "5.0.0",
       "An internal command for replicating stream values",
       "key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]"},
      {"xread", -4, 0, "read stream blocking", KeySpec{0, 0, 1, 0, kReads, false, true},
       CommandRun(cmd_xread, DataCmd::kXRead), "stream", "5.0.0",
       "Returns messages from multiple streams with IDs greater than the ones requested. Blocks "
       "until a message is available otherwise",
       "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]"},
      {"xinfo", -2, 0, "", KeySpec{2, 2, 1, 0, kReads, false},
       CommandRun(cmd_xinfo, DataCmd::kXInfo), "stream", "5.0.0",
       "Returns information about a stream",
       "STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key group | HELP", kXInfoSubs},
      // bits and LCS (actors/data_bits.cpp)
      {"setbit", 4, kW, "bitmap", key1(kReadsWrites), DataCmd::kSetBit, "bitmap", "2.2.0",
       "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist",
       "key offset value"},
      {"getbit", 3, kF, "read bitmap", key1(kReads), DataCmd::kGetBit, "bitmap", "2.2.0",
       "Returns a bit value by offset", "key offset"},
      {"bitcount", -2, 0, "read bitmap", key1(kReads), DataCmd::kBitCount, "bitmap", "2.6.0",
       "Counts the number of set bits (population counting) in a string",
       "key [start end [BYTE|BIT]]"},
      {"bitpos", -3, 0, "read bitmap", key1(kReads), DataCmd::kBitPos, "bitmap", "2.8.7",
       "Finds the first set (1) or clear (0) bit in a string", "key bit [start [end [BYTE|BIT]]]"},
      {"bitfield", -2, kW, "bitmap", key1(kReadsWrites), DataCmd::kBitField, "bitmap", "3.2.0",
       "Performs arbitrary bitfield integer operations on strings",
       "key [GET encoding offset | [OVERFLOW WRAP|SAT|FAIL] SET encoding offset value | "
       "[OVERFLOW WRAP|SAT|FAIL] INCRBY encoding offset increment ...]"},
      {"bitfield_ro", -2, kF, "read bitmap", key1(kReads), DataCmd::kBitFieldRo, "bitmap", "6.0.0",
       "Performs arbitrary read-only bitfield integer operations on strings",
       "key [GET encoding offset ...]"},
      {"bitop", -4, kW, "bitmap", KeySpec{2, -1, 1, 0, kReadsWrites, false}, DataCmd::kBitOp,
       "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result",
       "AND|OR|XOR|NOT destkey key [key ...]"},
      {"lcs", -3, 0, "read string", KeySpec{1, 2, 1, 0, kReads, false}, DataCmd::kLcs, "string",
       "7.0.0", "Finds the longest common substring",
       "key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]"},
      // Redis's own GCRA (redis/redis#14826): CL.THROTTLE's state, Redis's arguments
      {"gcra", -5, kWF | kD, "limiter", key1(kReadsWrites), cmd_gcra, "rate_limit", "8.8.0",
       "Rate limit via GCRA (Generic Cell Rate Algorithm)",
       "key max-burst tokens-per-period period [TOKENS count]"},
  };
  check_rows(t);
  return t;
}

}  // namespace

const std::vector<CommandSpec>& all_commands() {
  static const std::vector<CommandSpec> table = make_rows();
  return table;
}

const SubcommandSpec* subcommand_of(const CommandSpec& spec,
                                    const std::vector<std::string_view>& words) {
  if (spec.subcommands.empty() || words.size() < 2) return nullptr;
  for (const SubcommandSpec& sub : spec.subcommands)
    if (iequals(words[1], sub.name)) return &sub;
  return nullptr;
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

void run_command(const CommandSpec& spec, CommandContext& s, std::vector<std::string_view>& a) {
  if (spec.run.handler) return spec.run.handler(s, a);
  data_request(s, a, spec.run.data);
}

ScriptCallable script_callable(std::string_view name) {
  const CommandSpec* c = find_command(name);
  if (!c) return {};
  const bool allowed = c->run.data != DataCmd::kNone && !(c->flags & kNoScript);
  return {c->arity, allowed ? c->run.data : DataCmd::kNone};
}

const std::vector<NativeOp>& native_ops() {
  // The native door's ops the request core serves, and the command whose ACL rights each
  // needs: a user's rights on FG.TAKE are its rights on every take, and on reserve, commit
  // and cancel, which take in two steps. (PING and TOPOLOGY are the door's own, every
  // authenticated user's: a client cannot route without the topology.)
  static const std::vector<NativeOp> ops = {
      {pb::TAKE, Verb::kTake, "fg.take"},
      {pb::PEEK, Verb::kPeek, "fg.peek"},
      {pb::RESET, Verb::kReset, "fg.reset"},
      {pb::ACQUIRE, Verb::kAcquire, "fg.acquire"},
      {pb::RENEW, Verb::kRenew, "fg.renew"},
      {pb::RELEASE, Verb::kRelease, "fg.release"},
      {pb::COUNT, Verb::kCount, "fg.count"},
      {pb::HEARTBEAT, Verb::kHeartbeat, "fg.heartbeat"},
      {pb::RELEASE_ALL, Verb::kReleaseAll, "fg.releaseall"},
      {pb::RESERVE, Verb::kReserve, "fg.take"},
      {pb::COMMIT, Verb::kCommit, "fg.take"},
      {pb::CANCEL, Verb::kCancel, "fg.take"},
      {pb::ADJUST, Verb::kAdjust, "fg.adjust"},
  };
  return ops;
}

const NativeOp* find_native_op(int op) {
  for (const NativeOp& o : native_ops())
    if (o.op == op) return &o;
  return nullptr;
}

std::string command_id_name(uint16_t id) {
  const auto& all = all_commands();
  if (id < all.size()) return all[id].name;
  if (id == kRlsCommandId) return "rls.should_rate_limit";
  if (id == kRlqsCommandId) return "rlqs.slice";
  if (id >= kNativeCommandBase && id < kUnknownCommandId) {
    const auto op = static_cast<int>(id - kNativeCommandBase);
    // (the op's name in native.proto, lower case: "take", "release_all")
    if (op > 0 && pb::Op_IsValid(op)) return "native." + to_lower(pb::Op_Name(op));
    if (op == 0) return "native.unknown";
  }
  return "unknown";
}

}  // namespace fg
