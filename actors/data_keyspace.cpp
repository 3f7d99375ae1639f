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
#include <string>

#include "errors.hpp"
#include "shard.hpp"
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

}  // namespace fg
