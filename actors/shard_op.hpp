// One keyed request for a shard, and the batch that carries all requests of one read.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "data_cmd.hpp"
#include "data_reply.hpp"
#include "decision.hpp"
#include "entry_snapshot.hpp"
#include "key_slot.hpp"
#include "lease_set.hpp"
#include "limit_spec.hpp"

namespace fg {

// An op's integer result. An op sent to every shard (a holder's heartbeat or release) has
// each shard add its count to it from its own thread, so it is atomic (relaxed: the
// batch's completion orders what the caller reads), and copyable like the rest of the op.
class OpValue {
 public:
  OpValue(int64_t v = 0) : v_(v) {}  // NOLINT: read and written as the integer it is
  OpValue(const OpValue& o) : v_(o.get()) {}
  OpValue& operator=(const OpValue& o) { return *this = o.get(); }
  OpValue& operator=(int64_t v) {
    v_.store(v, std::memory_order_relaxed);
    return *this;
  }
  operator int64_t() const { return get(); }  // NOLINT
  int64_t get() const { return v_.load(std::memory_order_relaxed); }
  void add(int64_t n) { v_.fetch_add(n, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_;
};

enum class OpCode : uint8_t {
  kTake,           // consume from the key's limiter
  kPeek,           // evaluate without consuming
  kReset,          // forget the key
  kAcquire,        // take a lease
  kRenew,          // extend one lease
  kRelease,        // give one lease back
  kCount,          // live leases of the key
  kHeartbeat,      // renew every lease of a holder (sent to every shard)
  kReleaseHolder,  // release every lease of a holder (sent to every shard)
  kReserve,        // take, but give it back after ttl_ns unless committed (lease_id: ticket)
  kCommit,         // keep what a reservation took (value 1), 0 if the ticket is gone
  kCancel,         // give back what a reservation took now (value 1), 0 if the ticket is gone
  kData,           // a Redis data command (`data`, `args`), answered in `reply`
  kAdjust,         // charge (cost > 0, into debt) or refund (cost < 0); decision: a peek after
};

enum class OpStatus : uint8_t {
  kOk,
  kWrongType,      // the key holds another kind of limiter
  kKeyLimit,       // the shard is at its key cap
  kNotOwner,       // cluster: this node does not hold the key's slot (it moved, or is arriving)
  kNotReplicated,  // cluster: done here, but no replica acknowledged it in time (sync)
  kNoMemory,       // the node's keyspace is at maxmemory (Redis's -OOM)
  kUserKeys,       // the asking user holds its share of the node's keys
  kUserMemory,     // the asking user holds its share of the node's memory
};
// Whether a status says there was no room for the op (a key cap, memory, a user's share).
inline bool no_room(OpStatus s) {
  return s == OpStatus::kKeyLimit || s == OpStatus::kNoMemory || s == OpStatus::kUserKeys ||
         s == OpStatus::kUserMemory;
}

constexpr uint16_t kAllShards = 0xffff;
constexpr size_t kMaxShards = 64;

class ScriptCaller;

struct ShardOp {
  OpCode code = OpCode::kTake;
  uint16_t shard = 0;
  uint16_t slot = 0;     // the key's cluster slot; only read when the shard checks ownership
  uint64_t hash = 0;     // KeyTable::hash(key), filled in by the shard
  std::string_view key;  // points into the sender's buffer; valid while in flight
  LimitSpec spec;
  int64_t cost = 1;
  int64_t ttl_ns = 0;
  // kTake: how long the caller will wait; a denial due within it is reserved instead (debt
  // on a token bucket or GCRA) and answered allowed with Decision::wait_ns.
  int64_t wait_ns = 0;
  uint64_t lease_id = 0;
  std::string_view holder;
  DataCmd data = DataCmd::kNone;
  const std::vector<std::string_view>* args = nullptr;  // kData: the command's words
  DataReply* reply = nullptr;                           // kData: where the answer goes
  bool resp3 = false;       // kData: the client speaks RESP3 (a few replies are shaped by it)
  bool waited = false;      // kData: a blocked command's later attempt (XREADGROUP's errors)
  bool every_slot = false;  // kData: reads every key the shard serves (KEYS, SCAN)
  // A transaction's ops share one flag: a watched key's check (kWatchCheck) that finds the
  // key changed sets it, and the transaction's ops after it are not run.
  uint8_t* abort = nullptr;
  // kData, scripts: whose rights the script's calls run with; heartbeat and release of a
  // holder: whose keys' leases it may touch (null: unchecked). Kept alive by the sender
  // until the op is answered.
  const ScriptCaller* caller = nullptr;
  // Whose keys it makes (accounts.hpp: the asking user's account; 0: no one's).
  uint16_t account = 0;
  // kData: the bytes its connection's replies may still take in this batch (null: no cap).
  // Each reply is taken off it; once it is below zero, the connection's later ops are not
  // run (it is closed when the batch is back), except a transaction's, which stay whole.
  std::atomic<int64_t>* reply_room = nullptr;

  OpStatus status = OpStatus::kOk;
  Decision decision;
  AcquireResult acquire;
  OpValue value;  // renew/release/reset: 0 or 1; count; heartbeat: summed over shards
};

// Told when every shard has answered its part of a batch.
class BatchSink {
 public:
  virtual ~BatchSink() = default;
  virtual void batch_done() = 0;
};

class Shard;

// A multi-shard step: the batch's ops on the shards of `mask` run as one atomic step, in
// batch order, nothing else on those shards between them (a transaction or a multi-key
// command whose keys lie on several shards). The lowest shard of the mask gets the batch
// first, parks (runs nothing else) and passes it up to the next; the highest, with every
// other one parked, runs the whole step on all of them and wakes them. Shards are taken
// in ascending order, so two steps never wait for each other in a ring.
struct Step {
  uint64_t mask = 0;
  Shard* shards[kMaxShards] = {};  // filled in by each shard as it parks
};

struct Batch {
  std::vector<ShardOp> ops;
  std::atomic<int> pending{0};
  std::shared_ptr<BatchSink> sink;  // keeps the sender alive while the batch is in flight
  uint64_t step_shards = 0;         // shards whose ops must run as one step (Step)
  Step step;                        // (the pool fills it in when it sends the batch)
  // A cluster node's replication mark, taken before the batch ran (replies that wait for
  // their replicas wait for every round since: api/core/replica_acks).
  uint64_t replication_mark = 0;

  // One part of the batch is done; the last part tells the sink.
  void finish_one() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) sink->batch_done();
  }
};
using BatchPtr = std::shared_ptr<Batch>;

}  // namespace fg
