// The replication stream: rounds of changed keys, whole copies for new replicas, fencing.
#include "replicator.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

namespace {
constexpr int64_t kCopyRetryMs = 500;

}  // namespace

int64_t Replicator::now_us() const { return cfg_.clock->now_ns() / 1000; }

Replicator::Replicator(ReplicatorConfig cfg, ShardPool& pool, asio::io_context& io,
                       const SlotBits& held, const SlotBits& unserved, Send send, Live live)
    : cfg_(std::move(cfg)),
      pool_(pool),
      io_(io),
      held_(held),
      unserved_(unserved),
      send_(std::move(send)),
      live_(std::move(live)),
      timer_(io) {
  if (!cfg_.clock) cfg_.clock = &SystemClock::process();
}

void Replicator::start() { arm(); }

void Replicator::stop() {
  stopped_ = true;
  timer_.cancel();
}

void Replicator::arm() {
  timer_.expires_after(std::chrono::milliseconds(cfg_.lag_ms));
  timer_.async_wait([this](asio::error_code ec) {
    if (ec || stopped_) return;
    round();
    // Replicas that lack a whole copy of some slots get one. When none lacked one last
    // time, none does until a copy is lost or the slots move: only then look again (a look
    // reads every slot's bits for each replica).
    const SlotBits serving = served();
    if (whole_dirty_ || counters_.copies_pending.load(std::memory_order_relaxed) > 0 ||
        std::memcmp(&serving, &held_seen_, sizeof serving) != 0) {  // (== goes word by word)
      whole_dirty_ = false;
      held_seen_ = serving;
      const int64_t now = now_ms();
      uint64_t pending = 0;
      for (auto& [id, d] : dests_) {
        const SlotBits missing = d.replicated & serving & ~d.synced;
        if (missing.none()) continue;
        pending += missing.count();
        if (now < d.retry_at_ms || !live_(id)) continue;
        const SlotBits need = missing & ~d.copying;
        if (need.any()) copy_whole(id, need);
      }
      counters_.copies_pending.store(pending, std::memory_order_relaxed);
    }
    if (!spare_batches_.empty()) expire_spares();
    if (complete_changed_) {  // (a count of 16384 bits: only when they changed)
      counters_.whole_copies_held.store(complete_.count(), std::memory_order_relaxed);
      complete_changed_ = false;
    }
    arm();
  });
}

void Replicator::after_replicated(uint64_t mark, std::function<void(bool)> done) {
  asio::post(io_, [this, mark, done = std::move(done)]() mutable {
    counters_.sync_waits.fetch_add(1, std::memory_order_relaxed);
    if (dests_.empty()) {  // nobody to copy to now (one node, or R = 1): rounds since count
      waiting_.push_back({mark, rounds_started_.load(std::memory_order_relaxed), std::move(done)});
      return answer_waiters();
    }
    next_waiters_.push_back({mark, 0, std::move(done)});
    round();  // now, not at the next tick: this reply is waiting
  });
}

// One round: collect every shard's changes, then ship them. A round started while one is
// collecting runs right after it (changes made meanwhile may have been missed by it).
void Replicator::round() {
  if (collecting_) {
    again_ = true;
    return;
  }
  collecting_ = true;
  again_ = false;
  const uint64_t seq = rounds_started_.fetch_add(1, std::memory_order_acq_rel) + 1;
  rounds_.push_back({false, true});  // (at seq: first_round_ + its index)
  for (Waiter& w : next_waiters_) {
    w.until = seq;
    waiting_.push_back(std::move(w));
  }
  next_waiters_.clear();
  auto job = std::make_shared<CollectJob>();
  job->parts = std::move(parts_);
  const int64_t started = now_us();
  job->done = [this, seq, started](CollectJob& j) {
    asio::post(io_, [this, parts = std::move(j.parts), seq, started]() mutable {
      collecting_ = false;
      ship(parts, seq, started);
      for (auto& p : parts) p.clear();
      parts_ = std::move(parts);
      if (!stopped_ && (again_ || !next_waiters_.empty())) round();
    });
  };
  pool_.collect(job);
}

