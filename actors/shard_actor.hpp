// The CAF actor that owns one Shard: batches in, results written in place, sender told
// when its whole batch is done. No locks: the actor is the only one touching its keys.
#pragma once
#include <caf/all.hpp>
#include <deque>
#include <functional>
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

namespace fg {

using batch_atom = caf::atom_constant<caf::atom("batch")>;
using sweep_atom = caf::atom_constant<caf::atom("sweep")>;
using extract_atom = caf::atom_constant<caf::atom("extract")>;
using install_atom = caf::atom_constant<caf::atom("install")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using replica_atom = caf::atom_constant<caf::atom("replica")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;

using shard_actor = caf::typed_actor<
    caf::reacts_to<batch_atom, BatchPtr>,  //
    caf::reacts_to<step_atom, BatchPtr>, caf::reacts_to<resume_atom>, caf::reacts_to<sweep_atom>,
    caf::reacts_to<extract_atom, ExtractJobPtr>, caf::reacts_to<collect_atom, CollectJobPtr>,
    caf::reacts_to<install_atom, InstallJobPtr>, caf::reacts_to<replica_atom, ReplicaJobPtr>>;

struct ShardConfig {
  uint16_t id = 0;
  size_t max_keys = 0;  // this shard's share of the node's key cap
  int64_t sweep_interval_ms = 100;
  size_t sweep_budget = 4096;  // slots visited per sweep tick
  uint64_t lease_seed = 0;
  bool cluster = false;  // serve only slots handed to this shard (Shard::enable_ownership)
  const std::vector<shard_actor>* siblings = nullptr;  // the node's shards by id (for steps)
};

class ShardActorImpl : public shard_actor::base {
 public:
  ShardActorImpl(caf::actor_config& cfg, ShardConfig sc, const Clock* clock, ShardStats* stats);
  behavior_type make_behavior() override;

 private:
  void on_batch(const BatchPtr& b);
  // A multi-shard step (shard_op.hpp's Step) reached this shard: park and pass it up, or,
  // as its highest shard, run it and wake the others.
  void on_step(const BatchPtr& b);
  void on_extract(const ExtractJobPtr& j);
  // While parked for a step, every message waits here, in order, for the step to end.
  template <class F>
  bool deferred(F&& f) {
    if (!parked_) return false;
    waiting_.emplace_back(std::forward<F>(f));
    return true;
  }
  void wake();  // the step ended: run what waited, in order

  ShardConfig cfg_;
  const Clock* clock_;
  ShardStats* stats_;
  Shard shard_;
  bool parked_ = false;
  std::deque<std::function<void()>> waiting_;
};

}  // namespace fg
