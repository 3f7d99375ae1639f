// Applying requests to a shard's keys. Kinds are fixed at first use: a key that holds one
// kind of limiter answers WRONGTYPE to another, as Redis does for data types.
#include "shard.hpp"

#include "errors.hpp"
#include "fixed_window.hpp"
#include "gcra.hpp"
#include "hash_value.hpp"
#include "key_slot.hpp"
#include "list_value.hpp"
#include "merge.hpp"
#include "sliding_log.hpp"
#include "sliding_window.hpp"
#include "token_bucket.hpp"
#include "zset_value.hpp"

namespace fg {

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Runs the kind's algorithm on `state` (raw entry state bytes or a scratch copy).
Decision run(Kind kind, unsigned char* state, const ShardOp& op, int64_t now, bool dry) {
  switch (kind) {
    case Kind::kTokenBucket:
      return token_bucket_take(*reinterpret_cast<TokenBucketState*>(state), op.spec, op.cost, now,
                               dry);
    case Kind::kGcra:
      return gcra_take(*reinterpret_cast<GcraState*>(state), op.spec, op.cost, now, dry);
    case Kind::kFixedWindow:
      return fixed_window_take(*reinterpret_cast<FixedWindowState*>(state), op.spec, op.cost, now,
                               dry);
    case Kind::kSlidingWindow:
      return sliding_window_take(*reinterpret_cast<SlidingWindowState*>(state), op.spec, op.cost,
                                 now, dry);
    case Kind::kSlidingLog:
      return sliding_log_take(**reinterpret_cast<SlidingLogState**>(state), op.spec, op.cost, now,
                              dry);
    default:
      return {};
  }
}
}  // namespace

Shard::Shard(size_t max_keys, uint64_t lease_seed, ShardStats* stats)
    : max_keys_(max_keys),
      lease_seed_(lease_seed),
      stats_(stats),
      watch_clock_(splitmix64(lease_seed ^ 0x77617463686b6579ULL)) {}

uint64_t Shard::next_lease_id() {
  uint64_t id;
  do id = splitmix64(lease_seed_ + ++lease_counter_);
  while (id == 0);
  return id;
}

Entry* Shard::get_or_create(ShardOp& op, Kind kind, int64_t now_ns) {
  Entry* e = table_.find(op.key, op.hash);
  if (e) {
    if (e->kind != kind) {
      // Idle state of another kind is as good as absent: replace it.
      if (!expire(e, now_ns)) {
        op.status = OpStatus::kWrongType;
        return nullptr;
      }
      table_.erase(op.key, op.hash);
    } else {
      return e;
    }
  }
  if (!room_for_key(op, now_ns)) return nullptr;
  return table_.insert(op.key, op.hash, kind);
}

bool Shard::room_for_key(ShardOp& op, int64_t now_ns) {
  if (table_.size() < max_keys_) return true;
  table_.sweep(table_.capacity(), [&](Entry* x) { return expire(x, now_ns); });
  if (table_.size() < max_keys_) return true;
  op.status = OpStatus::kKeyLimit;
  return false;
}

bool Shard::idle(const Entry* e, int64_t now) const {
  if (e->flags & kEntryDeadline) {
    const int64_t d = e->deadline_ms();
    if (d != 0 && now / 1'000'000 > d) return true;  // (Redis: expired once the clock is past it)
  }
  switch (e->kind) {
    case Kind::kTokenBucket:
      return token_bucket_idle(e->state<TokenBucketState>(), now);
    case Kind::kGcra:
      return gcra_idle(e->state<GcraState>(), now);
    case Kind::kFixedWindow:
      return fixed_window_idle(e->state<FixedWindowState>(), now);
    case Kind::kSlidingWindow:
      return sliding_window_idle(e->state<SlidingWindowState>(), now);
    case Kind::kSlidingLog:
      return sliding_log_idle(*e->state<SlidingLogState*>(), now);
    case Kind::kConcurrency:
      return e->state<LeaseSet*>()->idle(now);
    case Kind::kString:
      return false;
    case Kind::kHash:
      return e->state<HashValue*>()->fields.empty();
    case Kind::kZSet:
      return e->state<ZSetValue*>()->size() == 0;
    case Kind::kList:
      return e->state<ListValue*>()->items.empty();
    case Kind::kNone:
      break;
  }
  return true;
}

