// The Redis data commands a shard runs (data_ops.cpp), and how their keys sit in the
// arguments: what the request core needs to route them and split multi-key ones.
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <vector>

#include "key_slot.hpp"
#include "words.hpp"

namespace fg {

enum class DataCmd : uint8_t {
  kNone,
  // strings
  kGet,
  kSet,
  kSetNx,
  kSetEx,
  kPSetEx,
  kGetDel,
  kGetEx,
  kIncr,
  kIncrBy,
  kIncrByFloat,
  kDecr,
  kDecrBy,
  kMGet,
  kMSet,
  // keys and TTLs
  kDel,
  kUnlink,
  kExists,
  kType,
  kExpire,
  kPExpire,
  kExpireAt,
  kPExpireAt,
  kTtl,
  kPTtl,
  kExpireTime,
  kPExpireTime,
  kPersist,
  kKeys,
  kScan,
  // hashes
  kHGet,
  kHSet,
  kHSetNx,
  kHMSet,
  kHMGet,
  kHIncrBy,
  kHIncrByFloat,
  kHDel,
  kHGetAll,
  kHLen,
  kHExists,
  // sorted sets
  kZAdd,
  kZRem,
  kZCard,
  kZCount,
  kZScore,
  kZRange,
  kZRangeByScore,
  kZRemRangeByScore,
  kZRemRangeByRank,
  kZPopMin,
  // lists
  kLPush,
  kRPush,
  kLPop,
  kRPop,
  kLLen,
  kLRange,
  kLTrim,
  kLIndex,
  // transactions: WATCH asks the key's shard for the key's version (an integer token);
  // EXEC sends each watched key's token back as kWatchCheck (named "exec") before the
  // queued commands, and DISCARD, UNWATCH and a closing connection send kUnwatch.
  kWatch,
  kUnwatch,
  kWatchCheck,
  // the whole keyspace of the node (a cluster node: the slots it serves)
  kFlushAll,
  kFlushDb,
  // scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO (words: name, script or SHA, numkeys, keys,
  // args), run by the shard's ScriptHost on the shards its keys may lie on
  kEval,
  // (added after the first release: a forwarded op carries its number, so new ones go last)
  // strings
  kAppend,
  kStrlen,
  kGetRange,
  kSubstr,
  kSetRange,
  kGetSet,
  // hashes
  kHKeys,
  kHVals,
  kHStrlen,
  // keys
  kTouch,
  // lists
  kLPushX,
  kRPushX,
  kLSet,
  kLInsert,
  kLRem,
  kLPos,
  // sorted sets
  kZIncrBy,
  kZRevRange,
  kZRevRangeByScore,
  kZRank,
  kZRevRank,
  kZPopMax,
  kZMScore,
  // hashes
  kHScan,
  // sorted sets, by member (lexicographic ranges)
  kZRangeByLex,
  kZRevRangeByLex,
  kZLexCount,
  kZRemRangeByLex,
  // strings
  kIncrEx,
  // keys
  kObject,
  // sets
  kSAdd,
  kSRem,
  kSCard,
  kSIsMember,
  kSMIsMember,
  kSMembers,
  kSPop,
  kSRandMember,
  kSScan,
  // several keys as one op (Merge::kTogether: data_multi.cpp)
  kSMove,
  kSInter,
  kSInterCard,
  kSInterStore,
  kSUnion,
  kSUnionStore,
  kSDiff,
  kSDiffStore,
  kRename,
  kRenameNx,
  kCopy,
  kRPopLPush,
  kLMove,
  kMSetNx,
  // random picks, and the rest of the sorted-set family
  kHRandField,
  kZRandMember,
  kZScan,
  // several keys as one op (Merge::kTogether)
  kZUnionStore,
  kZInterStore,
  kZDiffStore,
  kZUnion,
  kZInter,
  kZDiff,
  kZInterCard,
  kZRangeStore,
  kZMPop,
  kLMPop,
  // the blocking pops: one attempt each (a client waits between attempts: its connection
  // retries when a key gets elements, api/server/resp_session.cpp)
  kBLPop,
  kBRPop,
  kBRPopLPush,
  kBLMove,
  kBLMPop,
  kBZPopMin,
  kBZPopMax,
  kBZMPop,
  // keys
  kRandomKey,
};
constexpr uint8_t kLastDataCmd = static_cast<uint8_t>(DataCmd::kRandomKey);

// How a command with several keys is answered when its keys are split over shards: each
// part runs the command on one key (with its value, for MSET), and the parts' replies add
// up (DEL, UNLINK, EXISTS), line up (MGET), or agree (MSET: OK).
// KEYS and SCAN run on every shard (their parts' keys line up; SCAN's under cursor 0),
// unless their pattern lies in one slot: then on that slot's shard, on its owner. FLUSHALL
// and FLUSHDB run on every shard (each part answers OK). RANDOMKEY asks every shard for one of
// its keys (kPick): each part answers how many keys it holds, a random draw and a key (or
// null), and one part's key is the reply, chosen in proportion to the parts' sizes.
// kTogether: not split at all. One op reads and writes all its keys (SINTERSTORE, RENAME,
// LMOVE): it runs on its first key's shard with the shards of its other keys held in the
// same step (standalone; in a cluster its keys share a slot, hence a shard).
enum class Merge : uint8_t { kNone, kSum, kConcat, kOk, kScan, kTogether, kPick };

struct DataCmdInfo {
  const char* name;          // lower case, as errors quote it (its registry row's name)
  uint8_t step;              // words per key from the key on: 1, or 2 for MSET's key-value pairs
  Merge merge;               // kNone: one key
  bool every_shard = false;  // reads every key a shard serves (KEYS, SCAN), no key argument
  bool writes = false;       // may change its key (with replication: sync, waits for a replica);
                             // its registry row says kWrite (checked when the table is made)
  // kTogether: how many keys from the first word on (0: every word, `step` apart, but the
  // last `trailing`: BLPOP key ... timeout), or where the count of its keys is (SINTERCARD
  // numkeys key ...: 1; the keys follow it), with `lead` keys before it (ZUNIONSTORE
  // destination numkeys key ...: 1; BLMPOP timeout numkeys key ...: 0).
  uint8_t keys = 0;
  uint8_t numkeys_at = 0;
  uint8_t lead = 0;
  uint8_t trailing = 0;

