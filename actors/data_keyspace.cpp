// Commands about the keyspace as a whole rather than one value: WATCH's versions (what EXEC
// checks a transaction against) and FLUSHALL / FLUSHDB.
//
// WATCH follows Redis (multi.c): a transaction is refused when a watched key was written,
// deleted or expired between WATCH and EXEC — by anyone, this connection included — and not
// when it only expired before WATCH (WATCH forgets such a key first, as a read would).
// A shard keeps a version only for keys somebody watches; every write reaches mark() or
// mark_gone(), which move a watched key's version on, and the sweep does the same for a
// watched key it expires. State replaced wholesale (slots handed off or taken in) moves
// every watched key on: a watch never outlives a change it cannot see.
#include <climits>
#include <string>

#include "encoding_thresholds.hpp"
#include "errors.hpp"
#include "hash_value.hpp"
#include "limit_spec.hpp"
#include "list_value.hpp"
#include "set_value.hpp"
#include "shard.hpp"
#include "string_value.hpp"
#include "words.hpp"
#include "zset_value.hpp"

namespace fg {

namespace {
// A watch nobody checked or released for this long is dropped (a connection that went
// without its node hearing of it); an EXEC that still counts on it is refused.
constexpr int64_t kWatchHorizonNs = 3600LL * 1'000'000'000;
constexpr int64_t kWatchPruneEveryNs = 60LL * 1'000'000'000;
}  // namespace

void Shard::touch(std::string_view key) {
  auto it = watch_.find(std::string(key));
  if (it != watch_.end()) it->second.version = ++watch_clock_;
}

void Shard::touch_all() {
  for (auto& [key, w] : watch_) w.version = ++watch_clock_;
}

void Shard::prune_watches(int64_t now_ns) {
  if (now_ns - watch_pruned_ns_ < kWatchPruneEveryNs) return;
  watch_pruned_ns_ = now_ns;
  for (auto it = watch_.begin(); it != watch_.end();) {
    it = now_ns - it->second.since_ns > kWatchHorizonNs ? watch_.erase(it) : std::next(it);
  }
}

// WATCH key: the key's version (an array of one integer). kUnwatch key: one watcher less (1).
// kWatchCheck ("exec") key token: 1 if the key's version is still `token`, else 0 and the
// transaction is aborted; either way one watcher less.
void Shard::data_watch(ShardOp& op, int64_t now_ns) {
  DataReply& r = *op.reply;
  if (op.data == DataCmd::kWatch) {
    lookup(op.key, op.hash, now_ns);  // (already expired: gone now, and that is no change)
    Watch& w = watch_[std::string(op.key)];
    if (w.watchers++ == 0) w.version = ++watch_clock_;
    w.since_ns = now_ns;
    r.array(1);  // (a part of WATCH's list of tokens, as MGET's parts are)
    return r.integer(static_cast<int64_t>(w.version));
  }
  bool same = false;
  if (op.data == DataCmd::kWatchCheck) {
    int64_t token = 0;
    const bool parsed = op.args->size() == 3 && parse_int((*op.args)[2], token);
    lookup(op.key, op.hash, now_ns);  // (expired since WATCH: that is a change)
    auto it = watch_.find(std::string(op.key));
    same = parsed && it != watch_.end() && it->second.version == static_cast<uint64_t>(token);
    if (!same && op.abort) *op.abort = 1;
  }
  auto it = watch_.find(std::string(op.key));
  if (it != watch_.end() && --it->second.watchers == 0) watch_.erase(it);
  r.integer(op.data == DataCmd::kUnwatch || same ? 1 : 0);
}

// FLUSHALL / FLUSHDB [ASYNC|SYNC]: every key this shard serves goes (a replica's copies of
// other nodes' slots stay: their owners decide), replicated as deletions. Redis's ASYNC
// frees memory in the background; here both free it before answering.
void Shard::data_flush(ShardOp& op, int64_t) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  if (a.size() > 2 || (a.size() == 2 && !iequals(a[1], "sync") && !iequals(a[1], "async"))) {
    return r.error(err::kSyntax);
  }
  std::vector<std::string> gone;
  table_.for_each([&](Entry* e) {
    if (owns(key_slot(e->key()))) gone.emplace_back(e->key());
  });
  for (const std::string& k : gone) {
    forget(k, KeyTable::hash(k));
    mark_gone(k);
  }
  publish();
  r.ok();
}

