// Which ops wait for their replicas, and the wait.
#include "replica_acks.hpp"

#include "cluster.hpp"

namespace fg {

namespace {
bool wants_ack(const ShardOp& op) {
  if (op.status != OpStatus::kOk) return false;
  switch (op.code) {
    case OpCode::kAcquire:
      return op.acquire.granted;
    case OpCode::kRelease:
      return op.value == 1;
    case OpCode::kReleaseHolder:
      return op.value > 0;
    case OpCode::kData:  // (a data command that writes, on a key that is sync)
      return op.spec.sync && data_cmd_info(op.data).writes;
    case OpCode::kTake:
    case OpCode::kReserve:
    case OpCode::kAdjust:
    case OpCode::kReset:
    case OpCode::kRenew:
      return op.spec.sync;
    default:
      return false;
  }
}
}  // namespace

bool needs_replica_ack(const Batch& b) {
  for (const ShardOp& op : b.ops)
    if (wants_ack(op)) return true;
  return false;
}

uint64_t replication_mark(const Cluster& cluster) { return cluster.replication_mark(); }

void await_replicas(Cluster& cluster, const BatchPtr& b, std::function<void()> then) {
  cluster.after_replicated(b->replication_mark, [b, then = std::move(then)](bool ok) {
    if (!ok) {
      for (ShardOp& op : b->ops)
        if (wants_ack(op)) op.status = OpStatus::kNotReplicated;
    }
    then();
  });
}

}  // namespace fg