void Replicator::round_over(uint64_t seq, bool ok) {
  if (auto* r = round_at(seq)) *r = {true, ok};
  answer_waiters();
}

void Replicator::answer_waiters() {
  constexpr size_t kRoundsKept = 4096;  // (at Δ = 5 ms, 20 s: far past any sync timeout)
  for (auto w = waiting_.begin(); w != waiting_.end();) {
    bool over = true, ok = true;
    // From the round that was the latest at the mark (it may have been collecting then).
    for (uint64_t r = std::max<uint64_t>(w->since, 1); r <= w->until && over; ++r) {
      const auto* round = round_at(r);
      if (round == nullptr) {
        ok = false;  // forgotten: it may have failed
        continue;
      }
      over = round->first;
      ok = ok && round->second;
    }
    if (!over) {
      ++w;
      continue;
    }
    auto done = std::move(w->done);
    w = waiting_.erase(w);
    if (!ok) counters_.sync_failures.fetch_add(1, std::memory_order_relaxed);
    done(ok);
  }
  while (rounds_.size() > kRoundsKept && rounds_.front().first) {
    rounds_.pop_front();
    ++first_round_;
  }
}

void Replicator::ship(std::vector<ShardChanges>& parts, uint64_t seq, int64_t started_us) {
  bool overflow = false;
  for (const auto& p : parts) overflow = overflow || !p.complete;
  if (overflow) {
    spdlog::warn("more keys changed than the replication stream tracks; re-copying replicas");
    for (auto& [id, d] : dests_) d.synced.reset();
    whole_dirty_ = true;
  }
  struct Out {
    std::vector<EntrySnapshot> entries;
    std::string packed;
    size_t records = 0;
  };
  std::map<uint16_t, Out> out;  // by member index
  std::set<uint16_t> missed;    // replicas of changed slots not reachable now
  // Every slot this node owns has the same replicas: found, and asked whether live, once
  // per round rather than once per changed key.
  std::vector<uint16_t> reachable, unreachable;
  if (self_index_ >= 0) {
    for (uint16_t r : table_.holders_of(static_cast<uint16_t>(self_index_))) {
      if (static_cast<int>(r) == self_index_) continue;
      (live_(table_.members()[r]) ? reachable : unreachable).push_back(r);
    }
  }
  auto targets = [&](uint32_t slot, auto&& fn) {
    if (self_index_ < 0 || table_.owner(slot) != self_index_) return;  // moved: hand-off has it
    for (uint16_t r : reachable) fn(out[r]);
    missed.insert(unreachable.begin(), unreachable.end());
  };
  for (const ShardChanges& p : parts) {
    for (const ShardChanges::Mark& m : p.marks) {
      targets(m.slot, [&](Out& o) {
        o.packed.append(p.packed, m.offset, m.size);
        ++o.records;
      });
    }
    for (const EntrySnapshot& e : p.snapshots) {
      targets(key_slot(e.key), [&](Out& o) { o.entries.push_back(e); });
    }
  }
  // A replica declared dead misses these changes: should it come back under the same
  // table, its copy is no longer whole and it gets a new one first.
  for (uint16_t r : missed) {
    auto it = dests_.find(table_.members()[r]);
    if (it != dests_.end()) it->second.synced.reset();
    whole_dirty_ = true;
  }
  if (out.empty()) return round_over(seq, true);
  struct Round {
    size_t pending = 0;
    bool ok = true;
  };
  auto r = std::make_shared<Round>();
  r->pending = out.size();
  for (auto& [idx, o] : out) {
    const std::string id = table_.members()[idx];
    wire::ReplicaUpdate msg;
    msg.set_from(cfg_.self);
    msg.set_epoch(table_.epoch());
    if (!o.entries.empty()) msg.set_state(encode_state(o.entries));
    msg.set_packed(std::move(o.packed));
    counters_.updates_sent.fetch_add(1, std::memory_order_relaxed);
    counters_.keys_sent.fetch_add(o.entries.size() + o.records, std::memory_order_relaxed);
    send_(id, msg.SerializeAsString(), std::chrono::milliseconds(cfg_.timeout_ms),
          [this, r, id, seq, started_us](PeerStatus st, std::string) {
            if (st != PeerStatus::kOk) {
              r->ok = false;
              lost(id);
            }
            if (--r->pending > 0) return;
            counters_.last_round_us.store(now_us() - started_us, std::memory_order_relaxed);
            round_over(seq, r->ok);
          });
  }
}

