// The CAF actor that owns one Shard: batches in, results written in place, sender told
// when its whole batch is done. No locks: the actor is the only one touching its keys.
#pragma once
#include <caf/all.hpp>

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

using shard_actor =
    caf::typed_actor<caf::reacts_to<batch_atom, BatchPtr>,  //
                     caf::reacts_to<sweep_atom>, caf::reacts_to<extract_atom, ExtractJobPtr>,
                     caf::reacts_to<collect_atom, CollectJobPtr>,
                     caf::reacts_to<install_atom, InstallJobPtr>,
                     caf::reacts_to<replica_atom, ReplicaJobPtr>>;

struct ShardConfig {
  uint16_t id = 0;
  size_t max_keys = 0;  // this shard's share of the node's key cap
  int64_t sweep_interval_ms = 100;
  size_t sweep_budget = 4096;  // slots visited per sweep tick
  uint64_t lease_seed = 0;
  bool cluster = false;  // serve only slots handed to this shard (Shard::enable_ownership)
};

class ShardActorImpl : public shard_actor::base {
 public:
  ShardActorImpl(caf::actor_config& cfg, ShardConfig sc, const Clock* clock, ShardStats* stats);
  behavior_type make_behavior() override;

 private:
  void on_batch(const BatchPtr& b);

  ShardConfig cfg_;
  const Clock* clock_;
  ShardStats* stats_;
  Shard shard_;
};

}  // namespace fg
