// Shard actor behaviour: run this shard's part of a batch, sweep idle keys on a timer.
#include "shard_actor.hpp"

namespace fg {

ShardActorImpl::ShardActorImpl(caf::actor_config& cfg, ShardConfig sc, const Clock* clock,
                               ShardStats* stats)
    : shard_actor::base(cfg),
      cfg_(sc),
      clock_(clock),
      stats_(stats),
      shard_(sc.max_keys, sc.lease_seed, stats) {
  if (sc.cluster) shard_.enable_ownership();
}

shard_actor::behavior_type ShardActorImpl::make_behavior() {
  delayed_send(this, std::chrono::milliseconds(cfg_.sweep_interval_ms), sweep_atom::value);
  return {
      [this](batch_atom, const BatchPtr& b) { on_batch(b); },
      [this](sweep_atom) {
        // Keep sweeping while a tick finds plenty to reclaim, within a bound.
        const int64_t now = clock_->now_ns();
        size_t budget = cfg_.sweep_budget;
        for (int round = 0; round < 16 && shard_.sweep(now, budget) * 4 > budget; ++round) {
        }
        delayed_send(this, std::chrono::milliseconds(cfg_.sweep_interval_ms), sweep_atom::value);
      },
      [this](extract_atom, const ExtractJobPtr& j) {
        const SlotBits& slots = j->slots;
        j->per_shard[cfg_.id] =
            shard_.extract([&](uint32_t s) { return slots.test(s); }, j->now_ns, j->remove);
        if (j->remove) shard_.set_owned(slots, false);
        j->finish_one();
      },
      [this](collect_atom, const CollectJobPtr& j) {
        if (!shard_.collect_dirty(j->changed[cfg_.id], j->deleted[cfg_.id], clock_->now_ns())) {
          j->overflow.store(true, std::memory_order_relaxed);
        }
        j->finish_one();
      },
      [this](install_atom, const InstallJobPtr& j) {
        shard_.clear_unowned(j->clear);
        shard_.install(j->per_shard[cfg_.id]);
        shard_.set_owned(j->slots, true);
        j->finish_one();
      },
      [this](replica_atom, const ReplicaJobPtr& j) {
        shard_.clear_unowned(j->clear);
        shard_.apply_replica(j->per_shard[cfg_.id], j->deleted[cfg_.id]);
        j->finish_one();
      },
  };
}

void ShardActorImpl::on_batch(const BatchPtr& b) {
  const int64_t now = clock_->now_ns();  // one clock read per batch
  if (stats_) stats_->queued.fetch_sub(1, std::memory_order_relaxed);
  shard_.execute_batch(b->ops, cfg_.id, now);
  // Whoever brings pending to zero hands the batch back; nothing touches it afterwards.
  if (b->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) b->sink->batch_done();
}

}  // namespace fg
