// The data commands over several keys that cannot be split into one op per key (data_cmd.hpp's
// Merge::kTogether): set algebra (t_set.c's sinterGenericCommand, sunionDiffGenericCommand),
// SMOVE, RENAME, RENAMENX, COPY (db.c), RPOPLPUSH and LMOVE (t_list.c), MSETNX (t_string.c).
// One op runs on its first key's shard and reaches each other key's shard through the step
// the request core holds them in (Shard::holder_of), so the command is atomic: nothing else
// runs on any of those shards meanwhile. Arguments are checked before the keys, in Redis's
// order, and every key's type before anything changes.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "encoding_thresholds.hpp"
#include "errors.hpp"
#include "list_value.hpp"
#include "set_value.hpp"
#include "shard.hpp"
#include "words.hpp"

namespace fg {

namespace {

// A made set's members in the order redis-server would list them: ascending when they would
// make an intset (all integers, few enough), else as made.
void order_like_redis(std::vector<const std::string*>& members) {
  if (static_cast<int64_t>(members.size()) > set_intset_max()) return;
  std::vector<std::pair<int64_t, const std::string*>> ints;
  ints.reserve(members.size());
  for (const std::string* m : members) {
    int64_t v;
    if (!parse_int(*m, v)) return;
    ints.emplace_back(v, m);
  }
  std::sort(ints.begin(), ints.end());
  for (size_t i = 0; i < ints.size(); ++i) members[i] = ints[i].second;
}

}  // namespace

Shard* Shard::holder_of(std::string_view key) {
  if (pool_size_ <= 1) return this;
  const auto i = static_cast<uint16_t>(key_slot(key) % pool_size_);
  if (i == id_) return this;
  if (step_ && (step_->mask >> i & 1)) return step_->shards[i];
  return nullptr;
}

bool Shard::holds_keys(ShardOp& op) {
  const auto& a = *op.args;
  bool held = true;
  together_keys(op.data, a).each([&](size_t j) { held = held && holder_of(a[j]) != nullptr; });
  if (!held) op.reply->error(err::kKeysApart);
  return held;
}

// SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE. A missing key is an
// empty set; a key of another type is -WRONGTYPE, whichever place it has.
void Shard::set_algebra(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  const bool store =
      c == DataCmd::kSInterStore || c == DataCmd::kSUnionStore || c == DataCmd::kSDiffStore;
  size_t first = store ? 2 : 1, end = a.size();
  int64_t limit = 0;  // SINTERCARD: stop counting there (0: no limit)
  if (c == DataCmd::kSInterCard) {
    int64_t n;
    if (!parse_int(a[1], n) || n < 1) return r.error(err::kNumkeysPositive);
    if (static_cast<uint64_t>(n) > a.size() - 2) return r.error(err::kNumkeysTooMany);
    first = 2;
    end = 2 + static_cast<size_t>(n);
    for (size_t j = end; j < a.size(); ++j) {
      if (iequals(a[j], "limit") && j + 1 < a.size()) {
        if (!parse_int(a[++j], limit) || limit < 0) return r.error(err::kLimitNegative);
      } else {
        return r.error(err::kSyntax);
      }
    }
  }
  std::vector<const SetValue*> sets;
  for (size_t j = first; j < end; ++j) {
    Entry* e = holder_of(a[j])->lookup(a[j], KeyTable::hash(a[j]), now_ns);
    if (e && e->kind != Kind::kSet) {
      op.status = OpStatus::kWrongType;
      return;
    }
    sets.push_back(e ? e->state<SetValue*>() : nullptr);
  }
  std::vector<const std::string*> out;
  if (c == DataCmd::kSInter || c == DataCmd::kSInterCard || c == DataCmd::kSInterStore) {
    if (std::find(sets.begin(), sets.end(), nullptr) == sets.end()) {
      // The smallest set's members, each looked up in the others.
      std::stable_sort(sets.begin(), sets.end(),
                       [](const SetValue* x, const SetValue* y) { return x->size() < y->size(); });
      for (const std::string* m : set_members_in_order(*sets[0])) {
        bool all = true;
        for (size_t i = 1; i < sets.size() && all; ++i) all = sets[i]->contains(*m);
        if (!all) continue;
        out.push_back(m);
        if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
      }
    }
  } else if (c == DataCmd::kSUnion || c == DataCmd::kSUnionStore) {
    std::unordered_set<std::string_view> seen;
    for (const SetValue* s : sets) {
      if (!s) continue;
      for (const std::string* m : s->members)
        if (seen.insert(*m).second) out.push_back(m);
    }
    order_like_redis(out);
  } else if (sets[0]) {  // SDIFF, SDIFFSTORE: the first set without the others' members
    for (const std::string* m : sets[0]->members) {
      bool elsewhere = false;
      for (size_t i = 1; i < sets.size() && !elsewhere; ++i)
        elsewhere = sets[i] && sets[i]->contains(*m);
      if (!elsewhere) out.push_back(m);
    }
    order_like_redis(out);
  }
  if (c == DataCmd::kSInterCard) return r.integer(static_cast<int64_t>(out.size()));
  if (!store) {
    r.set(static_cast<int64_t>(out.size()));
    for (const std::string* m : out) r.bulk(*m);
    return;
  }
  if (out.size() > kMaxSetMembers) {
    return r.error(err::collection_full("a set", kMaxSetMembers, "members"));
  }
  std::vector<std::string> members;  // (copied first: the destination may be a source)
  members.reserve(out.size());
  for (const std::string* m : out) members.push_back(*m);
  Entry* e = fresh_destination(op, a[1], Kind::kSet, members.empty(), now_ns);
  if (!e) return;
  SetValue& s = *e->state<SetValue*>();
  const int64_t intset_max = set_intset_max();
  for (const std::string& m : members) s.add(m, intset_max);
  holder_of(a[1])->mark(e, a[1]);
  r.integer(static_cast<int64_t>(s.size()));
}

Entry* Shard::fresh_destination(ShardOp& op, std::string_view dst, Kind kind, bool empty,
                                int64_t now_ns) {
  Shard& d = *holder_of(dst);
  const uint64_t h = KeyTable::hash(dst);
  const bool had = d.lookup(dst, h, now_ns) != nullptr;
  if (empty) {
    if (had) {
      d.forget(dst, h);
      d.mark_gone(dst);
    }
    op.reply->integer(0);
    return nullptr;
  }
  if (!had && !d.room_for_key(op, now_ns)) return nullptr;
  if (!had) return d.insert_key(dst, h, kind, op.account);
  d.forget(dst, h);
  return d.table_.insert(dst, h, kind, op.account);
}

// SMOVE source destination member.
void Shard::set_move(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const std::string_view src = a[1], dst = a[2], m = a[3];
  Shard& s = *holder_of(src);
  Shard& d = *holder_of(dst);
  const uint64_t sh = KeyTable::hash(src), dh = KeyTable::hash(dst);
  Entry* se = s.lookup(src, sh, now_ns);
  Entry* de = d.lookup(dst, dh, now_ns);
  if (!se) return r.integer(0);
  if (se->kind != Kind::kSet || (de && de->kind != Kind::kSet)) {
    op.status = OpStatus::kWrongType;
    return;
  }
  SetValue& from = *se->state<SetValue*>();
  if (src == dst) return r.integer(from.contains(m) ? 1 : 0);
  if (!from.contains(m)) return r.integer(0);
  if (de && de->state<SetValue*>()->size() >= kMaxSetMembers &&
      !de->state<SetValue*>()->contains(m)) {
    return r.error(err::collection_full("a set", kMaxSetMembers, "members"));
  }
  if (!de && !d.room_for_key(op, now_ns)) return;  // (before anything changes)
  from.erase(m);
  const bool emptied = from.size() == 0;
  s.settle(se, src, sh, emptied);
  log_event(notify::kSet, "srem", src);  // (keyspace notifications, as Redis's SMOVE)
  if (emptied) log_event(notify::kGeneric, "del", src);
  if (!de) de = d.insert_key(dst, dh, Kind::kSet, op.account);
  if (de->state<SetValue*>()->add(m, set_intset_max())) {
    d.mark(de, dst);
    log_event(notify::kSet, "sadd", dst);
  }
  r.integer(1);
}

// RENAME, RENAMENX and COPY source destination [DB 0] [REPLACE]: the key's whole state, of any
// kind, with its TTL. (A concurrency key's leases belong to their holders: RENAME moves them,
// COPY refuses to double them.)
void Shard::rename(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  const std::string_view src = a[1], dst = a[2];
  bool replace = false;
  if (c == DataCmd::kCopy) {
    for (size_t j = 3; j < a.size(); ++j) {
      if (iequals(a[j], "replace")) {
        replace = true;
      } else if (iequals(a[j], "db") && j + 1 < a.size()) {
        int64_t db;
        if (!parse_int(a[++j], db) || db < INT32_MIN || db > INT32_MAX) {
          return r.error(err::kNotInteger);
        }
        if (db != 0) return r.error(err::kDbIndex);  // (one database, as a cluster has)
      } else {
        return r.error(err::kSyntax);
      }
    }
    if (src == dst) return r.error(err::kSameObject);
  }
  Shard& s = *holder_of(src);
  Shard& d = *holder_of(dst);
  const uint64_t sh = KeyTable::hash(src), dh = KeyTable::hash(dst);
  Entry* se = s.lookup(src, sh, now_ns);
  if (!se) return c == DataCmd::kCopy ? r.integer(0) : r.error(err::kNoSuchKey);
  if (src == dst) return c == DataCmd::kRename ? r.ok() : r.integer(0);
  if (c == DataCmd::kCopy && se->kind == Kind::kConcurrency) return r.error(err::kCopyLeases);
  const bool taken = d.lookup(dst, dh, now_ns) != nullptr;
  if (taken && (c == DataCmd::kRenameNx || (c == DataCmd::kCopy && !replace))) {
    return r.integer(0);
  }
  if (c == DataCmd::kCopy && !taken && !d.room_for_key(op, now_ns)) return;
  Entry* from = s.lookup(src, sh, now_ns);  // (again: a sweep may have run)
  EntrySnapshot moved = snapshot_of(*from);
  moved.key.assign(dst);
  // (a set keeps what redis-server would hold it as: a copy of an intset, or of a table)
  const bool table = from->kind == Kind::kSet && from->state<SetValue*>()->hashtable;
  if (c != DataCmd::kCopy) {
    s.forget(src, sh);
    s.mark_gone(src);
  }
  log_event(notify::kNew, "new", dst, false);  // (Redis's dbAdd, whatever was there)
  d.install_one(moved);                        // (replaces what the destination held)
  if (Entry* e = d.table_.find(dst, dh)) {
    if (table) e->state<SetValue*>()->hashtable = true;
    d.mark(e, dst);
  }
  if (c != DataCmd::kCopy) {  // (keyspace notifications; COPY's is its row's)
    log_event(notify::kGeneric, "rename_from", src);
    log_event(notify::kGeneric, "rename_to", dst);
  }
  return c == DataCmd::kRename ? r.ok() : r.integer(1);
}

// RPOPLPUSH source destination; LMOVE source destination LEFT|RIGHT LEFT|RIGHT (and one
// attempt of BRPOPLPUSH and BLMOVE, whose timeout follows).
void Shard::list_move(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  bool from_left = false, to_left = true;  // RPOPLPUSH
  if (op.data == DataCmd::kLMove || op.data == DataCmd::kBLMove) {
    auto side = [](std::string_view w, bool& left) {
      left = iequals(w, "left");
      return left || iequals(w, "right");
    };
    if (!side(a[3], from_left) || !side(a[4], to_left)) return r.error(err::kSyntax);
  }
  const std::string_view src = a[1], dst = a[2];
  Shard& s = *holder_of(src);
  Shard& d = *holder_of(dst);
  const uint64_t sh = KeyTable::hash(src), dh = KeyTable::hash(dst);
  Entry* se = s.lookup(src, sh, now_ns);
  if (!se) return r.null();
  if (se->kind != Kind::kList) {
    op.status = OpStatus::kWrongType;
    return;
  }
  Entry* de = src == dst ? se : d.lookup(dst, dh, now_ns);
  if (de && de->kind != Kind::kList) {
    op.status = OpStatus::kWrongType;
    return;
  }
  if (de && de != se && de->state<ListValue*>()->items.size() >= kMaxListElements) {
    return r.error(err::collection_full("a list", kMaxListElements, "elements"));
  }
  if (!de && !d.room_for_key(op, now_ns)) return;
  ListValue& from = *se->state<ListValue*>();
  std::string value = from.pop(from_left);
  if (!de) de = d.insert_key(dst, dh, Kind::kList, op.account);
  ListValue& to = *de->state<ListValue*>();
  if (to_left) {
    to.push_front(value);
  } else {
    to.push_back(value);
  }
  d.mark(de, dst);
  // (keyspace notifications, as Redis's LMOVE: the push, the pop, the source emptied)
  log_event(notify::kList, to_left ? "lpush" : "rpush", dst);
  log_event(notify::kList, from_left ? "lpop" : "rpop", src);
  if (from.items.empty()) {  // (never when source and destination are one list)
    s.forget(src, sh);
    s.mark_gone(src);
    log_event(notify::kGeneric, "del", src);
  } else if (se != de) {
    s.mark(se, src);
  }
  r.bulk(value);
}

// MSETNX key value [key value ...]: every key set, or none when any of them exists.
void Shard::mset_nx(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  for (size_t j = 1; j + 1 < a.size(); j += 2)
    if (holder_of(a[j])->lookup(a[j], KeyTable::hash(a[j]), now_ns)) return op.reply->integer(0);
  for (size_t j = 1; j + 1 < a.size(); j += 2) {
    Shard& s = *holder_of(a[j]);
    if (!s.overwrite_string(op, a[j], KeyTable::hash(a[j]), a[j + 1], false, now_ns)) return;
  }
  op.reply->integer(1);
}

}  // namespace fg
