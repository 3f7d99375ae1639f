// A shard's dispatch: running a batch or a multi-shard step, each op on the shard that
// serves its slot, to the code of its kind — limiters here (take), leases and reservations
// (shard_leases.cpp), data commands (data_*.cpp), scripts (through the host); what differs
// by the kind of value a key holds is its row's (value_kinds.hpp). Kinds are
// fixed at first use: a key that holds one kind of limiter answers WRONGTYPE to another,
// as Redis does for data types. Expiry: shard_expiry.cpp; state moving between nodes:
// shard_transfer.cpp.
#include "shard.hpp"

#include <stdexcept>

#include "errors.hpp"
#include "sliding_log.hpp"
#include "value_kinds.hpp"

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
  const auto take = kind_row(kind).take;
  return take ? take(state, op, now, dry) : Decision{};
}
}  // namespace

Shard::Shard(size_t max_keys, uint64_t lease_seed, ShardStats* stats)
    : max_keys_(max_keys),
      lease_seed_(lease_seed),
      stats_(stats),
      watch_clock_(splitmix64(lease_seed ^ 0x77617463686b6579ULL)) {
  static const bool rows_in_order = kind_rows_in_order();
  if (!rows_in_order)
    throw std::logic_error("actors/value_kinds.cpp: a row is out of Kind's order");
}

uint64_t Shard::next_lease_id() {
  uint64_t id;
  do id = splitmix64(lease_seed_ + ++lease_counter_);
  while (id == 0);
  return id;
}

uint64_t Shard::next_random() {
  return splitmix64(lease_seed_ ^
                    (0x72616e646f6d2121ULL + ++random_counter_ * 0x9e3779b97f4a7c15ULL));
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
  return insert_key(op.key, op.hash, kind, op.account);
}

namespace {
OpStatus status_of(Accounts::Room room) {
  switch (room) {
    case Accounts::Room::kNodeMemory:
      return OpStatus::kNoMemory;
    case Accounts::Room::kUserKeys:
      return OpStatus::kUserKeys;
    case Accounts::Room::kUserMemory:
      return OpStatus::kUserMemory;
    default:
      return OpStatus::kOk;
  }
}
}  // namespace

bool Shard::room_for_key(ShardOp& op, int64_t now_ns) {
  if (table_.size() >= max_keys_) {
    // A whole sweep costs the table: paid for when it frees many keys, not repeated within
    // 100 ms after one that freed few (else a table of live keys at its cap is swept whole
    // for every new key asked for).
    if (full_sweep_freed_ * 64 >= max_keys_ || now_ns - full_sweep_ns_ >= 100'000'000) {
      full_sweep_ns_ = now_ns;
      full_sweep_freed_ =
          table_.sweep(table_.capacity(), [&](Entry* x) { return expire(x, now_ns); });
    }
    if (table_.size() >= max_keys_) {
      op.status = OpStatus::kKeyLimit;
      return false;
    }
  }
  if (accounts_) {
    const KeyTable::Pending mine = table_.pending(op.account);
    if (const Accounts::Room room =
            accounts_->new_key(op.account, mine.keys, mine.bytes, table_.pending_bytes());
        room != Accounts::Room::kOk) {
      op.status = status_of(room);
      return false;
    }
  }
  return true;
}

bool Shard::room_to_grow(ShardOp& op) {
  if (!accounts_) return true;
  const Accounts::Room room =
      accounts_->grow(op.account, table_.pending(op.account).bytes, table_.pending_bytes());
  if (room == Accounts::Room::kOk) return true;
  op.status = status_of(room);
  return false;
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
    if (!op.decision.allowed && op.wait_ns > 0) reserve_wait(*e, op, now_ns);
    mark(e, op.key);
  }
}

// A limiter's state charged `delta` (< 0: refunded), by its kind's adjust (FG.ADJUST, and a
// waiting take's reservation).
void Shard::charge(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns) {
  if (const auto adjust = kind_row(e.kind).adjust) adjust(e, spec, delta, now_ns);
}

