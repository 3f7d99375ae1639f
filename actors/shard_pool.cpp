// Routing batches to shard actors: one message per touched shard, never one per command.
#include "shard_pool.hpp"

#include <random>

#include "key_slot.hpp"

namespace fg {

ShardPool::ShardPool(caf::actor_system& sys, ShardPoolConfig cfg, const Clock* clock)
    : cfg_(cfg), clock_(clock), stats_(new ShardStats[cfg.shards]) {
  std::random_device rd;
  const uint64_t seed = (uint64_t{rd()} << 32) ^ rd();
  for (size_t i = 0; i < cfg_.shards; ++i) {
    ShardConfig sc;
    sc.id = static_cast<uint16_t>(i);
    sc.max_keys = (cfg_.max_keys + cfg_.shards - 1) / cfg_.shards;
    sc.sweep_interval_ms = cfg_.sweep_interval_ms;
    sc.sweep_budget = cfg_.sweep_budget;
    sc.lease_seed = seed + (uint64_t{i} << 56);
    sc.cluster = cfg_.cluster;
    sc.siblings = &shards_;
    shards_.push_back(sys.spawn<ShardActorImpl>(sc, clock, &stats_[i]));
  }
}

ShardPool::~ShardPool() {
  for (auto& s : shards_) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

uint16_t ShardPool::shard_of(std::string_view key) const {
  // Slots map to shards so a slot's keys stay together when slots move between nodes.
  if (shards_.size() == 1) return 0;  // spare the CRC on the I/O thread
  return static_cast<uint16_t>(key_slot(key) % shards_.size());
}

void ShardPool::submit(const BatchPtr& b, int extra) {
  uint64_t mask = 0;
  for (const ShardOp& op : b->ops) {
    if (op.shard == kAllShards) {
      mask = shards_.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << shards_.size()) - 1;
      break;
    }
    mask |= uint64_t{1} << op.shard;
  }
  // A step over shards that have work in the batch, if it spans two or more of them.
  uint64_t step = b->step_shards & mask;
  if (__builtin_popcountll(step) < 2) step = 0;
  mask &= ~step;
  const int n = __builtin_popcountll(mask) + (step ? 1 : 0);
  if (n + extra == 0) {
    b->sink->batch_done();
    return;
  }
  b->pending.store(n + extra, std::memory_order_release);
  if (step) {
    b->step = Step{};
    b->step.mask = step;
    caf::anon_send(shards_[__builtin_ctzll(step)], step_atom::value, b);
  }
  for (size_t i = 0; mask; ++i, mask >>= 1) {
    if (mask & 1) {
      stats_[i].queued.fetch_add(1, std::memory_order_relaxed);
      caf::anon_send(shards_[i], batch_atom::value, b);
    }
  }
}

namespace {
template <class Job, class Atom>
void send_all(std::vector<shard_actor>& shards, const std::shared_ptr<Job>& j, Atom atom) {
  j->pending.store(static_cast<int>(shards.size()), std::memory_order_release);
  for (auto& s : shards) caf::anon_send(s, atom, j);
}
}  // namespace

void ShardPool::extract(const ExtractJobPtr& j) {
  j->per_shard.assign(shards_.size(), {});
  send_all(shards_, j, extract_atom::value);
}

void ShardPool::collect(const CollectJobPtr& j) {
  j->changed.assign(shards_.size(), {});
  j->deleted.assign(shards_.size(), {});
  send_all(shards_, j, collect_atom::value);
}

void ShardPool::install(const InstallJobPtr& j, std::vector<EntrySnapshot> entries) {
  j->per_shard.assign(shards_.size(), {});
  for (auto& e : entries) j->per_shard[shard_of(e.key)].push_back(std::move(e));
  send_all(shards_, j, install_atom::value);
}

void ShardPool::keep_copy(const ReplicaJobPtr& j, std::vector<EntrySnapshot> entries,
                          std::vector<std::string> deleted) {
  j->per_shard.assign(shards_.size(), {});
  j->deleted.assign(shards_.size(), {});
  for (auto& e : entries) j->per_shard[shard_of(e.key)].push_back(std::move(e));
  for (auto& k : deleted) j->deleted[shard_of(k)].push_back(std::move(k));
  send_all(shards_, j, replica_atom::value);
}

int64_t ShardPool::leases() const {
  int64_t n = 0;
  for (size_t i = 0; i < shards_.size(); ++i) n += stats_[i].leases.load(std::memory_order_relaxed);
  return n;
}

int64_t ShardPool::queued(size_t shard) const {
  return stats_[shard].queued.load(std::memory_order_relaxed);
}

int64_t ShardPool::keys() const {
  int64_t n = 0;
  for (size_t i = 0; i < shards_.size(); ++i) n += stats_[i].keys.load(std::memory_order_relaxed);
  return n;
}

int64_t ShardPool::bytes() const {
  int64_t n = 0;
  for (size_t i = 0; i < shards_.size(); ++i) n += stats_[i].bytes.load(std::memory_order_relaxed);
  return n;
}

int64_t ShardPool::expired() const {
  int64_t n = 0;
  for (size_t i = 0; i < shards_.size(); ++i)
    n += stats_[i].expired.load(std::memory_order_relaxed);
  return n;
}

}  // namespace fg
