// The node's shards: spawns S shard actors and routes each batch to the shards it touches.
#pragma once
#include <caf/all.hpp>
#include <memory>
#include <string_view>
#include <vector>

#include "clock.hpp"
#include "shard_actor.hpp"

namespace fg {

struct ShardPoolConfig {
  size_t shards = 4;
  size_t max_keys = 10'000'000;  // for the whole node
  int64_t sweep_interval_ms = 100;
  size_t sweep_budget = 4096;
  bool cluster = false;                 // shards start serving no slot; install() hands them slots
  uint64_t seed = 0;                    // of lease ids (0: one from the OS)
  size_t max_string_bytes = 512 << 20;  // Shard::set_max_string
  std::shared_ptr<Accounts> accounts;   // Shard::set_accounts: where keys are charged
};

class ShardPool {
 public:
  ShardPool(caf::actor_system& sys, ShardPoolConfig cfg, const Clock* clock);
  ~ShardPool();

  size_t size() const { return shards_.size(); }
  uint16_t shard_of(std::string_view key) const;
  uint16_t shard_of_slot(uint32_t slot) const {
    return static_cast<uint16_t>(slot % shards_.size());
  }

  // Runs each shard's part of `b`: in place, on this thread, where the shard is idle (its
  // gate free, not parked), else by sending its actor one message. b->sink hears when all
  // are done (perhaps before this returns), and when `extra` more completions (work
  // elsewhere, e.g. forwards to other nodes, each ending with Batch::finish_one) have come
  // in. Ops with shard == kAllShards go to every shard. A batch with nothing to wait for
  // completes at once. The ops on the shards of b->step_shards run as one multi-shard step
  // (shard_op.hpp's Step): in place if every one of them is idle, else through the actors.
  // With `in_place` false every part goes by message (tests of the actors' own paths).
  void submit(const BatchPtr& b, int extra = 0, bool in_place = true);

  // Work on whole slots across every shard (shard_jobs.hpp says what each does); the job's
  // `done` runs once, on a shard thread, when all shards are done.
  void extract(const ExtractJobPtr& j);
  void collect(const CollectJobPtr& j);
  // `entries` are spread over the shards their keys belong to.
  void install(const InstallJobPtr& j, std::vector<EntrySnapshot> entries);
  // Every shard copies what it holds, a step at a time (CopyJob).
  void copy(const CopyJobPtr& j);
  // `entries` are spread over the shards their keys belong to and merged (MergeJob).
  void merge(const MergeJobPtr& j, std::vector<EntrySnapshot> entries);
  // `packed`: each shard's records, already split (or empty).
  void keep_copy(const ReplicaJobPtr& j, std::vector<EntrySnapshot> entries,
                 std::vector<std::string> packed);

  // Scripts (EVAL): every shard hands them to `host`. Before the pool serves anything.
  // The longest string a command may build (proto-max-bulk-len): any thread, in force for
  // the next command on each shard.
  void set_max_string(size_t bytes) {
    for (auto& c : cells_) c->shard.set_max_string(bytes);
  }
  // Where clients blocked on keys wait (Shard::set_waiters); set before any request.
  void set_waiters(KeyWaiters* w) {
    for (auto& c : cells_) c->shard.set_waiters(w);
  }
  void attach_scripts(ScriptHost* host) {
    for (size_t i = 0; i < cells_.size(); ++i)
      cells_[i]->shard.attach_scripts(host, static_cast<uint16_t>(i));
  }

  int64_t keys() const;
  int64_t leases() const;
  int64_t queued(size_t shard) const;  // batches waiting in the shard's mailbox
  int64_t bytes() const;
  int64_t expired() const;
  const ShardPoolConfig& config() const { return cfg_; }
  ShardCell& cell(size_t shard) { return *cells_[shard]; }  // (tests hold a gate with it)
  const shard_actor& actor(size_t shard) const { return shards_[shard]; }  // (the simulator)
  const Clock* clock() const { return clock_; }

 private:
  bool run_in_place(size_t shard, const BatchPtr& b);
  bool step_in_place(uint64_t mask, const BatchPtr& b);

  ShardPoolConfig cfg_;
  const Clock* clock_;
  std::vector<std::shared_ptr<ShardCell>> cells_;
  std::vector<shard_actor> shards_;
};

}  // namespace fg
