// The Redis data commands a shard runs, each a row of one table (data_cmd.cpp): the function
// that runs it (data_*.cpp), what it does to its keys, and how they sit in the arguments —
// what the request core needs to route them and split multi-key ones.
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
  // streams (data_stream.cpp)
  kXAdd,
  kXLen,
  kXRange,
  kXRevRange,
  kXDel,
  kXTrim,
  kXSetId,
  kXRead,  // (several keys as one op: those after its STREAMS word)
  kXInfo,  // (its key after its subcommand, as OBJECT's)
  // bits and LCS (data_bits.cpp)
  kSetBit,
  kGetBit,
  kBitCount,
  kBitPos,
  kBitField,
  kBitFieldRo,
  kBitOp,  // (several keys as one op: the destination and the sources after it)
  kLcs,
  // streams' consumer groups (data_stream_groups.cpp)
  kXGroup,      // (its key after its subcommand, as OBJECT's)
  kXReadGroup,  // (several keys as one op: those after its STREAMS word)
  kXAck,
  kXPending,
  kXClaim,
  kXAutoClaim,
};
constexpr uint8_t kLastDataCmd = static_cast<uint8_t>(DataCmd::kXAutoClaim);

// How a command with several keys is answered when its keys are split over shards: each
// part runs the command on one key (with its value, for MSET), and the parts' replies add
// up (DEL, UNLINK, EXISTS), line up (MGET), or agree (MSET: OK).
// KEYS runs on every shard (its parts' keys line up) and SCAN on the one shard its cursor
// names (kScan: the request core makes the node's cursor of the shard's), unless their
// pattern lies in one slot: then on that slot's shard, on its owner. FLUSHALL
// and FLUSHDB run on every shard (each part answers OK). RANDOMKEY asks every shard for one of
// its keys (kPick): each part answers how many keys it holds, a random draw and a key (or
// null), and one part's key is the reply, chosen in proportion to the parts' sizes.
// kTogether: not split at all. One op reads and writes all its keys (SINTERSTORE, RENAME,
// LMOVE): it runs on its first key's shard with the shards of its other keys held in the
// same step (standalone; in a cluster its keys share a slot, hence a shard).
enum class Merge : uint8_t { kNone, kSum, kConcat, kOk, kScan, kTogether, kPick };

class Shard;
struct ShardOp;
// The function of the shard that runs a data op (data_*.cpp).
using DataRun = void (Shard::*)(ShardOp&, int64_t now_ns);

// What a data op may do to its keys. kWritesKeys: may change them (with replication: sync,
// waits for a replica; its registry row says kWrite). kGrowsKeys: writes, and may grow what
// the keyspace holds — Redis's "denyoom" commands: past maxmemory, or past its user's share of
// bytes, it is refused before it runs (-OOM). What only reads, deletes, shrinks or moves only
// writes (DEL, GETEX, SMOVE, RENAME).
enum DataAccess : uint8_t { kReadsKeys, kWritesKeys, kGrowsKeys };

// Where a data op's keys are in its words, and how its parts answer when they are split.
struct DataKeys {
  uint8_t step = 1;            // words per key from the key on: 1, or 2 for MSET's key-value pairs
  Merge merge = Merge::kNone;  // kNone: one key
  bool every_shard = false;    // reads every key a shard serves (KEYS, SCAN), no key argument
  // kTogether: how many keys from the first word on (0: every word, `step` apart, but the
  // last `trailing`: BLPOP key ... timeout), or where the count of its keys is (SINTERCARD
  // numkeys key ...: 1; the keys follow it), with `lead` keys before it (ZUNIONSTORE
  // destination numkeys key ...: 1; BLMPOP timeout numkeys key ...: 0).
  uint8_t keys = 0;
  uint8_t numkeys_at = 0;
  uint8_t lead = 0;
  uint8_t trailing = 0;
  bool after_streams = false;  // kTogether: the first half of the words after STREAMS (XREAD)
  uint8_t from = 1;            // kTogether with every word: the first key's word (BITOP's 2)
};
// One key, the first word (OBJECT's: the second, after its subcommand).
constexpr DataKeys one_key() { return {}; }
// Every word from the first on, `step` apart, split by key; the parts answer by `merge`.
constexpr DataKeys each_key(Merge merge, uint8_t step = 1) { return {step, merge}; }
// No key: every key a shard serves (KEYS, SCAN, FLUSHALL, RANDOMKEY).
constexpr DataKeys every_key(Merge merge) { return {1, merge, true}; }
// Not split (kTogether): the first `keys` words (0: every word, `step` apart).
constexpr DataKeys keys_together(uint8_t keys = 0, uint8_t step = 1) {
  return {step, Merge::kTogether, false, keys};
}
// Not split: every word from word `from` on (BITOP op destkey key ...).
constexpr DataKeys keys_together_from(uint8_t from) {
  return {1, Merge::kTogether, false, 0, 0, 0, 0, false, from};
}
// Not split: every word but the last (BLPOP key ... timeout).
constexpr DataKeys all_keys_but_last() { return {1, Merge::kTogether, false, 0, 0, 0, 1}; }
// Not split: the first half of the words after the word STREAMS (XREAD ... STREAMS key ... id ...).
constexpr DataKeys stream_keys() { return {1, Merge::kTogether, false, 0, 0, 0, 0, true}; }
// Not split: a count at word `at`, that many keys after it, `lead` keys before it.
constexpr DataKeys counted_together(uint8_t at, uint8_t lead = 0) {
  return {1, Merge::kTogether, false, 0, at, lead};
}