bool Shard::expire(Entry* e, int64_t now) {
  if (idle(e, now)) {
    drop_leases(e);
    return true;
  }
  if (e->kind == Kind::kConcurrency) {
    std::vector<std::string> gone;
    e->state<LeaseSet*>()->expire(now, &gone);
    holders_.remove_key(e->key(), gone);
    leases_ -= static_cast<int64_t>(gone.size());
  }
  return false;
}

void Shard::drop_leases(Entry* e) {
  if (e->kind != Kind::kConcurrency) return;
  LeaseSet& set = *e->state<LeaseSet*>();
  std::vector<std::string> holders;
  for (const auto& l : set.leases()) holders.push_back(l.holder);
  holders_.remove_key(e->key(), holders);
  leases_ -= static_cast<int64_t>(holders.size());
  set = LeaseSet();  // (asked again before it is erased, it has nothing left to drop)
}

void Shard::take(ShardOp& op, int64_t now_ns) {
  const Kind kind = op.spec.kind;
  if (op.code == OpCode::kPeek) {
    Entry* e = table_.find(op.key, op.hash);
    if (e && e->kind != kind && !idle(e, now_ns)) {
      op.status = OpStatus::kWrongType;
      return;
    }
    if (e && e->kind == kind) {
      op.decision = run(kind, e->state_bytes(), op, now_ns, true);
      return;
    }
    // Absent: answer as a fresh limiter would, without creating the key.
    alignas(8) unsigned char scratch[64] = {};
    SlidingLogState log;
    if (kind == Kind::kSlidingLog) *reinterpret_cast<SlidingLogState**>(scratch) = &log;
    op.decision = run(kind, scratch, op, now_ns, true);
    return;
  }
  Entry* e = get_or_create(op, kind, now_ns);
  if (e) {
    op.decision = run(kind, e->state_bytes(), op, now_ns, false);
    mark(e, op.key);
  }
}

void Shard::leases(ShardOp& op, int64_t now_ns) {
  Entry* e = table_.find(op.key, op.hash);
  if (op.code == OpCode::kAcquire) e = get_or_create(op, Kind::kConcurrency, now_ns);
  if (!e) return;  // absent key (renew/release/count answer 0) or an error status
  if (e->kind != Kind::kConcurrency) {
    op.status = OpStatus::kWrongType;
    return;
  }
  LeaseSet& set = *e->state<LeaseSet*>();
  const int64_t before = static_cast<int64_t>(set.leases().size());
  std::vector<std::string> gone;
  set.expire(now_ns, &gone);
  holders_.remove_key(op.key, gone);
  switch (op.code) {
    case OpCode::kAcquire:
      op.acquire = set.acquire(op.spec.a, op.ttl_ns, op.holder, next_lease_id(), now_ns);
      if (op.acquire.granted) holders_.add(op.holder, op.key);
      break;
    case OpCode::kRenew:
      op.value = set.renew(op.lease_id, op.ttl_ns, now_ns) ? 1 : 0;
      break;
    case OpCode::kRelease: {
      std::string holder;
      op.value = set.release(op.lease_id, &holder) ? 1 : 0;
      if (op.value) holders_.remove(holder, op.key);
      break;
    }
    case OpCode::kCount:
      op.value = set.count(now_ns);
      break;
    default:
      break;
  }
  leases_ += static_cast<int64_t>(set.leases().size()) - before;
  if (set.empty()) {
    table_.erase(op.key, op.hash);
    if (op.code != OpCode::kCount) mark_gone(op.key);
  } else if (op.code != OpCode::kCount) {
    mark(e, op.key);
  }
}

