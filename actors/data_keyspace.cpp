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

#include "errors.hpp"
#include "limit_spec.hpp"
#include "shard.hpp"
#include "string_value.hpp"
#include "value_kinds.hpp"
#include "words.hpp"

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
  constexpr int64_t kEntry = 64;
  return kEntry + static_cast<int64_t>(e.key().size()) + kind_row(e.kind).usage(e);
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
  const auto encoding = kind_row(e->kind).encoding;  // (a limiter's is its kind)
  if (!encoding) return r.bulk(kind_name(e->kind));
  r.bulk(encoding(*e));
}

}  // namespace fg
