// Shard actor behaviour: run this shard's part of a batch, sweep idle keys on a timer, and
// take part in multi-shard steps.
#include "shard_actor.hpp"

namespace fg {

ShardActorImpl::ShardActorImpl(caf::actor_config& cfg, ShardConfig sc, const Clock* clock,
                               std::shared_ptr<ShardCell> cell)
    : shard_actor::base(cfg),
      cfg_(sc),
      clock_(clock),
      cell_(std::move(cell)),
      shard_(cell_->shard) {
  if (sc.cluster) shard_.enable_ownership();
}

namespace {
// Every handler runs the shard, so it holds the gate (a batch run in place may hold it for
// a moment: the actor waits for it to finish, and no new one starts meanwhile).
struct Hold {
  explicit Hold(ShardCell& c) : cell(c) { cell.actor_lock(); }
  ~Hold() { cell.gate.unlock(); }
  ShardCell& cell;
};
}  // namespace

shard_actor::behavior_type ShardActorImpl::make_behavior() {
  delayed_send(this, std::chrono::milliseconds(cfg_.sweep_interval_ms), sweep_atom::value);
  return {
      [this](batch_atom, const BatchPtr& b) {
        Hold hold(*cell_);
        if (!deferred([this, b] { on_batch(b); })) on_batch(b);
      },
      [this](step_atom, const BatchPtr& b) {
        Hold hold(*cell_);
        if (!deferred([this, b] { on_step(b); })) on_step(b);
      },
      [this](resume_atom) {
        Hold hold(*cell_);
        wake();
      },
      [this](sweep_atom) {
        Hold hold(*cell_);
        if (cell_->parked) return sweep_round();  // (parked: skipped)
        // Batches running in place pay the rounds while they come (ShardPool::run_in_place),
        // as long as they keep up: what the last tick left unpaid is paid here, at once.
        const bool behind = shard_.sweep_owed();
        shard_.sweep_tick(cfg_.sweep_budget);
        const int64_t now_ns = clock_->now_ns();
        if (!behind && now_ns - cell_->ran_in_place_ns < cfg_.sweep_interval_ms * 1'000'000) {
          delayed_send(this, std::chrono::milliseconds(cfg_.sweep_interval_ms), sweep_atom::value);
          return;
        }
        sweep_round();
      },
      [this](sweep_more_atom) {
        Hold hold(*cell_);
        sweep_round();
      },
      [this](extract_atom, const ExtractJobPtr& j) {
        Hold hold(*cell_);
        if (deferred([this, j] { on_extract(j); })) return;
        on_extract(j);
      },
      [this](collect_atom, const CollectJobPtr& j) {
        Hold hold(*cell_);
        auto run = [this, j] {
          shard_.collect_dirty(j->parts[cfg_.id], clock_->now_ns());
          j->finish_one();
        };
        if (!deferred(run)) run();
      },
      [this](install_atom, const InstallJobPtr& j) {
        Hold hold(*cell_);
        auto run = [this, j] {
          shard_.clear_unowned(j->clear);
          shard_.install(j->per_shard[cfg_.id]);
          shard_.set_owned(j->slots, true);
          j->finish_one();
        };
        if (!deferred(run)) run();
      },
      [this](copy_atom, const CopyJobPtr& j, uint32_t part, uint32_t parts) {
        Hold hold(*cell_);
        auto run = [this, j, part, parts]() mutable {
          if (parts == 0) {  // the first step: about 8k keys a step, in 1 to 256 steps
            parts = 1;
            while (parts < 256 && shard_.key_count() / parts > 8192) parts *= 2;
            // Room for all of it now: a vector doubling under a million snapshots is a step
            // as long as the whole copy.
            const size_t n = shard_.key_count();
            j->per_shard[cfg_.id].reserve(n + n / 8 + 64);
          }
          shard_.copy_part(part, parts, j->now_ns, j->per_shard[cfg_.id]);
          if (part + 1 < parts) {
            send(this, copy_atom::value, j, part + 1, parts);  // (behind what waits)
          } else {
            j->finish_one();
          }
        };
        if (!deferred(run)) run();
      },
      [this](merge_atom, const MergeJobPtr& j) {
        Hold hold(*cell_);
        auto run = [this, j] {
          const size_t n =
              shard_.merge(j->per_shard[cfg_.id], clock_->now_ns(), j->refused[cfg_.id], j->fresh,
                           j->fresh_only, j->into_copies ? &*j->into_copies : nullptr);
          j->merged.fetch_add(n, std::memory_order_relaxed);
          j->finish_one();
        };
        if (!deferred(run)) run();
      },
      [this](replica_atom, const ReplicaJobPtr& j) {
        Hold hold(*cell_);
        auto run = [this, j] {
          if (j->clear) shard_.clear_unowned(*j->clear);
          shard_.apply_replica(j->per_shard[cfg_.id], j->packed[cfg_.id]);
          j->finish_one();
        };
        if (!deferred(run)) run();
      },
  };
}

void ShardActorImpl::sweep_round() {
  // A round at a time, each its own message: what queued meanwhile (batches that found the
  // gate held) runs between two rounds, so a tick's sweeping delays nobody by more than one.
  if (!cell_->parked && shard_.sweep_round(clock_->now_ns(), cfg_.sweep_budget)) {
    send(this, sweep_more_atom::value);
    return;
  }
  delayed_send(this, std::chrono::milliseconds(cfg_.sweep_interval_ms), sweep_atom::value);
}

void ShardActorImpl::on_extract(const ExtractJobPtr& j) {
  const SlotBits& slots = j->slots;
  j->per_shard[cfg_.id] =
      shard_.extract([&](uint32_t s) { return slots.test(s); }, j->now_ns, j->remove, j->keep);
  if (j->remove) shard_.set_owned(slots, false);
  j->finish_one();
}

void ShardActorImpl::on_batch(const BatchPtr& b) {
  const int64_t now = clock_->now_ns();  // one clock read per batch
  cell_->stats.queued.fetch_sub(1, std::memory_order_relaxed);
  shard_.execute_batch(b->ops, cfg_.id, now);
  // Whoever brings pending to zero hands the batch back; nothing touches it afterwards.
  if (b->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) b->sink->batch_done();
}

void ShardActorImpl::on_step(const BatchPtr& b) {
  Step& step = b->step;
  step.shards[cfg_.id] = &shard_;
  const uint64_t above = step.mask & ~((uint64_t{2} << cfg_.id) - 1);
  if (above) {  // (the message carries what this shard wrote to the next one)
    cell_->parked = true;
    send((*cfg_.siblings)[__builtin_ctzll(above)], step_atom::value, b);
    return;
  }
  Shard::execute_step(b->ops, step, clock_->now_ns());
  for (uint64_t m = step.mask & ~(uint64_t{1} << cfg_.id); m; m &= m - 1) {
    send((*cfg_.siblings)[__builtin_ctzll(m)], resume_atom::value);
  }
  if (b->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) b->sink->batch_done();
}

void ShardActorImpl::wake() {
  cell_->parked = false;
  while (!cell_->parked && !waiting_.empty()) {  // (a step among them parks it again)
    auto f = std::move(waiting_.front());
    waiting_.pop_front();
    f();
  }
}

}  // namespace fg