void Shard::heartbeat(ShardOp& op, int64_t now_ns) {
  int64_t done = 0;
  for (const auto& key : holders_.keys_of(op.holder)) {
    if (owned_ && !owned_->test(key_slot(key))) continue;   // a replica's copy: its owner acts
    if (op.caller && !op.caller->may_write(key)) continue;  // another tenant's key
    const uint64_t h = KeyTable::hash(key);
    Entry* e = table_.find(key, h);
    if (!e || e->kind != Kind::kConcurrency) continue;
    LeaseSet& set = *e->state<LeaseSet*>();
    if (op.code == OpCode::kHeartbeat) {
      const int64_t n = set.renew_holder(op.holder, op.ttl_ns, now_ns);
      if (n > 0) mark(e, key);
      done += n;
      continue;
    }
    const int64_t n = set.release_holder(op.holder);
    if (n == 0) continue;
    done += n;
    leases_ -= n;
    holders_.remove(op.holder, key, static_cast<uint32_t>(n));
    if (set.empty()) {
      table_.erase(key, h);
      mark_gone(key);
    } else {
      mark(e, key);
    }
  }
  op.value.add(done);  // (every shard adds its part, each from its own thread)
}

void Shard::execute(ShardOp& op, int64_t now_ns) {
  switch (op.code) {
    case OpCode::kTake:
    case OpCode::kPeek:
      take(op, now_ns);
      break;
    case OpCode::kReset:
      op.value = table_.find(op.key, op.hash) ? 1 : 0;
      forget(op.key, op.hash);
      if (op.value) mark_gone(op.key);
      break;
    case OpCode::kAcquire:
    case OpCode::kRenew:
    case OpCode::kRelease:
    case OpCode::kCount:
      leases(op, now_ns);
      break;
    case OpCode::kHeartbeat:
    case OpCode::kReleaseHolder:
      heartbeat(op, now_ns);
      break;
    case OpCode::kReserve:
    case OpCode::kCommit:
    case OpCode::kCancel:
      reserve(op, now_ns);
      break;
    case OpCode::kData:
      if (op.reply_room && !op.abort && op.reply_room->load(std::memory_order_relaxed) < 0) {
        op.reply->error(err::kReplyRoom);
        break;
      }
      data(op, now_ns);
      if (op.reply_room) op.reply_room->fetch_sub(op.reply->bytes(), std::memory_order_relaxed);
      break;
  }
}

void Shard::reserve(ShardOp& op, int64_t now_ns) {
  if (op.code == OpCode::kReserve) {
    take(op, now_ns);
    if (op.status != OpStatus::kOk || !op.decision.allowed || op.cost == 0) return;
    Ticket t{std::string(op.key), op.spec, op.cost, now_ns, now_ns + op.ttl_ns};
    op.lease_id = next_lease_id();
    ticket_expiry_.emplace(t.expires_ns, op.lease_id);
    tickets_.emplace(op.lease_id, std::move(t));
    return;
  }
  auto it = tickets_.find(op.lease_id);
  if (it == tickets_.end() || it->second.key != op.key) return;  // value 0: gone or not this key
  if (op.code == OpCode::kCancel) refund(it->second, now_ns);
  auto range = ticket_expiry_.equal_range(it->second.expires_ns);
  for (auto e = range.first; e != range.second; ++e) {
    if (e->second == op.lease_id) {
      ticket_expiry_.erase(e);
      break;
    }
  }
  tickets_.erase(it);
  op.value = 1;
}

void Shard::refund(const Ticket& t, int64_t now_ns) {
  if (owned_ && !owned_->test(key_slot(t.key))) return;  // moved away: the new owner keeps it
  Entry* e = table_.find(t.key, KeyTable::hash(t.key));
  if (!e || e->kind != t.spec.kind) return;
  switch (e->kind) {
    case Kind::kTokenBucket:
      token_bucket_refund(e->state<TokenBucketState>(), t.spec, t.cost);
      break;
    case Kind::kGcra:
      gcra_refund(e->state<GcraState>(), t.spec, t.cost, now_ns);
      break;
    case Kind::kFixedWindow:
      fixed_window_refund(e->state<FixedWindowState>(), t.spec, t.cost, t.taken_ns);
      break;
    case Kind::kSlidingWindow:
      sliding_window_refund(e->state<SlidingWindowState>(), t.spec, t.cost, t.taken_ns);
      break;
    case Kind::kSlidingLog:
      sliding_log_refund(*e->state<SlidingLogState*>(), t.cost, t.taken_ns);
      break;
    default:
      return;
  }
  mark(e, t.key);
}