namespace {
// MEMORY USAGE's estimate: the entry, its key, and each element with what holding it costs
// (a string's bytes and its allocation, a hash field's two strings, a member's score and
// its place in both of a sorted set's indexes).
int64_t estimate_bytes(Entry& e) {
  constexpr int64_t kEntry = 64, kString = 32;
  int64_t n = kEntry + static_cast<int64_t>(e.key().size());
  switch (e.kind) {
    case Kind::kString: {
      if (string_is_int(e)) return n;
      std::string buf;
      return n + kString + static_cast<int64_t>(string_get(e, buf).size());
    }
    case Kind::kHash:
      for (const auto& [f, v] : e.state<HashValue*>()->fields)
        n += 2 * kString + static_cast<int64_t>(f.size() + v.size());
      return n;
    case Kind::kZSet:
      for (const auto& [m, s] : e.state<ZSetValue*>()->scores)
        n += 96 + 2 * static_cast<int64_t>(m.size());
      return n;
    case Kind::kList:
      for (const auto& v : e.state<ListValue*>()->items)
        n += kString + static_cast<int64_t>(v.size());
      return n;
    case Kind::kSet:
      for (const std::string* m : e.state<SetValue*>()->members)
        n += 48 + kString + static_cast<int64_t>(m->size());
      return n;
    default:
      return n + 64;  // (a limiter's state; a log's or leases' entries are not walked)
  }
}
}  // namespace

// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ key and MEMORY USAGE key (the words as sent:
// the key is third).
// Encodings are the ones redis-server 7.0 would report for the value as it is now, by the
// thresholds CONFIG SET gave (encoding_thresholds.hpp; by default listpack up to 128 entries
// of up to 64 bytes; a string of up to 44
// bytes is embstr, an integer int; a 7.0 list is always a quicklist); a limiter's is its
// kind. No access times are kept: IDLETIME is 0, and FREQ answers as a server without an
// LFU policy.
void Shard::data_object(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (!e) return r.null();
  const std::string_view sub = a[1];
  if (iequals(sub, "refcount")) {
    // (redis-server shares the integers 0..9999 among all keys: "refcount" INT_MAX)
    const bool shared = e->kind == Kind::kString && string_is_int(*e) &&
                        e->state<StringState>().i >= 0 && e->state<StringState>().i < 10000;
    return r.integer(shared ? INT_MAX : 1);
  }
  if (iequals(sub, "idletime")) return r.integer(0);
  if (iequals(sub, "usage")) return r.integer(estimate_bytes(*e));
  if (iequals(sub, "freq")) return r.error(err::kNoLfu);
  const EncodingThresholds& t = encoding_thresholds();
  auto small = [](size_t n, int64_t entries, int64_t bytes, auto&& each) {
    if (static_cast<int64_t>(n) > entries) return false;
    bool fits = true;
    each([&](std::string_view s) { fits = fits && static_cast<int64_t>(s.size()) <= bytes; });
    return fits;
  };
  switch (e->kind) {
    case Kind::kString: {
      if (e->flags & kEntryRaw) return r.bulk("raw");
      if (string_is_int(*e) && !(e->flags & kEntryText)) return r.bulk("int");
      std::string buf;
      return r.bulk(string_get(*e, buf).size() <= 44 ? "embstr" : "raw");
    }
    case Kind::kHash: {
      const HashValue& h = *e->state<HashValue*>();
      return r.bulk(small(h.fields.size(), t.hash_entries, t.hash_value,
                          [&](auto f) {
                            for (const auto& [k, v] : h.fields) f(k), f(v);
                          })
                        ? "listpack"
                        : "hashtable");
    }
    case Kind::kZSet: {
      const ZSetValue& z = *e->state<ZSetValue*>();
      return r.bulk(small(z.size(), t.zset_entries, t.zset_value,
                          [&](auto f) {
                            for (const auto& [m, s] : z.scores) f(m);
                          })
                        ? "listpack"
                        : "skiplist");
    }
    case Kind::kList:
      return r.bulk("quicklist");
    case Kind::kSet:
      return r.bulk(e->state<SetValue*>()->hashtable ? "hashtable" : "intset");
    default:
      return r.bulk(kind_name(e->kind));
  }
}

}  // namespace fg