// A replica missed an update (or its link failed): it gets whole copies again.
void Replicator::lost(const std::string& id) {
  counters_.update_failures.fetch_add(1, std::memory_order_relaxed);
  auto it = dests_.find(id);
  if (it == dests_.end()) return;
  it->second.synced.reset();
  it->second.retry_at_ms = now_ms() + kCopyRetryMs;
  whole_dirty_ = true;
}

void Replicator::copy_whole(const std::string& id, SlotBits slots) {
  dests_[id].copying |= slots;
  auto job = std::make_shared<ExtractJob>();
  job->slots = slots;
  job->remove = false;  // a copy: the slots stay ours
  job->now_ns = pool_.clock()->now_ns();
  job->done = [this, id, slots](ExtractJob& j) {
    std::vector<EntrySnapshot> entries;
    for (auto& part : j.per_shard)
      for (auto& e : part) entries.push_back(std::move(e));
    asio::post(io_, [this, id, slots, entries = std::move(entries)] {
      // Chunks, in order: the first drops the replica's old copy, the last completes it.
      const std::string bitmap = slots_to_bytes(slots);
      auto parts = split_by_bytes(entries, cfg_.chunk_bytes);
      std::vector<std::string> chunks;
      for (size_t i = 0; i < parts.size(); ++i) {
        wire::ReplicaUpdate m;
        m.set_from(cfg_.self);
        m.set_epoch(table_.epoch());
        if (i == 0) m.set_clear(bitmap);
        if (i + 1 == parts.size()) m.set_complete(bitmap);
        m.set_state(encode_state(parts[i]));
        chunks.push_back(m.SerializeAsString());
      }
      auto left = std::make_shared<size_t>(chunks.size());
      auto ok = std::make_shared<bool>(true);
      for (auto& c : chunks) {
        send_(id, std::move(c), std::chrono::milliseconds(cfg_.timeout_ms * 5),
              [this, id, slots, left, ok, n = entries.size()](PeerStatus st, std::string) {
                if (st != PeerStatus::kOk) *ok = false;
                if (--*left > 0) return;
                auto it = dests_.find(id);
                if (it == dests_.end()) return;
                it->second.copying &= ~slots;
                if (!*ok) {
                  spdlog::warn("copy of {} slots to replica {} failed; retrying", slots.count(),
                               id);
                  return lost(id);
                }
                it->second.synced |= slots & it->second.replicated;
                counters_.full_copies_sent.fetch_add(slots.count(), std::memory_order_relaxed);
                spdlog::info("replica {} holds a whole copy of {} slots ({} keys)", id,
                             slots.count(), n);
              });
      }
    });
  };
  pool_.extract(job);
}

bool Replicator::accepts(const std::string& from, uint64_t epoch, uint32_t slot) const {
  const uint16_t o = table_.owner(slot);
  if (o != kNoOwner && static_cast<int>(o) == self_index_) return false;  // served here
  if (epoch > table_.epoch()) return true;  // our table is behind: trust the newer one
  if (o == kNoOwner || table_.owner_id(slot) != from) return false;
  // Only a copy our table asks us to keep: a whole copy begun under an older table, which
  // arrives after ours stopped making us a replica (a leaving node's), would stay a copy
  // nobody keeps — never a spare, never released.
  for (uint16_t r : table_.holders_of(o))
    if (static_cast<int>(r) == self_index_) return true;
  return false;
}