void Shard::expire_tickets(int64_t now_ns) {
  while (!ticket_expiry_.empty() && ticket_expiry_.begin()->first <= now_ns) {
    auto it = tickets_.find(ticket_expiry_.begin()->second);
    if (it != tickets_.end()) {
      refund(it->second, now_ns);
      tickets_.erase(it);
    }
    ticket_expiry_.erase(ticket_expiry_.begin());
  }
}

void Shard::execute_batch(std::vector<ShardOp>& ops, uint16_t id, int64_t now_ns) {
  auto mine = [id](const ShardOp& op) { return op.shard == id || op.shard == kAllShards; };
  for (ShardOp& op : ops)
    if (mine(op) && !op.key.empty()) op.hash = KeyTable::hash(op.key);
  if (ops.size() > 2) {
    for (const ShardOp& op : ops)
      if (mine(op) && !op.key.empty()) table_.prefetch_slot(op.hash);
    for (const ShardOp& op : ops)
      if (mine(op) && !op.key.empty()) table_.prefetch_entry(op.hash);
  }
  for (ShardOp& op : ops)
    if (mine(op)) run_op(op, now_ns);
  publish();
}

void Shard::run_op(ShardOp& op, int64_t now_ns) {
  if (owned_ && op.shard != kAllShards && !op.every_slot && !owned_->test(op.slot)) {
    op.status = OpStatus::kNotOwner;
    return;
  }
  // (a check still runs after its transaction was aborted: it lets go of its watch)
  if (op.abort && *op.abort && op.data != DataCmd::kWatchCheck) return;
  execute(op, now_ns);
}

void Shard::execute_step(std::vector<ShardOp>& ops, const Step& step, int64_t now_ns) {
  for (ShardOp& op : ops) {
    if (!op.key.empty()) op.hash = KeyTable::hash(op.key);
    if (op.code == OpCode::kData && op.data == DataCmd::kEval && op.shard == kAllShards) {
      // A script that may touch any key: once, with every shard of the step at hand.
      Shard* low = step.shards[__builtin_ctzll(step.mask)];
      if (!(op.abort && *op.abort)) low->run_script(op, &step, now_ns);
      continue;
    }
    if (op.shard != kAllShards) {
      if (op.shard < kMaxShards && (step.mask >> op.shard & 1))
        step.shards[op.shard]->run_op(op, now_ns);
      continue;
    }
    for (uint64_t m = step.mask; m; m &= m - 1) step.shards[__builtin_ctzll(m)]->run_op(op, now_ns);
  }
  for (uint64_t m = step.mask; m; m &= m - 1) step.shards[__builtin_ctzll(m)]->publish();
}

void Shard::run_script(ShardOp& op, const Step* step, int64_t now_ns) {
  if (!scripts_) {
    op.reply->error(err::unknown_command(*op.args));
    return;
  }
  if (step) return scripts_->run(op, *step, now_ns);
  Step one;  // this shard alone (the script's keys share its slot, or the pool has one shard)
  one.mask = uint64_t{1} << id_;
  one.shards[id_] = this;
  scripts_->run(op, one, now_ns);
}

bool Shard::save_key(std::string_view key, int64_t now_ns, EntrySnapshot& out) {
  Entry* e = lookup(key, KeyTable::hash(key), now_ns);
  if (!e) return false;
  out = snapshot_of(*e);
  return true;
}

void Shard::restore_key(std::string_view key, const EntrySnapshot* before) {
  const uint64_t h = KeyTable::hash(key);
  if (!before) {
    if (table_.find(key, h)) {
      forget(key, h);
      mark_gone(key);
    }
    return;
  }
  install_one(*before);
  if (Entry* e = table_.find(key, h)) mark(e, key);
}

void Shard::forget(std::string_view key, uint64_t hash) {
  Entry* e = table_.find(key, hash);
  if (!e) return;
  drop_leases(e);
  table_.erase(key, hash);
}

std::vector<EntrySnapshot> Shard::extract(const std::function<bool(uint32_t)>& want, int64_t now_ns,
                                          bool remove) {
  std::vector<Entry*> hits;
  table_.for_each([&](Entry* e) {
    if (want(key_slot(e->key()))) hits.push_back(e);
  });
  std::vector<EntrySnapshot> out;
  std::vector<std::string> gone;
  for (Entry* e : hits) {
    if (!expire(e, now_ns)) out.push_back(snapshot_of(*e));
    if (remove) gone.emplace_back(e->key());
  }
  for (const auto& k : gone) forget(k, KeyTable::hash(k));
  if (remove && !watch_.empty()) touch_all();
  publish();
  return out;
}

