// The hash commands on a shard's keys, as Redis's t_hash.c: HGET HSET HSETNX HMSET HMGET
// HINCRBY HINCRBYFLOAT HDEL HGETALL HKEYS HVALS HLEN HEXISTS HSTRLEN, and HSCAN. (HRANDFIELD
// draws as SRANDMEMBER does: data_set.cpp.)
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <unordered_set>

#include "encoding_thresholds.hpp"
#include "entry_snapshot.hpp"
#include "errors.hpp"
#include "glob.hpp"
#include "hash_value.hpp"
#include "merge.hpp"
#include "scan_args.hpp"
#include "shard.hpp"
#include "value_kinds.hpp"
#include "words.hpp"

namespace fg {

// HSCAN key cursor [MATCH pattern] [COUNT n]: the cursor, then the key, then the options
// (db.c's hscanCommand and scanGenericCommand). A small hash whole, under cursor 0, in the
// order its fields were set (as Redis answers for a listpack); a larger one about COUNT fields
// a call, in the order of their hashes (scan_args.hpp).
void Shard::hash_scan(ShardOp& op, int64_t now_ns) {
  DataReply& r = *op.reply;
  Entry* e = nullptr;
  uint64_t cursor = 0;
  ScanArgs args;
  if (!scan_key(op, Kind::kHash, now_ns, e, cursor, args)) return;
  const HashValue& h = *e->state<HashValue*>();
  const ScanFilter matches(args.pattern);
  std::vector<const std::pair<std::string, std::string>*> hits;
  uint64_t next = 0;
  if (h.fields.size() <= kScanWhole) {
    for (const auto& fv : h.fields)
      if (matches(fv.first)) hits.push_back(&fv);
  } else {
    // (the fields by name, for the order of their hashes; then each found again by name)
    auto each = [&](auto&& visit) {
      for (const auto& fv : h.fields) visit(std::string_view(fv.first));
    };
    std::unordered_set<const char*> picked;  // (by where each name's bytes are)
    next = scan_by_hash(each, cursor, args.count, [&](std::string_view f) {
      if (matches(f)) picked.insert(f.data());
    });
    for (const auto& fv : h.fields)
      if (picked.count(fv.first.data())) hits.push_back(&fv);
  }
  r.array(2);
  r.bulk(std::to_string(next));
  r.array(static_cast<int64_t>(2 * hits.size()));
  for (const auto* fv : hits) {
    r.bulk(fv->first);
    r.bulk(fv->second);
  }
}

// HGET HSET HSETNX HMSET HMGET HINCRBY HINCRBYFLOAT HDEL HGETALL HKEYS HVALS HLEN HEXISTS
// HSTRLEN, as t_hash.c.
void Shard::data_hash(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  // Writes first: their arguments are checked before the key is looked at.
  if (c == DataCmd::kHSet || c == DataCmd::kHMSet || c == DataCmd::kHSetNx ||
      c == DataCmd::kHIncrBy || c == DataCmd::kHIncrByFloat) {
    int64_t by = 0;
    long double fby = 0;
    if ((c == DataCmd::kHSet || c == DataCmd::kHMSet) && a.size() % 2 == 1) {
      return r.error(err::wrong_arity(data_cmd_info(c).name));
    }
    if (c == DataCmd::kHIncrBy && !parse_int(a[3], by)) return r.error(err::kNotInteger);
    if (c == DataCmd::kHIncrByFloat) {
      if (!parse_long_double(a[3], fby)) return r.error(err::kNotFloat);
      if (std::isnan(fby) || std::isinf(fby)) return r.error(err::kNanOrInfinityValue);
    }
    Entry* e = typed(op, Kind::kHash, true, now_ns);
    if (!e) return;
    HashValue& h = *e->state<HashValue*>();
    std::string* cur = c == DataCmd::kHSet || c == DataCmd::kHMSet ? nullptr : h.find(a[2]);
    if (!cur && h.fields.size() + (a.size() - 2) / 2 > kMaxHashFields) {
      size_t fresh = 0;  // (exactly: fields already there do not count)
      for (size_t j = 2; j + 1 < a.size(); j += 2) fresh += h.find(a[j]) ? 0 : 1;
      if (h.fields.size() + fresh > kMaxHashFields) {
        if (h.fields.empty()) table_.erase(op.key, op.hash);
        return r.error(err::collection_full("a hash", kMaxHashFields, "fields"));
      }
    }
    switch (c) {
      case DataCmd::kHSet:
      case DataCmd::kHMSet: {
        int64_t created = 0;
        for (size_t j = 2; j + 1 < a.size(); j += 2) created += h.set(a[j], a[j + 1]) ? 1 : 0;
        mark(e, op.key);
        return c == DataCmd::kHSet ? r.integer(created) : r.ok();
      }
      case DataCmd::kHSetNx:
        if (cur) return r.integer(0);
        h.set(a[2], a[3]);
        mark(e, op.key);
        return r.integer(1);
      case DataCmd::kHIncrBy: {
        int64_t value = 0;
        if (cur && !parse_int(*cur, value)) return r.error(err::kHashNotInteger);
        if ((by < 0 && value < 0 && by < LLONG_MIN - value) ||
            (by > 0 && value > 0 && by > LLONG_MAX - value)) {
          return r.error(err::kIncrOverflow);
        }
        value += by;
        h.set(a[2], std::to_string(value));
        mark(e, op.key);
        return r.integer(value);
      }
      default: {  // HINCRBYFLOAT
        long double value = 0;
        if (cur && !parse_long_double(*cur, value)) return r.error(err::kHashNotFloat);
        value += fby;
        if (std::isnan(value) || std::isinf(value)) return r.error(err::kNanOrInfinity);
        const std::string text = format_long_double(value);
        h.set(a[2], text);
        mark(e, op.key);
        return r.bulk(text);
      }
    }
  }
  Entry* e = typed(op, Kind::kHash, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  HashValue* h = e ? e->state<HashValue*>() : nullptr;
  switch (c) {
    case DataCmd::kHGet: {
      const std::string* v = h ? h->find(a[2]) : nullptr;
      return v ? r.bulk(*v) : r.null();
    }
    case DataCmd::kHMGet:
      r.array(static_cast<int64_t>(a.size() - 2));
      for (size_t j = 2; j < a.size(); ++j) {
        const std::string* v = h ? h->find(a[j]) : nullptr;
        if (v) {
          r.bulk(*v);
        } else {
          r.null();
        }
      }
      return;
    case DataCmd::kHDel: {
      int64_t n = 0;
      if (h) {
        for (size_t j = 2; j < a.size(); ++j) n += h->erase(a[j]) ? 1 : 0;
        if (h->fields.empty()) {
          forget(op.key, op.hash);
          mark_gone(op.key);
        } else if (n > 0) {
          mark(e, op.key);
        }
      }
      return r.integer(n);
    }
    case DataCmd::kHGetAll:
      if (!h) return r.map(0);
      r.map(static_cast<int64_t>(h->fields.size()));
      for (const auto& [f, v] : h->fields) {
        r.bulk(f);
        r.bulk(v);
      }
      return;
    case DataCmd::kHKeys:
    case DataCmd::kHVals: {
      if (!h) return r.array(0);
      r.array(static_cast<int64_t>(h->fields.size()));
      const bool keys = c == DataCmd::kHKeys;
      for (const auto& [f, v] : h->fields) r.bulk(keys ? f : v);
      return;
    }
    case DataCmd::kHStrlen: {
      const std::string* v = h ? h->find(a[2]) : nullptr;
      return r.integer(v ? static_cast<int64_t>(v->size()) : 0);
    }
    case DataCmd::kHLen:
      return r.integer(h ? static_cast<int64_t>(h->fields.size()) : 0);
    default:  // HEXISTS
      return r.integer(h && h->find(a[2]) ? 1 : 0);
  }
}

// Hashes' row of the kinds table (value_kinds.hpp).
namespace {
HashValue& hash_of(const Entry& e) { return *e.state<HashValue*>(); }
void hash_make(Entry& e) { e.state<HashValue*>() = new HashValue(); }
void hash_free(Entry& e) { delete e.state<HashValue*>(); }
bool hash_idle(const Entry& e, int64_t) { return hash_of(e).fields.empty(); }
uint64_t hash_bytes(const Entry& e) { return sizeof(HashValue) + hash_of(e).bytes; }
int64_t hash_usage(Entry& e) {  // (each field's two strings)
  int64_t n = 0;
  for (const auto& [f, v] : hash_of(e).fields)
    n += 2 * 32 + static_cast<int64_t>(f.size() + v.size());
  return n;
}
// listpack while within hash-max-listpack-entries and -value, else hashtable (Redis 7.0's).
const char* hash_encoding(Entry& e) {
  const EncodingThresholds& t = encoding_thresholds();
  const HashValue& h = hash_of(e);
  bool small = static_cast<int64_t>(h.fields.size()) <= t.hash_entries;
  for (const auto& [k, v] : h.fields) {
    small = small && static_cast<int64_t>(k.size()) <= t.hash_value &&
            static_cast<int64_t>(v.size()) <= t.hash_value;
  }
  return small ? "listpack" : "hashtable";
}
void hash_snapshot(Entry& e, EntrySnapshot& s) { s.hash = hash_of(e).fields; }
void hash_restore(Entry& e, const EntrySnapshot& s) {
  hash_of(e).fields = s.hash;
  hash_of(e).recount();
}
// The union of the fields; a field in both: the larger if both are integers, else the
// serving value.
bool hash_merge(EntrySnapshot& into, const EntrySnapshot& from) {
  bool changed = false;
  for (const auto& [f, v] : from.hash) {
    const auto& field = f;  // (clang 14 cannot capture a structured binding)
    auto it = std::find_if(into.hash.begin(), into.hash.end(),
                           [&field](const auto& kv) { return kv.first == field; });
    if (it == into.hash.end()) {
      into.hash.emplace_back(f, v);
      changed = true;
    } else {
      changed |= merge_value(it->second, v);
    }
  }
  return changed;
}
}  // namespace

const KindRow kHashKind = {Kind::kHash,
                           sizeof(HashValue*),
                           0,
                           false,
                           &hash_make,
                           &hash_free,
                           &hash_idle,
                           nullptr,
                           &hash_bytes,
                           &hash_usage,
                           &hash_encoding,
                           &hash_snapshot,
                           &hash_restore,
                           &hash_merge,
                           nullptr,
                           nullptr,
                           nullptr};

}  // namespace fg
