// Synchronous replication: which answers must wait until a replica holds their change.
#pragma once
#include <functional>

#include "shard_op.hpp"

namespace fg {

class Cluster;

// Whether an op of `b` changed state that must be on a replica before it is answered: a
// policy with `replication: sync`, and every lease granted or released (a failover must
// never grant a permit twice).
bool needs_replica_ack(const Batch& b);
// Taken before `b` runs (Batch::replication_mark): what await_replicas waits from.
uint64_t replication_mark(const Cluster& cluster);
// Runs `then` (on the cluster thread) once the replicas hold the changes of `b`; ops whose
// change they did not acknowledge in time get status kNotReplicated.
void await_replicas(Cluster& cluster, const BatchPtr& b, std::function<void()> then);

}  // namespace fg
