// A shard's held things: concurrency leases (acquire, renew, release, count, a holder's
// heartbeat and release) and reservations (what an all-or-nothing check took, given back
// when cancelled or not committed in time).
#include "key_slot.hpp"
#include "shard.hpp"
#include "value_kinds.hpp"

namespace fg {

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
  const auto refund = kind_row(e->kind).refund;
  if (!refund) return;
  refund(*e, t.spec, t.cost, t.taken_ns, now_ns);
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

}  // namespace fg