void Shard::copy_part(uint32_t part, uint32_t parts, int64_t now_ns,
                      std::vector<EntrySnapshot>& out) {
  std::vector<Entry*> hits;
  table_.for_each_in_part(part, parts, [&](Entry* e) { hits.push_back(e); });
  for (Entry* e : hits)
    if (!expire(e, now_ns)) out.push_back(snapshot_of(*e));  // (idle: left for the sweep)
}

void Shard::install_one(const EntrySnapshot& s) {
  if (s.kind == Kind::kNone || s.key.size() > kMaxKeyLen ||
      s.fields.size() != snapshot_field_count(s.kind)) {
    return;  // malformed: never half-install
  }
  const uint64_t h = KeyTable::hash(s.key);
  forget(s.key, h);
  Entry* e = table_.insert(s.key, h, s.kind);
  restore_into(*e, s);
  if (s.expires_ms > 0) table_.set_deadline(s.key, h, s.expires_ms);
  for (const Lease& l : s.leases) holders_.add(l.holder, s.key);
  if (s.kind == Kind::kConcurrency) leases_ += static_cast<int64_t>(s.leases.size());
}

void Shard::install_packed(const PackedRecord& r, uint64_t h) {
  Entry* e = table_.find(r.key, h);
  if (e && e->kind != r.kind) {
    forget(r.key, h);
    e = nullptr;
  }
  if (!e) e = table_.insert(r.key, h, r.kind);
  restore_packed(*e, r);
  if (e->deadline_ms() != r.deadline_ms) table_.set_deadline(r.key, h, r.deadline_ms);
}

void Shard::install(const std::vector<EntrySnapshot>& entries) {
  if (!watch_.empty()) touch_all();
  for (const EntrySnapshot& s : entries) install_one(s);
  publish();
}

size_t Shard::merge(std::vector<EntrySnapshot>& entries, int64_t now_ns,
                    std::vector<EntrySnapshot>& refused, const SlotBits& fresh, bool fresh_only) {
  size_t changed = 0;
  if (!watch_.empty()) touch_all();
  for (EntrySnapshot& s : entries) {
    if (s.kind == Kind::kNone || s.key.size() > kMaxKeyLen ||
        s.fields.size() != snapshot_field_count(s.kind)) {
      continue;  // malformed: never half-install
    }
    const uint32_t slot = key_slot(s.key);
    if (!owns(slot)) {
      refused.push_back(std::move(s));
      continue;
    }
    // Leases: every grant and release is acknowledged only once a replica holds it, so a
    // copy served here since before is complete; the returning one could only add grants
    // refused to their callers or leases released since — which a holder's heartbeat would
    // then renew forever. Only a slot started here from nothing takes them.
    if ((fresh_only || s.kind == Kind::kConcurrency) && !fresh.test(slot)) continue;
    const uint64_t h = KeyTable::hash(s.key);
    EntrySnapshot cur;
    if (Entry* e = lookup(s.key, h, now_ns)) cur = snapshot_of(*e);
    if (!merge_snapshot(cur, s)) continue;
    install_one(cur);
    if (Entry* e = lookup(cur.key, h, now_ns)) {
      mark(e, cur.key);
      ++changed;
    }  // (else the merged state was already idle, and is gone)
  }
  publish();
  return changed;
}

void Shard::note_dirty(std::string_view key) {
  if (dirty_count_ >= kMaxDirty) {
    dirty_overflow_ = true;  // the replicas will be sent everything instead
    return;
  }
  const auto n = static_cast<uint16_t>(key.size());  // (keys are at most kMaxKeyLen)
  dirty_.append(reinterpret_cast<const char*>(&n), sizeof n);
  dirty_.append(key);
  ++dirty_count_;
}