  // Whether `words` (the command's name included) leave a key without its value (an odd
  // MSET): Redis's arity error, checked before anything splits the keys apart.
  bool pairs_broken(size_t words) const { return step == 2 && words % 2 == 0; }
};

// Whether a command may grow what the keyspace holds — Redis's "denyoom" commands: past
// maxmemory, or past its user's share of bytes, it is refused before it runs (-OOM). What
// only reads, deletes, shrinks or moves is not (DEL, GETEX, SMOVE, RENAME).
inline bool grows_memory(DataCmd c) {
  switch (c) {
    case DataCmd::kSet:
    case DataCmd::kSetNx:
    case DataCmd::kSetEx:
    case DataCmd::kPSetEx:
    case DataCmd::kIncr:
    case DataCmd::kIncrBy:
    case DataCmd::kIncrByFloat:
    case DataCmd::kDecr:
    case DataCmd::kDecrBy:
    case DataCmd::kMSet:
    case DataCmd::kMSetNx:
    case DataCmd::kAppend:
    case DataCmd::kSetRange:
    case DataCmd::kGetSet:
    case DataCmd::kHSet:
    case DataCmd::kHSetNx:
    case DataCmd::kHMSet:
    case DataCmd::kHIncrBy:
    case DataCmd::kHIncrByFloat:
    case DataCmd::kSAdd:
    case DataCmd::kSInterStore:
    case DataCmd::kSUnionStore:
    case DataCmd::kSDiffStore:
    case DataCmd::kZAdd:
    case DataCmd::kZIncrBy:
    case DataCmd::kZUnionStore:
    case DataCmd::kZInterStore:
    case DataCmd::kZDiffStore:
    case DataCmd::kZRangeStore:
    case DataCmd::kLPush:
    case DataCmd::kRPush:
    case DataCmd::kLPushX:
    case DataCmd::kRPushX:
    case DataCmd::kLInsert:
    case DataCmd::kLSet:
    case DataCmd::kRPopLPush:
    case DataCmd::kLMove:
    case DataCmd::kBRPopLPush:
    case DataCmd::kBLMove:
    case DataCmd::kCopy:
      return true;
    default:
      return false;
  }
}

inline const DataCmdInfo& data_cmd_info(DataCmd c) {
  static constexpr DataCmdInfo kInfo[] = {
      {"", 1, Merge::kNone, false, false},
      {"get", 1, Merge::kNone, false, false},
      {"set", 1, Merge::kNone, false, true},
      {"setnx", 1, Merge::kNone, false, true},
      {"setex", 1, Merge::kNone, false, true},
      {"psetex", 1, Merge::kNone, false, true},
      {"getdel", 1, Merge::kNone, false, true},
      {"getex", 1, Merge::kNone, false, true},
      {"incr", 1, Merge::kNone, false, true},
      {"incrby", 1, Merge::kNone, false, true},
      {"incrbyfloat", 1, Merge::kNone, false, true},
      {"decr", 1, Merge::kNone, false, true},
      {"decrby", 1, Merge::kNone, false, true},
      {"mget", 1, Merge::kConcat, false, false},
      {"mset", 2, Merge::kOk, false, true},
      {"del", 1, Merge::kSum, false, true},
      {"unlink", 1, Merge::kSum, false, true},
      {"exists", 1, Merge::kSum, false, false},
      {"type", 1, Merge::kNone, false, false},
      {"expire", 1, Merge::kNone, false, true},
      {"pexpire", 1, Merge::kNone, false, true},
      {"expireat", 1, Merge::kNone, false, true},
      {"pexpireat", 1, Merge::kNone, false, true},
      {"ttl", 1, Merge::kNone, false, false},
      {"pttl", 1, Merge::kNone, false, false},
      {"expiretime", 1, Merge::kNone, false, false},
      {"pexpiretime", 1, Merge::kNone, false, false},
      {"persist", 1, Merge::kNone, false, true},
      {"keys", 1, Merge::kConcat, true, false},
      {"scan", 1, Merge::kScan, true, false},
      {"hget", 1, Merge::kNone, false, false},
      {"hset", 1, Merge::kNone, false, true},
      {"hsetnx", 1, Merge::kNone, false, true},
      {"hmset", 1, Merge::kNone, false, true},
      {"hmget", 1, Merge::kNone, false, false},
      {"hincrby", 1, Merge::kNone, false, true},
      {"hincrbyfloat", 1, Merge::kNone, false, true},
      {"hdel", 1, Merge::kNone, false, true},
      {"hgetall", 1, Merge::kNone, false, false},
      {"hlen", 1, Merge::kNone, false, false},
      {"hexists", 1, Merge::kNone, false, false},
      {"zadd", 1, Merge::kNone, false, true},
      {"zrem", 1, Merge::kNone, false, true},
      {"zcard", 1, Merge::kNone, false, false},
      {"zcount", 1, Merge::kNone, false, false},
      {"zscore", 1, Merge::kNone, false, false},
      {"zrange", 1, Merge::kNone, false, false},
      {"zrangebyscore", 1, Merge::kNone, false, false},
      {"zremrangebyscore", 1, Merge::kNone, false, true},
      {"zremrangebyrank", 1, Merge::kNone, false, true},
      {"zpopmin", 1, Merge::kNone, false, true},
      {"lpush", 1, Merge::kNone, false, true},
      {"rpush", 1, Merge::kNone, false, true},
      {"lpop", 1, Merge::kNone, false, true},
      {"rpop", 1, Merge::kNone, false, true},
      {"llen", 1, Merge::kNone, false, false},
      {"lrange", 1, Merge::kNone, false, false},
      {"ltrim", 1, Merge::kNone, false, true},
      {"lindex", 1, Merge::kNone, false, false},
      {"watch", 1, Merge::kConcat, false, false},
      {"unwatch", 1, Merge::kNone, false, false},
      {"exec", 1, Merge::kNone, false, false},
      {"flushall", 1, Merge::kOk, true, true},
      {"flushdb", 1, Merge::kOk, true, true},
      {"eval", 1, Merge::kNone, false, true},
      {"append", 1, Merge::kNone, false, true},
      {"strlen", 1, Merge::kNone, false, false},
      {"getrange", 1, Merge::kNone, false, false},
      {"substr", 1, Merge::kNone, false, false},
      {"setrange", 1, Merge::kNone, false, true},
      {"getset", 1, Merge::kNone, false, true},
      {"hkeys", 1, Merge::kNone, false, false},
      {"hvals", 1, Merge::kNone, false, false},
      {"hstrlen", 1, Merge::kNone, false, false},
      {"touch", 1, Merge::kSum, false, false},
      {"lpushx", 1, Merge::kNone, false, true},
      {"rpushx", 1, Merge::kNone, false, true},
      {"lset", 1, Merge::kNone, false, true},
      {"linsert", 1, Merge::kNone, false, true},
      {"lrem", 1, Merge::kNone, false, true},
      {"lpos", 1, Merge::kNone, false, false},
      {"zincrby", 1, Merge::kNone, false, true},
      {"zrevrange", 1, Merge::kNone, false, false},
      {"zrevrangebyscore", 1, Merge::kNone, false, false},
      {"zrank", 1, Merge::kNone, false, false},
      {"zrevrank", 1, Merge::kNone, false, false},
      {"zpopmax", 1, Merge::kNone, false, true},
      {"zmscore", 1, Merge::kNone, false, false},
      {"hscan", 1, Merge::kNone, false, false},
      {"zrangebylex", 1, Merge::kNone, false, false},
      {"zrevrangebylex", 1, Merge::kNone, false, false},
      {"zlexcount", 1, Merge::kNone, false, false},
      {"zremrangebylex", 1, Merge::kNone, false, true},
      {"increx", 1, Merge::kNone, false, true},
      {"object", 1, Merge::kNone, false, false},
      {"sadd", 1, Merge::kNone, false, true},
      {"srem", 1, Merge::kNone, false, true},
      {"scard", 1, Merge::kNone, false, false},
      {"sismember", 1, Merge::kNone, false, false},
      {"smismember", 1, Merge::kNone, false, false},
      {"smembers", 1, Merge::kNone, false, false},
      {"spop", 1, Merge::kNone, false, true},
      {"srandmember", 1, Merge::kNone, false, false},
      {"sscan", 1, Merge::kNone, false, false},
      {"smove", 1, Merge::kTogether, false, true, 2},
      {"sinter", 1, Merge::kTogether, false, false},
      {"sintercard", 1, Merge::kTogether, false, false, 0, 1},
      {"sinterstore", 1, Merge::kTogether, false, true},
      {"sunion", 1, Merge::kTogether, false, false},
      {"sunionstore", 1, Merge::kTogether, false, true},
      {"sdiff", 1, Merge::kTogether, false, false},
      {"sdiffstore", 1, Merge::kTogether, false, true},
      {"rename", 1, Merge::kTogether, false, true, 2},
      {"renamenx", 1, Merge::kTogether, false, true, 2},
      {"copy", 1, Merge::kTogether, false, true, 2},
      {"rpoplpush", 1, Merge::kTogether, false, true, 2},
      {"lmove", 1, Merge::kTogether, false, true, 2},
      {"msetnx", 2, Merge::kTogether, false, true},
      {"hrandfield", 1, Merge::kNone, false, false},
      {"zrandmember", 1, Merge::kNone, false, false},
      {"zscan", 1, Merge::kNone, false, false},
      {"zunionstore", 1, Merge::kTogether, false, true, 0, 2, 1},
      {"zinterstore", 1, Merge::kTogether, false, true, 0, 2, 1},
      {"zdiffstore", 1, Merge::kTogether, false, true, 0, 2, 1},
      {"zunion", 1, Merge::kTogether, false, false, 0, 1},
      {"zinter", 1, Merge::kTogether, false, false, 0, 1},
      {"zdiff", 1, Merge::kTogether, false, false, 0, 1},
      {"zintercard", 1, Merge::kTogether, false, false, 0, 1},
      {"zrangestore", 1, Merge::kTogether, false, true, 2},
      {"zmpop", 1, Merge::kTogether, false, true, 0, 1},
      {"lmpop", 1, Merge::kTogether, false, true, 0, 1},
      {"blpop", 1, Merge::kTogether, false, true, 0, 0, 0, 1},
      {"brpop", 1, Merge::kTogether, false, true, 0, 0, 0, 1},
      {"brpoplpush", 1, Merge::kTogether, false, true, 2},
      {"blmove", 1, Merge::kTogether, false, true, 2},
      {"blmpop", 1, Merge::kTogether, false, true, 0, 2},
      {"bzpopmin", 1, Merge::kTogether, false, true, 0, 0, 0, 1},
      {"bzpopmax", 1, Merge::kTogether, false, true, 0, 0, 0, 1},
      {"bzmpop", 1, Merge::kTogether, false, true, 0, 2},
      {"randomkey", 1, Merge::kPick, true, false},
  };
  static_assert(std::size(kInfo) == kLastDataCmd + 1);
  return kInfo[static_cast<uint8_t>(c)];
}

// The words that are keys of a kTogether command: those before its count of keys (a
// destination: ZUNIONSTORE's), [1, lead), then [first, end), `step` apart.
struct KeyWords {
  size_t lead = 1, first = 1, end = 1, step = 1;
  template <class F>
  void each(F&& f) const {
    for (size_t j = 1; j < lead; ++j) f(j);
    for (size_t j = first; j < end; j += step) f(j);
  }
  bool empty() const { return lead <= 1 && first >= end; }
  size_t front() const { return lead > 1 ? 1 : first; }  // (not empty)
};
inline KeyWords together_keys(DataCmd c, const std::vector<std::string_view>& a) {
  const DataCmdInfo& info = data_cmd_info(c);
  KeyWords k;
  k.step = info.step;
  if (info.numkeys_at > 0) {
    int64_t n = 0;
    k.lead = std::min<size_t>(1u + info.lead, a.size());
    k.first = k.end = info.numkeys_at + 1u;
    if (a.size() > info.numkeys_at && parse_int(a[info.numkeys_at], n) && n > 0 &&
        static_cast<uint64_t>(n) <= a.size() - k.first)
      k.end = k.first + static_cast<size_t>(n);
    return k;
  }
  k.end = info.keys > 0              ? std::min<size_t>(a.size(), 1u + info.keys)
          : a.size() > info.trailing ? a.size() - info.trailing
                                     : 1;
  return k;
}

// The keys a script declares: words [3, 3 + numkeys) of EVAL (numkeys checked already).
inline size_t script_keys_end(const std::vector<std::string_view>& a) {
  int64_t n = 0;
  if (a.size() < 3 || !parse_int(a[2], n) || n < 0 || static_cast<size_t>(n) > a.size() - 3)
    return 3;
  return 3 + static_cast<size_t>(n);
}

// The key a data command is routed by: its first key (a script: its first declared key); for KEYS
// and SCAN their pattern when it lies in one slot (pattern_in_one_slot), else none (every shard of
// this node).
inline std::string_view data_route_key(DataCmd c, const std::vector<std::string_view>& a) {
  if (c == DataCmd::kEval) return script_keys_end(a) > 3 ? a[3] : std::string_view();
  if (c == DataCmd::kObject)
    return a.size() > 2 ? a[2] : std::string_view();  // (its subcommand first)
  if (data_cmd_info(c).merge == Merge::kTogether) {
    const KeyWords k = together_keys(c, a);
    return k.empty() ? std::string_view() : a[k.front()];
  }
  if (!data_cmd_info(c).every_shard) return a[1];
  std::string_view pattern;
  if (c == DataCmd::kKeys) {
    pattern = a[1];
  } else if (c == DataCmd::kScan) {
    for (size_t j = 2; j + 1 < a.size(); j += 2)
      if (iequals(a[j], "match")) pattern = a[j + 1];
  }
  return pattern_in_one_slot(pattern) ? pattern : std::string_view();
}

}  // namespace fg
