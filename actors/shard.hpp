// The keys of one shard and what requests do to them: pure logic, driven by a shard actor
// (or directly by tests) with an explicit `now`.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "entry_snapshot.hpp"
#include "holder_index.hpp"
#include "key_slot.hpp"
#include "key_table.hpp"
#include "shard_op.hpp"

namespace fg {

// Figures a shard publishes for readers on other threads (INFO, DBSIZE).
struct ShardStats {
  std::atomic<int64_t> keys{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> expired{0};
};

class Shard {
 public:
  Shard(size_t max_keys, uint64_t lease_seed, ShardStats* stats = nullptr);

  void execute(ShardOp& op, int64_t now_ns);  // op.hash must be KeyTable::hash(op.key)
  // Runs every op of `ops` that belongs to shard `id` (or to all shards): hashes their
  // keys, prefetches them, then executes in order.
  void execute_batch(std::vector<ShardOp>& ops, uint16_t id, int64_t now_ns);
  // Erases up to `budget` slots' worth of idle keys; returns how many went.
  size_t sweep(int64_t now_ns, size_t budget);
  void publish();

  // The live state of every key whose slot satisfies `want`; with `remove`, those keys
  // leave this shard (a hand-off), else they stay (a copy, for replicas).
  std::vector<EntrySnapshot> extract(const std::function<bool(uint32_t slot)>& want, int64_t now_ns,
                                     bool remove);
  // Installs snapshots, replacing any state the keys had here; malformed ones are
  // skipped. Not bound by the key cap: state that moves must not be lost on the way.
  void install(const std::vector<EntrySnapshot>& entries);

  // Cluster mode: the shard serves only the slots it has been given; ops on others are
  // answered kNotOwner, never run. Out of cluster mode every slot is served.
  void enable_ownership() { owned_ = std::make_unique<SlotBits>(); }
  void set_owned(const SlotBits& slots, bool owned);
  bool owns(uint32_t slot) const { return !owned_ || owned_->test(slot); }

  const KeyTable& table() const { return table_; }
  size_t key_count() const { return table_.size(); }

 private:
  Entry* get_or_create(ShardOp& op, Kind kind, int64_t now_ns);
  bool idle(Entry* e, int64_t now_ns);
  void take(ShardOp& op, int64_t now_ns);
  void leases(ShardOp& op, int64_t now_ns);
  void heartbeat(ShardOp& op, int64_t now_ns);
  void forget(std::string_view key, uint64_t hash);  // erase, keeping the holder index right
  uint64_t next_lease_id();

  KeyTable table_;
  HolderIndex holders_;
  size_t max_keys_;
  uint64_t lease_seed_;
  uint64_t lease_counter_ = 0;
  ShardStats* stats_;
  std::unique_ptr<SlotBits> owned_;  // null: every slot
};

}  // namespace fg