// A data op's row: everything the request core, the registry and the shard know of it.
struct DataCmdInfo : DataKeys {
  constexpr DataCmdInfo(DataCmd op, const char* name, DataRun run, DataAccess access, DataKeys keys)
      : DataKeys(keys),
        op(op),
        name(name),
        run(run),
        writes(access != kReadsKeys),
        grows(access == kGrowsKeys) {}
  DataCmd op;
  const char* name;  // lower case, as errors quote it (its registry row's name)
  DataRun run;
  bool writes;
  bool grows;

  // Whether `words` (the command's name included) leave a key without its value (an odd
  // MSET): Redis's arity error, checked before anything splits the keys apart.
  bool pairs_broken(size_t words) const { return step == 2 && words % 2 == 0; }
};

// The table of data ops, one row each, in DataCmd's order (data_cmd.cpp; a friend of Shard,
// whose functions it names).
struct DataCmdTable {
  static const DataCmdInfo rows[kLastDataCmd + 1];
};
inline const DataCmdInfo& data_cmd_info(DataCmd c) {
  return DataCmdTable::rows[static_cast<uint8_t>(c)];
}
inline bool grows_memory(DataCmd c) { return data_cmd_info(c).grows; }

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
  if (info.after_streams) {
    const auto [first, end] = keys_after_streams(a);
    k.first = first;
    k.end = end;
    return k;
  }
  if (info.numkeys_at > 0) {
    int64_t n = 0;
    k.lead = std::min<size_t>(1u + info.lead, a.size());
    k.first = k.end = info.numkeys_at + 1u;
    if (a.size() > info.numkeys_at && parse_int(a[info.numkeys_at], n) && n > 0 &&
        static_cast<uint64_t>(n) <= a.size() - k.first)
      k.end = k.first + static_cast<size_t>(n);
    return k;
  }
  k.first = info.from;
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

// Whether its key is its third word, after a subcommand (OBJECT ENCODING key, XINFO STREAM key,
// XGROUP CREATE key ...).
inline bool key_after_subcommand(DataCmd c) {
  return c == DataCmd::kObject || c == DataCmd::kXInfo || c == DataCmd::kXGroup;
}

// The key a data command is routed by: its first key (a script: its first declared key); for KEYS
// and SCAN their pattern when it lies in one slot (pattern_in_one_slot), else none (every shard of
// this node).
inline std::string_view data_route_key(DataCmd c, const std::vector<std::string_view>& a) {
  if (c == DataCmd::kEval) return script_keys_end(a) > 3 ? a[3] : std::string_view();
  if (key_after_subcommand(c))
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

// Calls f(j) for each word j of `a` (its name first) the request core takes as a key of `c`:
// those it checks, routes by and splits by. The registry's key specs must name the same words
// (checked when its table is made: api/commands/command_table.cpp).
template <class F>
void each_data_key(DataCmd c, const std::vector<std::string_view>& a, F&& f) {
  const DataCmdInfo& info = data_cmd_info(c);
  if (c == DataCmd::kEval) {
    for (size_t j = 3; j < script_keys_end(a); ++j) f(j);
  } else if (key_after_subcommand(c)) {
    if (a.size() > 2) f(size_t{2});
  } else if (info.merge == Merge::kTogether) {
    together_keys(c, a).each(f);
  } else if (!info.every_shard) {
    const size_t end = info.merge == Merge::kNone ? std::min<size_t>(2, a.size()) : a.size();
    for (size_t j = 1; j < end; j += info.step) f(j);
  }
}

}  // namespace fg
