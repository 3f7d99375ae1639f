// The CAF actor that owns one Shard: batches in, results written in place, sender told
// when its whole batch is done. One runner at a time: the actor, or a sender running a batch
// in place while the shard is idle (ShardCell).
#pragma once
#include <atomic>
#include <caf/all.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "clock.hpp"
#include "shard.hpp"
#include "shard_jobs.hpp"
#include "shard_op.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::BatchPtr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::ExtractJobPtr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::CollectJobPtr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::InstallJobPtr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::ReplicaJobPtr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::MergeJobPtr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fg::CopyJobPtr)

namespace fg {

using batch_atom = caf::atom_constant<caf::atom("batch")>;
using sweep_atom = caf::atom_constant<caf::atom("sweep")>;
using sweep_more_atom = caf::atom_constant<caf::atom("sweepmore")>;
using extract_atom = caf::atom_constant<caf::atom("extract")>;
using install_atom = caf::atom_constant<caf::atom("install")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using replica_atom = caf::atom_constant<caf::atom("replica")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using merge_atom = caf::atom_constant<caf::atom("merge")>;
using copy_atom = caf::atom_constant<caf::atom("copy")>;

using shard_actor = caf::typed_actor<
    caf::reacts_to<batch_atom, BatchPtr>,  //
    caf::reacts_to<step_atom, BatchPtr>, caf::reacts_to<resume_atom>, caf::reacts_to<sweep_atom>,
    caf::reacts_to<sweep_more_atom>, caf::reacts_to<extract_atom, ExtractJobPtr>,
    caf::reacts_to<collect_atom, CollectJobPtr>, caf::reacts_to<install_atom, InstallJobPtr>,
    caf::reacts_to<replica_atom, ReplicaJobPtr>, caf::reacts_to<merge_atom, MergeJobPtr>,
    caf::reacts_to<copy_atom, CopyJobPtr, uint32_t, uint32_t>>;

// A shard's state and who runs it. Whoever runs the shard holds `gate`: its actor for every
// message it handles, or a thread that submits a batch and finds the shard idle (the gate
// free, not parked in a step), which then runs the batch in place instead of sending it
// (ShardPool::submit). Either way one thread at a time touches the keys, and a message
// costs nothing in the common case: the gate is a futex that nobody else holds.
struct ShardCell {
  ShardCell(size_t max_keys, uint64_t lease_seed) : shard(max_keys, lease_seed, &stats) {}
  ShardStats stats;
  std::mutex gate;
  // The actor is waiting for the gate: runners in place step aside (send instead) until it
  // has had its turn, so a stream of in-place batches cannot starve the actor's own work
  // (sweeps, replication rounds, hand-offs, the batches that found the shard busy).
  std::atomic<bool> actor_waiting{false};
  Shard shard;
  bool parked = false;  // in a multi-shard step: only the step's last shard runs it (gate)
  int64_t ran_in_place_ns = INT64_MIN / 2;  // (gate) when a batch last ran in place

  // The actor takes the gate: at once if free, else it says it waits and blocks.
  void actor_lock() {
    if (gate.try_lock()) return;
    actor_waiting.store(true, std::memory_order_relaxed);
    gate.lock();
    actor_waiting.store(false, std::memory_order_relaxed);
  }
  // A runner in place takes the gate only if nobody holds it and the actor is not waiting.
  bool try_in_place() { return !actor_waiting.load(std::memory_order_relaxed) && gate.try_lock(); }
};

struct ShardConfig {
  uint16_t id = 0;
  size_t max_keys = 0;  // this shard's share of the node's key cap
  int64_t sweep_interval_ms = 100;
  size_t sweep_budget = 4096;  // slots visited per sweep tick
  bool cluster = false;        // serve only slots handed to this shard (Shard::enable_ownership)
  const std::vector<shard_actor>* siblings = nullptr;  // the node's shards by id (for steps)
};

class ShardActorImpl : public shard_actor::base {
 public:
  ShardActorImpl(caf::actor_config& cfg, ShardConfig sc, const Clock* clock,
                 std::shared_ptr<ShardCell> cell);
  behavior_type make_behavior() override;

 private:
  void on_batch(const BatchPtr& b);
  // A multi-shard step (shard_op.hpp's Step) reached this shard: park and pass it up, or,
  // as its highest shard, run it and wake the others.
  void on_step(const BatchPtr& b);
  void on_extract(const ExtractJobPtr& j);
  // One round of the sweeper (Shard::sweep_round), then the next: at once, or at the next tick.
  void sweep_round();
  // While parked for a step, every message waits here, in order, for the step to end.
  template <class F>
  bool deferred(F&& f) {
    if (!cell_->parked) return false;
    waiting_.emplace_back(std::forward<F>(f));
    return true;
  }
  void wake();  // the step ended: run what waited, in order

  ShardConfig cfg_;
  const Clock* clock_;
  std::shared_ptr<ShardCell> cell_;  // (shared: the actor may outlive its pool)
  Shard& shard_;
  std::deque<std::function<void()>> waiting_;
};

}  // namespace fg