void Shard::collect_dirty(ShardChanges& out, int64_t now_ns) {
  // In windows of keys whose table slots, then entries, are prefetched first: the keys are
  // scattered over the table, and their memory misses overlap instead of queueing.
  constexpr size_t kWindow = 16;
  std::string_view keys[kWindow];
  uint64_t hashes[kWindow];
  for (size_t pos = 0; pos < dirty_.size();) {
    size_t n = 0;
    for (; n < kWindow && pos < dirty_.size(); ++n) {
      uint16_t len;
      std::memcpy(&len, dirty_.data() + pos, sizeof len);
      keys[n] = std::string_view(dirty_.data() + pos + sizeof len, len);
      hashes[n] = KeyTable::hash(keys[n]);
      table_.prefetch_slot(hashes[n]);
      pos += sizeof len + len;
    }
    for (size_t i = 0; i < n; ++i) table_.prefetch_entry(hashes[i]);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view k = keys[i];
      Entry* e = table_.find(k, hashes[i]);
      const size_t at = out.packed.size();
      if (!e || expire(e, now_ns)) {
        pack_gone(k, out.packed);  // (a replica sweeps idle state by itself; this is cheap)
      } else if (!(e->flags & kEntryDirty)) {
        continue;  // listed twice, already taken
      } else {
        e->flags &= static_cast<uint8_t>(~kEntryDirty);
        if (!packable(e->kind)) {
          out.snapshots.push_back(snapshot_of(*e));
          continue;
        }
        pack_entry(*e, out.packed);
      }
      out.marks.push_back({at, out.packed.size() - at, key_slot(k)});
    }
  }
  dirty_.clear();
  dirty_count_ = 0;
  if (dirty_.capacity() > (size_t{4} << 20)) dirty_.shrink_to_fit();
  if (dirty_overflow_) out.complete = false;
  dirty_overflow_ = false;
}

void Shard::clear_unowned(const SlotBits& slots) {
  if (slots.none()) return;
  std::vector<std::string> gone;
  table_.for_each([&](Entry* e) {
    const uint32_t s = key_slot(e->key());
    if (slots.test(s) && !owns(s)) gone.emplace_back(e->key());
  });
  for (const auto& k : gone) forget(k, KeyTable::hash(k));
  publish();
}

void Shard::apply_replica(const std::vector<EntrySnapshot>& entries, std::string_view packed) {
  for (const EntrySnapshot& e : entries) {
    if (!owns(key_slot(e.key))) install_one(e);  // served here: this node decides
  }
  // Records in windows, their keys' table slots and entries prefetched first (as above).
  constexpr size_t kWindow = 16;
  PackedRecord recs[kWindow];
  uint64_t hashes[kWindow];
  while (!packed.empty()) {
    size_t n = 0;
    for (; n < kWindow && !packed.empty() && read_packed(packed, recs[n]); ++n) {
      packed.remove_prefix(recs[n].size);
      hashes[n] = KeyTable::hash(recs[n].key);
      table_.prefetch_slot(hashes[n]);
    }
    if (n == 0) break;  // (checked by the stream before it got here)
    for (size_t i = 0; i < n; ++i) table_.prefetch_entry(hashes[i]);
    for (size_t i = 0; i < n; ++i) {
      const PackedRecord& r = recs[i];
      if (owns(key_slot(r.key))) continue;
      if (r.kind == Kind::kNone) {
        forget(r.key, hashes[i]);
      } else {
        install_packed(r, hashes[i]);
      }
    }
  }
  publish();
}

void Shard::set_owned(const SlotBits& slots, bool owned) {
  if (!owned_) return;
  if (owned) {
    *owned_ |= slots;
  } else {
    *owned_ &= ~slots;
  }
}

size_t Shard::sweep(int64_t now_ns, size_t budget) {
  expire_tickets(now_ns);
  if (!watch_.empty()) prune_watches(now_ns);
  const size_t n = table_.sweep(budget, [&](Entry* e) {
    if (!expire(e, now_ns)) return false;
    if (!watch_.empty()) touch(e->key());  // (a watched key that expires has changed)
    return true;
  });
  if (stats_ && n) stats_->expired.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  publish();
  return n;
}

void Shard::publish() {
  if (!stats_) return;
  stats_->keys.store(static_cast<int64_t>(table_.size()), std::memory_order_relaxed);
  stats_->bytes.store(static_cast<int64_t>(table_.bytes()), std::memory_order_relaxed);
  stats_->leases.store(leases_, std::memory_order_relaxed);
}

}  // namespace fg
