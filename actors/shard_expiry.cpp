// A shard's expiry: whether a key's state is as good as absent (idle, a query), the expire
// step that lets expired leases go, forgetting a key, and the sweep that erases idle keys
// a few table slots at a time.
#include <algorithm>

#include "shard.hpp"
#include "value_kinds.hpp"

namespace fg {

bool Shard::idle(const Entry* e, int64_t now) const {
  if (e->flags & kEntryDeadline) {
    const int64_t d = e->deadline_ms();
    if (d != 0 && now / 1'000'000 > d) return true;  // (Redis: expired once the clock is past it)
  }
  return kind_row(e->kind).idle(*e, now);
}

bool Shard::past_deadline(const Entry* e, int64_t now) {
  if (!(e->flags & kEntryDeadline)) return false;
  const int64_t d = e->deadline_ms();
  return d != 0 && now / 1'000'000 > d;
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

void Shard::forget(std::string_view key, uint64_t hash) {
  Entry* e = table_.find(key, hash);
  if (!e) return;
  drop_leases(e);
  table_.erase(key, hash);
}

size_t Shard::sweep(int64_t now_ns, size_t budget) {
  expire_tickets(now_ns);
  if (!watch_.empty()) prune_watches(now_ns);
  const bool notify = key_events().active();
  const size_t n = table_.sweep(budget, [&](Entry* e) {
    // (a key of this node's past its deadline: keyspace notifications' "expired")
    const bool deadline = notify && past_deadline(e, now_ns) && owns(key_slot(e->key()));
    if (!expire(e, now_ns)) return false;
    if (deadline) key_events().emit(notify::kExpired, "expired", e->key());
    if (!watch_.empty()) touch(e->key());  // (a watched key that expires has changed)
    return true;
  });
  if (stats_ && n) stats_->expired.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  publish();
  return n;
}

void Shard::sweep_tick(size_t budget) {
  // (what the last tick left unpaid is owed still: the batches that pay it in place may
  // have fallen behind)
  const size_t due = std::max(budget, 4 * table_.take_inserts()) + sweep_owed_;
  sweep_owed_ = std::min(due, std::max(budget, table_.capacity()));
  sweep_extra_ = 0;
}

bool Shard::sweep_round(int64_t now_ns, size_t budget) {
  if (sweep_owed_ == 0) return false;
  const size_t n = std::min(budget, sweep_owed_);
  const size_t erased = sweep(now_ns, n);
  sweep_owed_ -= n;
  if (sweep_owed_ == 0 && erased * 4 > n && sweep_extra_ < 16) {
    ++sweep_extra_;
    sweep_owed_ = budget;
  }
  return sweep_owed_ > 0;
}

}  // namespace fg