void Replicator::on_update(std::string body, PeerServer::Respond respond) {
  wire::ReplicaUpdate m;
  std::vector<EntrySnapshot> entries;
  SlotBits clear, complete;
  if (!m.ParseFromString(body) || !decode_state(m.state(), entries) ||
      (!m.clear().empty() && !slots_from_bytes(m.clear(), clear)) ||
      (!m.complete().empty() && !slots_from_bytes(m.complete(), complete))) {
    return respond(PeerStatus::kError, {}, "malformed replica update");
  }
  const std::string& from = m.from();
  const uint64_t epoch = m.epoch();
  bool fenced = false;
  // Most updates carry neither bitmap: no slot to visit, no 2 KB bitmap to pass on.
  const bool carries = !m.clear().empty() || !m.complete().empty();
  if (carries) {
    const SlotBits whole = clear | complete;
    for (uint32_t s = whole.any() ? whole._Find_first() : kSlotCount; s < kSlotCount;
         s = whole._Find_next(s)) {
      if (!accepts(from, epoch, s)) {
        clear.reset(s);
        complete.reset(s);
        fenced = true;
      }
    }
  }
  std::vector<EntrySnapshot> keep;
  keep.reserve(entries.size());
  for (auto& e : entries) {
    if (accepts(from, epoch, key_slot(e.key))) {
      keep.push_back(std::move(e));
    } else {
      fenced = true;
    }
  }
  // Packed records: each checked here, before anything is applied, and passed on to the
  // shard of its slot as the same bytes.
  std::vector<std::string> packed;
  size_t records = 0;
  if (!m.packed().empty()) {
    packed.resize(pool_.size());
    std::string_view in = m.packed();
    PackedRecord rec;
    while (!in.empty()) {
      if (!read_packed(in, rec)) return respond(PeerStatus::kError, {}, "malformed replica update");
      const uint32_t slot = key_slot(rec.key);
      if (accepts(from, epoch, slot)) {
        packed[pool_.shard_of_slot(slot)].append(in.data(), rec.size);
        copies_.set(slot);
        ++records;
      } else {
        fenced = true;
      }
      in.remove_prefix(rec.size);
    }
  }
  if (fenced) counters_.fenced_updates.fetch_add(1, std::memory_order_relaxed);
  counters_.updates_received.fetch_add(1, std::memory_order_relaxed);
  counters_.keys_received.fetch_add(keep.size() + records, std::memory_order_relaxed);
  if (carries) copies_ |= clear | complete;
  for (const auto& e : keep) copies_.set(key_slot(e.key));
  auto job = std::make_shared<ReplicaJob>();
  if (clear.any()) job->clear = clear;
  std::shared_ptr<const SlotBits> completes;
  if (complete.any()) completes = std::make_shared<const SlotBits>(complete);
  // What was fenced off is not held here: the sender must not count it as replicated (a
  // reply waiting for it is not acknowledged; the sender learns the new table soon).
  job->done = [this, completes, fenced, respond = std::move(respond)](ReplicaJob&) mutable {
    asio::post(io_, [this, completes, fenced, respond = std::move(respond)] {
      if (completes) {
        complete_ |= *completes & copies_;
        complete_changed_ = true;
      }
      if (fenced) return respond(PeerStatus::kError, {}, "not the owner in this node's table");
      respond(PeerStatus::kOk, {}, {});
    });
  };
  pool_.keep_copy(job, std::move(keep), std::move(packed));
}

