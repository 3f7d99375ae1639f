// Sets, as Redis's t_set.c: SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SPOP SRANDMEMBER
// SSCAN on one key, each checking its arguments and the key in Redis's order. (The commands
// over several keys, SINTER and its kin and SMOVE, are in data_multi.cpp.)
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "encoding_thresholds.hpp"
#include "entry_snapshot.hpp"
#include "errors.hpp"
#include "hash_value.hpp"
#include "scan_args.hpp"
#include "set_value.hpp"
#include "shard.hpp"
#include "value_kinds.hpp"
#include "words.hpp"
#include "zset_value.hpp"

namespace fg {

namespace {

// The most elements SRANDMEMBER with a negative count (members may repeat) answers in one
// reply: each is held in memory before it is sent, so a count of a billion must not be.
constexpr int64_t kMaxRandomReply = 1'000'000;
// What one reply of repeated random picks (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER with a
// negative count) may hold: each pick copies its element, so a small set can be made to
// answer gigabytes. Past it (or past what the connection's replies may still take under
// maxmemory-clients) the reply is refused, not sent.
constexpr int64_t kMaxRandomReplyBytes = 64 << 20;

// Whether `bytes` more fit in a random reply (within kMaxRandomReplyBytes and the op's reply
// room); else the reply becomes the error.
bool random_reply_fits(ShardOp& op, int64_t bytes) {
  int64_t most = kMaxRandomReplyBytes;
  if (op.reply_room) most = std::min(most, op.reply_room->load(std::memory_order_relaxed));
  if (bytes <= most) return true;
  op.reply->clear();
  op.reply->error(err::kRandomReplyTooBig);
  return false;
}

}  // namespace

int64_t set_intset_max() {
  return encoding_thresholds().set_intset.load(std::memory_order_relaxed);
}

std::vector<const std::string*> set_members_in_order(const SetValue& s) {
  std::vector<const std::string*> out(s.members.begin(), s.members.end());
  if (!s.hashtable) {  // an intset lists its integers in ascending order
    std::vector<std::pair<int64_t, const std::string*>> ints;
    ints.reserve(out.size());
    for (const std::string* m : out) {
      int64_t v = 0;
      parse_int(*m, v);
      ints.emplace_back(v, m);
    }
    std::sort(ints.begin(), ints.end());
    for (size_t i = 0; i < ints.size(); ++i) out[i] = ints[i].second;
  }
  return out;
}

void Shard::data_sets(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  switch (c) {
    case DataCmd::kSAdd: {
      Entry* e = typed(op, Kind::kSet, true, now_ns);
      if (!e) return;
      SetValue& s = *e->state<SetValue*>();
      if (s.size() + (a.size() - 2) > kMaxSetMembers) {
        size_t fresh = 0;  // (exactly: members already there do not count)
        for (size_t j = 2; j < a.size(); ++j) fresh += s.contains(a[j]) ? 0 : 1;
        if (s.size() + fresh > kMaxSetMembers) {
          if (s.size() == 0) table_.erase(op.key, op.hash);
          return r.error(err::collection_full("a set", kMaxSetMembers, "members"));
        }
      }
      const int64_t intset_max = set_intset_max();
      int64_t added = 0;
      for (size_t j = 2; j < a.size(); ++j) added += s.add(a[j], intset_max) ? 1 : 0;
      if (added > 0) mark(e, op.key);
      return r.integer(added);
    }
    default:
      break;
  }
  Entry* e = typed(op, Kind::kSet, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  SetValue* s = e ? e->state<SetValue*>() : nullptr;
  switch (c) {
    case DataCmd::kSRem: {
      int64_t n = 0;
      if (s) {
        for (size_t j = 2; j < a.size() && s->size() > 0; ++j) n += s->erase(a[j]) ? 1 : 0;
        if (n > 0) settle(e, op.key, op.hash, s->size() == 0);
      }
      return r.integer(n);
    }
    case DataCmd::kSCard:
      return r.integer(s ? static_cast<int64_t>(s->size()) : 0);
    case DataCmd::kSIsMember:
      return r.integer(s && s->contains(a[2]) ? 1 : 0);
    case DataCmd::kSMIsMember:
      r.array(static_cast<int64_t>(a.size() - 2));
      for (size_t j = 2; j < a.size(); ++j) r.integer(s && s->contains(a[j]) ? 1 : 0);
      return;
    default: {  // SMEMBERS
      if (!s) return r.set(0);
      r.set(static_cast<int64_t>(s->size()));
      for (const std::string* m : set_members_in_order(*s)) r.bulk(*m);
      return;
    }
  }
}

// SPOP key [count] and SRANDMEMBER key [count] (spopWithCountCommand,
// srandmemberWithCountCommand): without a count one member or nil; SPOP's count (at least
// 0) takes that many distinct members out, as a set; SRANDMEMBER's answers that many
// distinct ones, or with a negative count that many picks that may repeat, as an array.
void Shard::set_random(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const bool pop = op.data == DataCmd::kSPop;
  if (a.size() > 3) return r.error(err::kSyntax);
  const bool counted = a.size() == 3;
  int64_t count = 1;
  bool distinct = true;
  if (counted) {
    // (SPOP's count: any bad one is "must be positive", as getPositiveLongFromObjectOrReply says)
    if (pop && (!parse_int(a[2], count) || count < 0)) return r.error(err::kNotPositive);
    if (!parse_int(a[2], count)) return r.error(err::kNotInteger);
    if (!pop && count == INT64_MIN) return r.error(err::kCountOutOfRange);
    if (count < 0) {
      count = -count;
      distinct = false;
      if (count > kMaxRandomReply) {
        return r.error(err::collection_full("a random reply", kMaxRandomReply, "elements"));
      }
    }
  }
  Entry* e = typed(op, Kind::kSet, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  auto empty = [&] {
    if (!counted) return r.null();
    return pop ? r.set(0) : r.array(0);
  };
  if (!e || count == 0) return empty();
  SetValue& s = *e->state<SetValue*>();
  const auto size = static_cast<int64_t>(s.size());
  if (!counted) {
    const auto i = static_cast<uint32_t>(next_random() % s.size());
    r.bulk(*s.members[i]);
    if (pop) {
      s.erase_at(i);
      settle(e, op.key, op.hash, s.size() == 0);
    }
    return;
  }
  if (!distinct) {  // (SRANDMEMBER only)
    r.array(count);
    int64_t bytes = 0;
    for (int64_t k = 0; k < count; ++k) {
      const std::string& m = *s.members[next_random() % s.size()];
      bytes += static_cast<int64_t>(m.size()) + 16;
      if (!random_reply_fits(op, bytes)) return;
      r.bulk(m);
    }
    return;
  }
  if (count >= size) {  // every member
    const std::vector<const std::string*> all = set_members_in_order(s);
    if (pop) {
      r.set(size);
    } else {
      r.array(size);
    }
    for (const std::string* m : all) r.bulk(*m);
    if (pop) {
      forget(op.key, op.hash);
      mark_gone(op.key);
    }
    return;
  }
  if (pop) {
    r.set(count);
    for (int64_t k = 0; k < count; ++k) {
      const auto i = static_cast<uint32_t>(next_random() % s.size());
      r.bulk(*s.members[i]);
      s.erase_at(i);
    }
    return mark(e, op.key);
  }
  r.array(count);
  for (uint32_t i : random_places(s.size(), count, true)) r.bulk(*s.members[i]);
}

std::vector<uint32_t> Shard::random_places(size_t size, int64_t count, bool distinct) {
  std::vector<uint32_t> out;
  if (!distinct) {
    out.reserve(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) out.push_back(static_cast<uint32_t>(next_random() % size));
    return out;
  }
  out.resize(size);
  for (uint32_t i = 0; i < size; ++i) out[i] = i;
  if (static_cast<uint64_t>(count) >= size) return out;
  // The first `count` places of a partial shuffle.
  for (size_t k = 0; k < static_cast<size_t>(count); ++k)
    std::swap(out[k], out[k + next_random() % (size - k)]);
  out.resize(static_cast<size_t>(count));
  return out;
}

// HRANDFIELD key [count [WITHVALUES]] and ZRANDMEMBER key [count [WITHSCORES]]
// (t_hash.c's hrandfieldCommand, t_zset.c's zrandmemberCommand): without a count one field
// or nil; a count answers that many distinct ones (all, in order, when it reaches the size),
// a negative one that many picks that may repeat; with values RESP2 lists them flat, RESP3
// as a pair each.
void Shard::random_fields(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const bool hash = op.data == DataCmd::kHRandField;
  int64_t count = 1;
  bool counted = a.size() >= 3, distinct = true, values = false;
  if (counted) {
    if (!parse_int(a[2], count)) return r.error(err::kNotInteger);
    if (count == INT64_MIN) return r.error(err::kCountOutOfRange);
    if (a.size() > 4 || (a.size() == 4 && !iequals(a[3], hash ? "withvalues" : "withscores"))) {
      return r.error(err::kSyntax);
    }
    values = a.size() == 4;
    if (values && (count < -INT64_MAX / 2 || count > INT64_MAX / 2)) {
      return r.error(err::kValueOutOfRange);
    }
    if (count < 0) {
      count = -count;
      distinct = false;
      if (count > kMaxRandomReply) {
        return r.error(err::collection_full("a random reply", kMaxRandomReply, "elements"));
      }
    }
  }
  Entry* e = typed(op, hash ? Kind::kHash : Kind::kZSet, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  if (!e) return counted ? r.array(0) : r.null();
  if (count == 0) return r.array(0);
  // The fields (members by score) in order, and each one's value.
  std::vector<std::pair<const std::string*, const std::string*>> fields;
  std::vector<std::pair<const std::string*, double>> members;
  if (hash) {
    for (const auto& [f, v] : e->state<HashValue*>()->fields) fields.emplace_back(&f, &v);
  } else {
    for (const auto& [s, m] : e->state<ZSetValue*>()->by_score) members.emplace_back(&m, s);
  }
  const size_t size = hash ? fields.size() : members.size();
  const std::vector<uint32_t> places = random_places(size, count, distinct);
  if (!counted) return r.bulk(hash ? *fields[places[0]].first : *members[places[0]].first);
  const auto n = static_cast<int64_t>(places.size());
  r.array(values && !op.resp3 ? 2 * n : n);
  int64_t bytes = 0;
  for (uint32_t i : places) {
    if (values && op.resp3) r.array(2);
    const std::string& picked = hash ? *fields[i].first : *members[i].first;
    bytes +=
        static_cast<int64_t>(picked.size() + (values && hash ? fields[i].second->size() : 0)) + 32;
    if (!distinct && !random_reply_fits(op, bytes)) return;
    r.bulk(picked);
    if (!values) continue;
    if (hash) {
      r.bulk(*fields[i].second);
    } else {
      r.dbl(members[i].second);
    }
  }
}

// SSCAN key cursor [MATCH pattern] [COUNT n]: a small set whole, under cursor 0 (an intset's
// members in order, as Redis answers); a larger one about COUNT members a call, in the order
// of their hashes (scan_args.hpp).
void Shard::set_scan(ShardOp& op, int64_t now_ns) {
  DataReply& r = *op.reply;
  Entry* e = nullptr;
  uint64_t cursor = 0;
  ScanArgs args;
  if (!scan_key(op, Kind::kSet, now_ns, e, cursor, args)) return;
  const SetValue& set = *e->state<SetValue*>();
  const ScanFilter matches(args.pattern);
  std::vector<std::string_view> hits;
  uint64_t next = 0;
  if (set.size() <= kScanWhole) {
    for (const std::string* m : set_members_in_order(set))
      if (matches(*m)) hits.push_back(*m);
  } else {
    auto each = [&](auto&& visit) {
      for (const std::string* m : set.members) visit(*m);
    };
    next = scan_by_hash(each, cursor, args.count, [&](std::string_view m) {
      if (matches(m)) hits.push_back(m);
    });
  }
  r.array(2);
  r.bulk(std::to_string(next));
  r.array(static_cast<int64_t>(hits.size()));
  for (std::string_view m : hits) r.bulk(m);
}

// Sets' row of the kinds table (value_kinds.hpp).
namespace {
SetValue& set_of(const Entry& e) { return *e.state<SetValue*>(); }
void set_make(Entry& e) { e.state<SetValue*>() = new SetValue(); }
void set_free(Entry& e) { delete e.state<SetValue*>(); }
bool set_idle(const Entry& e, int64_t) { return set_of(e).size() == 0; }
uint64_t set_bytes(const Entry& e) { return sizeof(SetValue) + set_of(e).bytes; }
int64_t set_usage(Entry& e) {
  int64_t n = 0;
  for (const std::string* m : set_of(e).members) n += 48 + 32 + static_cast<int64_t>(m->size());
  return n;
}
const char* set_encoding(Entry& e) { return set_of(e).hashtable ? "hashtable" : "intset"; }
void set_snapshot(Entry& e, EntrySnapshot& s) {
  const SetValue& set = set_of(e);
  s.list.reserve(set.size());
  for (const std::string* m : set.members) s.list.push_back(*m);
}
void set_restore(Entry& e, const EntrySnapshot& s) {
  SetValue& set = set_of(e);
  set = SetValue();
  const int64_t intset_max = encoding_thresholds().set_intset.load(std::memory_order_relaxed);
  for (const std::string& m : s.list) set.add(m, intset_max);
}
// The union: a member added on either side of a partition stays (one removed on one side
// only comes back, the price of never losing an add).
bool set_merge(EntrySnapshot& into, const EntrySnapshot& from) {
  std::unordered_set<std::string_view> have(into.list.begin(), into.list.end());
  std::vector<std::string> fresh;
  for (const std::string& m : from.list)
    if (!have.count(m)) fresh.push_back(m);
  if (fresh.empty()) return false;
  for (std::string& m : fresh) into.list.push_back(std::move(m));
  return true;
}
}  // namespace

const KindRow kSetKind = {
    Kind::kSet,   sizeof(SetValue*), 0,          false,      &set_make,     &set_free,
    &set_idle,    nullptr,           &set_bytes, &set_usage, &set_encoding, &set_snapshot,
    &set_restore, &set_merge,        nullptr,    nullptr,    nullptr};

}  // namespace fg