// FG.TAKE ... WAIT: a denial that would be allowed within the caller's wait takes its place
// now — the bucket goes into debt by its cost — and is due when the debt is paid: exactly
// its retry-after. Later arrivals find more debt and are due later (arrivals are served in
// order); nobody is admitted before the debt is paid. Token buckets and GCRA only (their
// debt is a queue in time); a shadow policy never waits (it never denies).
void Shard::reserve_wait(Entry& e, ShardOp& op, int64_t now_ns) {
  const int64_t due = op.decision.retry_after_ns;
  if (due < 0 || due > op.wait_ns || op.spec.shadow) return;
  if (e.kind != Kind::kTokenBucket && e.kind != Kind::kGcra) return;
  charge(e, op.spec, op.cost, now_ns);
  const int64_t cost = op.cost;
  op.cost = 0;
  // The reply is read when it is due: the state as it will be then (debt paid).
  op.decision = run(e.kind, e.state_bytes(), op, now_ns + due, true);
  op.cost = cost;
  op.decision.allowed = true;
  op.decision.retry_after_ns = kNever;
  op.decision.wait_ns = due;
}

// FG.ADJUST: a cost known only afterwards, charged (cost > 0, into debt where the kind has
// one) or refunded (cost < 0). The answer is the state after it, as a peek of 1 sees it. A
// refund of a key that holds nothing creates none.
void Shard::adjust(ShardOp& op, int64_t now_ns) {
  const Kind kind = op.spec.kind;
  const int64_t delta = op.cost;
  op.cost = 1;
  Entry* e = table_.find(op.key, op.hash);
  if (delta <= 0 && (!e || (e->kind != kind && idle(e, now_ns)))) {
    op.code = OpCode::kPeek;  // (nothing to give back: what a fresh limiter answers)
    take(op, now_ns);
    op.code = OpCode::kAdjust;
    op.cost = delta;
    return;
  }
  e = get_or_create(op, kind, now_ns);
  if (!e) {
    op.cost = delta;
    return;
  }
  charge(*e, op.spec, delta, now_ns);
  op.decision = run(kind, e->state_bytes(), op, now_ns, true);
  op.cost = delta;
  mark(e, op.key);
}

void Shard::execute_one(ShardOp& op, int64_t now_ns) {
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
    case OpCode::kAdjust:
      adjust(op, now_ns);
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

void Shard::execute_batch(std::vector<ShardOp>& ops, uint16_t id, int64_t now_ns) {
  auto mine = [id](const ShardOp& op) { return op.shard == id || op.shard == kAllShards; };
  for (ShardOp& op : ops)  // (the empty key too: "" is a key like any other)
    if (mine(op)) op.hash = KeyTable::hash(op.key);
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
  execute_one(op, now_ns);
}

void Shard::execute_step(std::vector<ShardOp>& ops, const Step& step, int64_t now_ns) {
  for (ShardOp& op : ops) {
    op.hash = KeyTable::hash(op.key);
    if (op.code == OpCode::kData && op.data == DataCmd::kEval && op.shard == kAllShards) {
      // A script that may touch any key: once, with every shard of the step at hand.
      Shard* low = step.shards[__builtin_ctzll(step.mask)];
      if (!(op.abort && *op.abort)) low->run_script(op, &step, now_ns);
      continue;
    }
    if (op.shard != kAllShards) {
      if (op.shard < kMaxShards && (step.mask >> op.shard & 1)) {
        Shard* s = step.shards[op.shard];
        s->step_ = &step;  // (an op over several keys reaches the other shards through it)
        s->run_op(op, now_ns);
        s->step_ = nullptr;
      }
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

void Shard::set_owned(const SlotBits& slots, bool owned) {
  if (!owned_) return;
  if (owned) {
    *owned_ |= slots;
    return;
  }
  *owned_ &= ~slots;
  // Reservations on keys of slots that leave go with them: what they took went with the
  // state (the next owner keeps it, as a take), and none may be given back here later —
  // should the slots come back (a node declared stale, then given its slots again), their
  // counts have been another node's meanwhile, and a refund would take admissions off them.
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    it = slots.test(key_slot(it->second.key)) ? tickets_.erase(it) : std::next(it);
  }
  // (their expiry entries find no ticket, and go)
}

void Shard::publish() {
  table_.flush_charges();
  if (!stats_) return;
  stats_->keys.store(static_cast<int64_t>(table_.size()), std::memory_order_relaxed);
  stats_->bytes.store(static_cast<int64_t>(table_.bytes()), std::memory_order_relaxed);
  stats_->leases.store(leases_, std::memory_order_relaxed);
}

}  // namespace fg