void Replicator::on_table(const SlotTable& before, const SlotTable& after) {
  table_ = after;
  self_index_ = after.index_of(cfg_.self);
  // Owner side: who keeps a copy of which of our slots now.
  for (auto& [id, d] : dests_) d.replicated.reset();
  whole_dirty_ = true;
  if (self_index_ >= 0) {
    std::vector<Dest*> to;  // (the same replicas for every slot we own)
    for (uint16_t r : after.holders_of(static_cast<uint16_t>(self_index_))) {
      if (static_cast<int>(r) != self_index_) to.push_back(&dests_[after.members()[r]]);
    }
    for (uint32_t s = 0; s < kSlotCount; ++s) {
      if (after.owner(s) != self_index_) continue;
      for (Dest* d : to) d->replicated.set(s);
    }
  }
  for (auto it = dests_.begin(); it != dests_.end();) {
    Dest& d = it->second;
    d.synced &= d.replicated;
    it = d.replicated.none() && d.copying.none() ? dests_.erase(it) : std::next(it);
  }
  // Replica side: a copy stays whole only while its slot keeps its owner and we keep
  // copying it; copies of slots we no longer keep (and do not own) are dropped.
  SlotBits keep;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    const uint16_t o = after.owner(s);
    if (o == kNoOwner || self_index_ < 0 || static_cast<int>(o) == self_index_) continue;
    if (!after.holds_copy(s, static_cast<uint16_t>(self_index_))) continue;
    keep.set(s);
    const bool same_owner = before.epoch() > 0 && before.owner(s) != kNoOwner &&
                            before.owner_id(s) == after.owner_id(s);
    if (!same_owner) complete_.reset(s);
  }
  complete_ &= keep;
  complete_changed_ = true;
  // Copies no longer kept become spares: should their owner die before its new replicas
  // hold the slots whole, they may be all that is left (a crash during a join or a leave).
  const SlotBits drop = copies_ & ~keep & ~served();
  copies_ &= keep;
  // Spares kept again are a replica's copy again (not whole: the owner's whole copy will
  // replace it — unless the owner died first, when it is what is left).
  copies_ |= spare_ & keep;
  spare_ &= ~keep;
  if (drop.any()) add_spares(drop);
}

void Replicator::add_spares(const SlotBits& slots) {
  const SlotBits fresh = slots & ~served();
  if (fresh.none()) return;
  spare_ |= fresh;
  spare_batches_.push_back({fresh, cfg_.clock->now_ns() + kSpareNs});
}

void Replicator::release_spares(const SlotBits& slots) {
  const SlotBits gone = slots & spare_;
  if (gone.none()) return;
  spare_ &= ~gone;
  if (self_index_ < 0) copies_ &= ~gone;  // (leaving: an owner's late update kept it too)
  for (auto& b : spare_batches_) b.slots &= ~gone;
  const SlotBits clear = gone & ~copies_ & ~served();
  if (clear.none()) return;
  auto job = std::make_shared<ReplicaJob>();  // installs nothing: only clears
  job->clear = clear;
  pool_.keep_copy(job, {}, {});
}

void Replicator::expire_spares() {
  spare_ &= ~served();  // (served here now: promoted, no longer a spare)
  if (spares_kept_) return;
  const int64_t now = cfg_.clock->now_ns();
  SlotBits due;
  for (auto it = spare_batches_.begin(); it != spare_batches_.end();) {
    if (now >= it->until_ns || it->slots.none()) {
      due |= it->slots;
      it = spare_batches_.erase(it);
    } else {
      ++it;
    }
  }
  // (a slot made a spare again since is in a later batch: it stays)
  for (const auto& b : spare_batches_) due &= ~b.slots;
  if (due.any()) release_spares(due);
}

SlotBits Replicator::whole_everywhere() const {
  SlotBits out = served();
  for (const auto& [id, d] : dests_) out &= ~(d.replicated & ~d.synced);
  return out;
}

void Replicator::fence() {
  dests_.clear();
  complete_.reset();
  complete_changed_ = true;
  copies_.reset();
  spare_.reset();
  spare_batches_.clear();
}

}  // namespace fg
